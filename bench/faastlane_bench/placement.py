"""The placement figure (the paper's Figure 9): FINRA with 50-200 rules against the vCPUs
of a container, Faastlane's placement against one container per function.

For each vCPU count ``v`` per container (a cpuset of ``v`` of this machine's CPUs), these
systems run the same FINRA inputs, interleaved round by round (A, B, C, ... rotating):

``Faastlane 1 container``   the composed action in one container of ``v`` vCPUs
                            (``--vcpus v --max-containers 1``): rules beyond ``v`` wait.
``Faastlane spill to M``    ``--vcpus v --max-containers M`` with ``FAASTLANE_SPILL=always``:
                            fork up to ``v`` rules here, send the rest in groups of
                            about ``v`` to M-1 copies through the OpenWhisk REST front.
``Faastlane auto (M)``      the same action, the default ``FAASTLANE_SPILL=auto``: the
                            Orchestrator times its rounds and uses only the containers
                            that pay by the hand-off costs in plan.json.
``OpenWhisk-style``         one action per function (``systems/openwhisk.py``), M containers
                            of ``v`` vCPUs per function: the controller's concurrent
                            activations of RunAuditRule spread over them.

Containers are action-server processes pinned to their cpusets (``sched_setaffinity``,
what ``docker run --cpuset-cpus`` does to a container's processes), on loopback; see
bench/results/placement/README.md for why not Docker containers for the sweep.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from faastlane.runtime.cpus import affinity_cpus
from faastlane.runtime.parallel.invokers import OpenWhiskInvoker

from . import machine, stats
from .catalogue import (
    EXAMPLES,
    FINRA_RULES,
    REPOSITORY,
    Workload,
    comparable,
    contains,
    finra_scalability,
)
from .harness import Progress, load_json
from .systems.action_pool import ActionProcess
from .systems.base import RunResult
from .systems.openwhisk_front import AUTH, Controller
from .worker import WorkerClient

FINRA = EXAMPLES / "finra"
ONE = "Faastlane 1 container"
OPENWHISK = "OpenWhisk-style"


@dataclass(frozen=True)
class Config:
    rules: tuple[int, ...] = FINRA_RULES
    vcpus: tuple[int, ...] = (1, 2)
    spill_to: tuple[int, ...] = (2, 4)  # containers in all, this one included
    rounds: int = 20
    warmup: int = 3
    docker_image: str | None = None  # set: Docker containers against the process stand-ins

    @classmethod
    def quick_run(cls) -> Config:
        return cls(rules=(50,), vcpus=(1,), spill_to=(2,), rounds=2, warmup=1)

    @classmethod
    def docker_check(cls, image: str, rounds: int = 10) -> Config:
        """One container and spilling to two, in Docker containers of the runtime image
        and as pinned processes, interleaved: do the stand-ins tell the same story?"""
        return cls(rules=(50, 200), vcpus=(1,), spill_to=(2,), rounds=rounds,
                   docker_image=image)


def cpu_sets(vcpus: int, containers: int) -> list[list[int]]:
    """Cpusets of ``vcpus`` CPUs each, handed out round robin over this machine's CPUs."""
    usable = sorted(os.sched_getaffinity(0))
    slots = max(1, len(usable) // vcpus)
    return [usable[(i % slots) * vcpus:(i % slots) * vcpus + vcpus] or usable
            for i in range(containers)]


def systems(vcpus: int, config: Config) -> dict[str, dict[str, Any]]:
    """Name -> worker spec (without inputs) for one vCPU count."""
    most = max(config.spill_to)

    def faastlane(containers: int, spill: str) -> dict[str, Any]:
        return {"system": "faastlane-containers", "app": str(FINRA), "spill": spill,
                "planning": {"isolation": "none", "vcpus": vcpus,
                             "max_containers": containers},
                "cpu_sets": cpu_sets(vcpus, containers)}

    found = {ONE: faastlane(1, "always")}
    for containers in config.spill_to:
        found[f"Faastlane spill to {containers}"] = faastlane(containers, "always")
    if config.docker_image:
        for name, spec in list(found.items()):
            found[f"{name} (Docker)"] = {**spec, "docker_image": config.docker_image}
        return found
    found[f"Faastlane auto ({most})"] = faastlane(most, "auto")
    found[OPENWHISK] = {"system": "openwhisk", "app": str(FINRA), "pool_size": most,
                        "cpu_sets": cpu_sets(vcpus, most)}
    return found


def _check(workers: dict[str, WorkerClient], workload: Workload) -> dict[str, dict[str, Any]]:
    """Every system's output against the one-container Faastlane's and the expected one."""
    outputs = {name: w.run(workload.name, output=True) for name, w in workers.items()}
    reference = comparable("finra", outputs[ONE].output)
    expected = load_json(workload.expected_file)
    return {name: {"status": r.status,
                   "matches_reference": comparable("finra", r.output) == reference,
                   "matches_expected": None if expected is None
                   else contains(r.output, expected)}
            for name, r in outputs.items()}


def _summary(samples: list[RunResult]) -> dict[str, Any]:
    ms = [(r.end - r.start) * 1000 for r in samples]
    half = len(ms) // 2
    return {"end_to_end_ms": stats.summary(ms),
            "halves_median_ms": [stats.median(ms[:half]), stats.median(ms[half:])],
            "failed_runs": sum(r.status != "SUCCEEDED" for r in samples),
            # For the Faastlane systems, "states" carries the groups sent elsewhere.
            "remote_groups_median": stats.median([r.states for r in samples])}


def profile_platform(vcpus: int, scratch: Path) -> dict[str, Any]:
    """The profiler's probe in one such container behind the same REST front: the fork
    costs measured inside it, the invocation costs measured through the front (what the
    planner reads from the profile cache; ``faastlane profile --target openwhisk``)."""
    from faastlane_profiler import handoff, targets

    container = ActionProcess(str(scratch), set(cpu_sets(vcpus, 1)[0]))
    controller = Controller([container])
    try:
        folder = scratch / f"probe-{vcpus}"
        folder.mkdir(exist_ok=True)
        container.init(targets.probe_zip(str(folder)))

        # The Orchestrator's own way of invoking an action: its invoker, over HTTP.
        invoker = OpenWhiskInvoker(controller.url, AUTH, f"/_/{targets.ACTION_NAME}")

        def call(params: dict[str, Any]) -> Any:
            return invoker.invoke(params, 120)

        profile: dict[str, Any] = call({"max_processes": vcpus + 1, "target_seconds": 0.05})
        profile["handoff"].update(handoff.measure_invoke(call))
    finally:
        controller.close()
        container.stop()
    return profile


def profile_cache(vcpus: int, scratch: Path) -> tuple[str, dict[str, Any]]:
    """A profile cache holding this platform's measured profile: the folder for
    FAASTLANE_CACHE, and the profile."""
    measured = profile_platform(vcpus, scratch)
    folder = scratch / f"cache-{vcpus}"
    folder.mkdir(exist_ok=True)
    key = f"openwhisk/bench-{vcpus}vcpu@default"
    (folder / "profiles.json").write_text(json.dumps({key: measured}), encoding="utf-8")
    return str(folder), measured


def run_vcpus(vcpus: int, config: Config, workloads: list[Workload], progress: Progress,
              log: TextIO, scratch: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every rule count on every system for one vCPU count (workers started once); and
    the platform's profile the Faastlane actions were planned with."""
    workers: dict[str, WorkerClient] = {}
    progress.say(f"{vcpus} vCPU: profiling a container (vCPUs, fork and invocation costs)")
    cache, profile = profile_cache(vcpus, scratch)
    progress.say(f"{vcpus} vCPU: hand-off costs {profile['handoff']}")
    env = dict(os.environ, FAASTLANE_CACHE=cache)
    inputs = {workload.name: workload.input_file for workload in workloads}
    try:
        for name, spec in systems(vcpus, config).items():
            progress.say(f"{vcpus} vCPU: starting {name}")
            workers[name] = WorkerClient({**spec, "inputs": inputs}, log, env=env)
        points = []
        for workload in workloads:
            key, rules = workload.name, workload.size
            for worker in workers.values():
                for _ in range(config.warmup):
                    worker.run(key, traced=False)
            checks = _check(workers, workload)
            samples: dict[str, list[RunResult]] = {name: [] for name in workers}
            names = list(workers)
            for index in range(config.rounds):
                shift = index % len(names)
                for name in names[shift:] + names[:shift]:
                    samples[name].append(workers[name].run(key, traced=False))
            progress.say(f"{vcpus} vCPU, {rules} rules: " + ", ".join(
                f"{n} {stats.median([(r.end - r.start) * 1000 for r in s]):.0f} ms"
                for n, s in samples.items()))
            points.append({"vcpus": vcpus, "rules": rules, "rounds": config.rounds,
                           "systems": {name: {**_summary(s), "checks": checks[name],
                                              "spec": {k: v for k, v in
                                                       systems(vcpus, config)[name].items()
                                                       if k != "app"}}
                                       for name, s in samples.items()}})
        return points, profile
    finally:
        for worker in workers.values():
            worker.close()


def _revision() -> dict[str, Any]:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPOSITORY, capture_output=True,
                              text=True).stdout.strip()

    return {"commit": git("rev-parse", "HEAD"),
            "dirty_files": len(git("status", "--porcelain", "--untracked-files=no")
                               .splitlines())}


def run(config: Config, progress_stream: TextIO = sys.stderr) -> dict[str, Any]:
    progress = Progress(progress_stream)
    began = datetime.now(UTC)
    document: dict[str, Any] = {"figure": "placement", "machine": machine.describe(),
                                "revision": _revision(),
                                "config": {**config.__dict__, "usable_cpus": affinity_cpus()},
                                "started": began.isoformat(timespec="seconds"),
                                "points": []}
    with tempfile.TemporaryDirectory(prefix="faastlane-bench-placement-") as scratch, \
            open(Path(scratch) / "workers.log", "w", encoding="utf-8") as log:
        workloads = finra_scalability(Path(scratch), config.rules)
        document["profiles"] = {}
        for vcpus in config.vcpus:
            points, profile = run_vcpus(vcpus, config, workloads, progress, log,
                                        Path(scratch))
            document["points"] += points
            document["profiles"][str(vcpus)] = profile
    document["duration_s"] = (datetime.now(UTC) - began).total_seconds()
    document["machine"]["load_average_at_end"] = list(os.getloadavg())
    progress.say(f"done in {document['duration_s']:.0f} s")
    return document


# --------------------------------------------------------------------- report


def _median(point: dict[str, Any], name: str) -> float:
    median: float = point["systems"][name]["end_to_end_ms"]["median"]
    return median


def markdown(document: dict[str, Any]) -> str:
    """The figure's numbers as tables: medians, p99, ratios against the baselines."""
    host = document["machine"]

    def load(key: str) -> str:
        return ", ".join(f"{x:.1f}" for x in host.get(key, []))

    lines = ["# Placement across containers (Figure 9): FINRA rules x vCPUs per container",
             "", f"Machine: {host['cpu_model']}, {host['usable_cpus']} usable CPUs; load "
             f"average {load('load_average_at_start')} at the start, "
             f"{load('load_average_at_end')} at the end. Rounds per point: "
             f"{document['config']['rounds']}, interleaved. Run took "
             f"{document.get('duration_s', 0):.0f} s.", ""]
    for vcpus in sorted({p["vcpus"] for p in document["points"]}):
        points = [p for p in document["points"] if p["vcpus"] == vcpus]
        names = list(points[0]["systems"])
        lines += [f"## {vcpus} vCPU per container", "",
                  "Median end-to-end ms (p99); x = OpenWhisk-style / system "
                  "(speed-up over one container per function); vs 1c = one-container "
                  "Faastlane / system; groups = remote groups per execution (median)", "",
                  "| rules | " + " | ".join(names) + " |",
                  "|---|" + "---|" * len(names)]
        for point in points:
            cells = []
            for name in names:
                entry = point["systems"][name]
                median = entry["end_to_end_ms"]["median"]
                cell = f"{median:.0f} ({entry['end_to_end_ms']['p99']:.0f})"
                if name != OPENWHISK:
                    if OPENWHISK in point["systems"]:
                        cell += f"; x{stats.ratio(_median(point, OPENWHISK), median):.2f}"
                    one = f"{ONE} (Docker)" if name.endswith("(Docker)") else ONE
                    cell += (f"; vs 1c {stats.ratio(_median(point, one), median):.2f}"
                             f"; groups {entry['remote_groups_median']:g}")
                checks = entry["checks"]
                if not checks["matches_reference"] or checks["matches_expected"] is False:
                    cell += " **output differs**"
                cells.append(cell)
            lines.append(f"| {point['rules']} | " + " | ".join(cells) + " |")
        lines.append("")
    for vcpus, profile in sorted(document.get("profiles", {}).items()):
        handoff = profile.get("handoff", {})
        lines += [f"Measured hand-off costs in a {vcpus}-vCPU container (what the auto "
                  f"system's plan used): " + ", ".join(f"{k} {v:g}" for k, v in
                                                      sorted(handoff.items())) +
                  f"; profiler's vCPUs {profile.get('vcpus')}.", ""]
    lines += ["## Noise", "", "Relative difference between the medians of the first and "
              "second half of each point's rounds (same system, same input):", ""]
    spreads = [abs(a - b) / min(a, b) * 100
               for p in document["points"] for s in p["systems"].values()
               for a, b in [s["halves_median_ms"]] if a and b and not math.isnan(a + b)]
    if spreads:
        lines.append(f"median {stats.median(spreads):.1f}%, worst {max(spreads):.1f}% "
                     f"over {len(spreads)} system-points.")
    return "\n".join(lines) + "\n"


def plot(document: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    vcpus = sorted({p["vcpus"] for p in document["points"]})
    figure, axes = plt.subplots(1, len(vcpus), figsize=(6 * len(vcpus), 4.2), squeeze=False)
    for ax, v in zip(axes[0], vcpus, strict=True):
        points = [p for p in document["points"] if p["vcpus"] == v]
        for name in points[0]["systems"]:
            ax.plot([p["rules"] for p in points], [_median(p, name) for p in points],
                    marker="o", label=name)
        ax.set_title(f"{v} vCPU per container")
        ax.set_xlabel("FINRA audit rules (Map iterations)")
        ax.set_ylabel("median end-to-end (ms)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def write(document: dict[str, Any], output: Path, plots: bool = True) -> list[Path]:
    output.mkdir(parents=True, exist_ok=True)
    written = [output / "placement.json", output / "placement.md"]
    written[0].write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    written[1].write_text(markdown(document), encoding="utf-8")
    if plots:
        try:
            written.append(plot(document, output / "placement.png"))
        except ImportError:
            sys.stderr.write("faastlane: matplotlib is not installed: no plot\n")
    return written
