"""The profiler: knee detection on synthetic timings, cgroup and cpuinfo parsing, the
cache, MPK detection on this host, and ``faastlane profile`` here, in a one-CPU Docker
container and as an OpenWhisk action."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from deploy.deploy_apps import FINRA
from deploy.openwhisk_endpoint import OpenWhiskEndpoint
from faastlane.compose import profile_cache as cache
from faastlane.runtime import cpus
from faastlane_profiler import mpk, scaling
from integration.apps import faastlane

from .spill_cli import AUTH


@pytest.mark.parametrize("throughput, expected", [
    ({1: 1.0, 2: 1.97, 3: 2.0, 4: 1.98}, 2),        # two CPUs
    ({1: 1.0, 2: 1.02, 3: 0.99}, 1),                # one CPU (docker --cpus 1)
    ({1: 1.0, 2: 1.5, 3: 1.52}, 2),                 # a 1.5-CPU quota: half a CPU counts
    ({1: 1.0, 2: 2.0, 3: 2.9, 4: 3.9, 5: 3.95}, 4),  # four
    ({1: 1.0, 2: 1.1, 3: 2.9}, 1),                  # scaling stopped: later noise ignored
    ({1: 1.0}, 1),
])
def test_knee_is_where_an_extra_process_stops_adding_throughput(
        throughput: dict[int, float], expected: int) -> None:
    assert scaling.knee(throughput) == expected


def test_throughput_is_relative_to_one_process() -> None:
    measured = scaling.Scaling(loops=1, seconds={1: 1.0, 2: 1.0, 3: 1.5})
    assert measured.throughput() == {1: 1.0, 2: 2.0, 3: 2.0}


def test_cgroup_v2_and_v1_quotas_parse() -> None:
    assert cpus.parse_cpu_max("max 100000\n") is None
    assert cpus.parse_cpu_max("150000 100000\n") == 1.5
    assert cpus.parse_cfs("-1", "100000") is None
    assert cpus.parse_cfs("50000\n", "100000\n") == 0.5
    assert cpus.parse_proc_cgroup("0::/docker/abc\n4:cpu,cpuacct:/docker/abc\n") == {
        "": "/docker/abc", "cpu": "/docker/abc", "cpuacct": "/docker/abc"}


def test_cgroup_quota_reads_the_files_of_this_process_cgroup(tmp_path: Path) -> None:
    (tmp_path / "docker" / "abc").mkdir(parents=True)
    (tmp_path / "docker" / "abc" / "cpu.max").write_text("200000 100000\n")
    assert cpus.cgroup_quota(str(tmp_path), "0::/docker/abc\n") == 2.0
    # In a cgroup namespace the path is "/" and the files are at the mount point.
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cpus.cgroup_quota(str(tmp_path), "0::/\n") is None
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("100000\n")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cpus.cgroup_quota(str(v1), "1:cpu:/\n") == 1.0
    assert cpus.cgroup_quota(str(tmp_path / "none"), "") is None


def test_cpu_flags_come_from_the_flags_line() -> None:
    text = "processor\t: 0\nflags\t\t: fpu sse2 pku ospke avx\nbugs\t: x\n"
    assert {"pku", "ospke"} <= mpk.cpu_flags(text)
    assert mpk.cpu_flags("processor : 0\n") == set()


def test_mpk_detection_here_agrees_with_the_cpu_flags() -> None:
    found = mpk.detect()
    flags = mpk.cpu_flags(Path("/proc/cpuinfo").read_text())
    assert found.cpu_pku == ("pku" in flags) and found.os_pke == ("ospke" in flags)
    if "ospke" not in flags:  # no keys from the kernel: pkey_alloc must say so
        assert not found.pkey_alloc.ok and found.pkey_alloc.errno is not None
        assert not found.usable
    assert found.interpreter in ("keys", "no-keys", "missing")


def test_cache_keeps_a_profile_until_it_is_stale(tmp_path: Path) -> None:
    path = str(tmp_path / "profiles.json")
    runs: list[int] = []

    def measure() -> dict[str, Any]:
        runs.append(1)
        return {"vcpus": len(runs)}

    clock = [1000.0]
    first, hit = cache.cached("local@default", measure, max_age=60, path=path,
                              now=lambda: clock[0], quiet=lambda: None)
    assert (first["vcpus"], hit) == (1, False)
    clock[0] += 30
    again, hit = cache.cached("local@default", measure, max_age=60, path=path,
                              now=lambda: clock[0], quiet=lambda: None)
    assert (again["vcpus"], hit) == (1, True)
    clock[0] += 31  # a day in the real setting: re-measured
    stale, hit = cache.cached("local@default", measure, max_age=60, path=path,
                              now=lambda: clock[0], quiet=lambda: None)
    assert (stale["vcpus"], hit) == (2, False)
    other, hit = cache.cached("lambda/x@1769", measure, max_age=60, path=path,
                              now=lambda: clock[0], quiet=lambda: None)
    assert (other["vcpus"], hit) == (3, False)
    assert set(json.loads(Path(path).read_text())) == {"local@default", "lambda/x@1769"}


def test_a_profile_measured_on_a_busy_machine_is_said_and_not_cached(tmp_path: Path
                                                                     ) -> None:
    path = str(tmp_path / "profiles.json")
    profile, hit = cache.cached("local@default", lambda: {"vcpus": 1}, path=path,
                                quiet=lambda: "other work took 90% of the CPUs' time")
    assert (profile["vcpus"], profile["busy"], hit) == (
        1, "other work took 90% of the CPUs' time", False)
    assert not Path(path).exists()  # never kept as the truth for a day


def test_a_busy_machine_is_seen_by_its_cpu_time(tmp_path: Path) -> None:
    # Two spinning processes on this machine's CPUs (at most two are looked at).
    spin = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(min(2, len(os.sched_getaffinity(0))))]
    try:
        time.sleep(0.2)
        said = cache.busy(0.5)
    finally:
        for process in spin:
            process.kill()
            process.wait()
    assert said is not None and "of the CPUs' time" in said, said


def profile_cli(tmp_path: Path, *args: str) -> dict[str, Any]:
    env = dict(os.environ, FAASTLANE_CACHE=str(tmp_path / "cache"))
    done = faastlane("profile", "--json", "--max-processes", "3", *args, env=env)
    assert done.code == 0, done.stderr
    return json.loads(done.stdout)


def test_profile_here_prints_mpk_support_and_vcpus(tmp_path: Path) -> None:
    profile = profile_cli(tmp_path)
    assert profile["cached"] is False and profile["target"] == "local@default"
    assert profile["mpk"]["usable"] is mpk.detect().usable
    assert set(profile["scaling"]["throughput"]) == {"1", "2", "3"}
    assert 1 <= profile["vcpus"] <= 3
    assert profile["cpus"]["affinity"] == len(os.sched_getaffinity(0))
    # Kept unless it was measured on a busy machine (then said so, and measured again).
    assert profile_cli(tmp_path)["cached"] is ("busy" not in profile), profile.get("busy")
    text = faastlane("profile", env=dict(os.environ, FAASTLANE_CACHE=str(tmp_path / "cache")))
    assert "MPK: " in text.stdout and "inferred vCPUs: " in text.stdout


def test_profile_of_a_container_limited_to_one_cpu(tmp_path: Path, runtime_image: str
                                                    ) -> None:
    profile = profile_cli(tmp_path, "--target", "docker", "--image", runtime_image,
                          "--cpus", "1")
    assert profile["cpus"]["cgroup_quota"] == 1.0
    assert profile["cpus"]["available"] == 1
    assert profile["vcpus"] == 1  # two processes share one CPU's time
    assert 1 <= profile["measured_knee"] <= len(profile["scaling"]["seconds"])
    assert profile["host"]["python"].startswith("3.13")  # the cpython-mpk runtime
    assert profile["mpk"]["interpreter"] != "missing"


def test_profile_as_an_openwhisk_action(tmp_path: Path, controller: OpenWhiskEndpoint
                                        ) -> None:
    profile = profile_cli(tmp_path, "--target", "openwhisk", "--apihost", controller.url,
                          "--auth", AUTH)
    put, post, *timed = controller.calls
    assert (put.method, put.path) == ("PUT", "/api/v1/namespaces/_/actions/faastlane-profiler")
    assert post.body == {"max_processes": 3, "target_seconds": 0.1}
    assert profile["target"].startswith("openwhisk/")
    assert 1 <= profile["vcpus"] <= 3
    # Then the invocation hand-off: echo round trips of the probe, small and 256 KB.
    assert timed and all(c.body["echo"] is True for c in timed)
    assert {len(c.body["pad"]) for c in timed} == {0, 256_000}
    assert set(profile["handoff"]) == {"fork_ms", "pipe_ms_per_mb", "invoke_ms",
                                       "transfer_ms_per_mb"}
    assert profile["handoff"]["invoke_ms"] > 0 and profile["handoff"]["fork_ms"] > 0
    # The planner takes the invocation figures from this profile from now on.
    out = tmp_path / "finra"
    env = dict(os.environ, FAASTLANE_CACHE=str(tmp_path / "cache"))
    done = faastlane("compose", str(FINRA), "-o", str(out), "--vcpus", "1",
                     "--max-containers", "2", env=env)
    assert done.code == 0, done.stderr
    handoff = json.loads((out / "plan.json").read_text())["states"]["RunAuditRules"]["handoff"]
    assert handoff["invoke_ms"] == profile["handoff"]["invoke_ms"]
    assert handoff["sources"]["invoke_ms"].startswith(f"measured: profile {profile['target']}")
