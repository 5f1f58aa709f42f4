"""``--isolation mpk`` with real protection keys: QEMU's software CPU (``-cpu max``).

One boot runs every case (``mpk_qemu_driver.py``); the apps are those of
``test_isolation_mpk.py``, which checks the same workflows natively without keys. Here
``FAASTLANE_MPK=on`` makes keys mandatory: a guest without them fails, never skips.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from . import https_server
from .apps import ROOT
from .examples import EXAMPLES
from .guard_apps import (
    SECRET,
    frames_app,
    helper_app,
    lazy_library_app,
    library_app,
    library_peek_app,
    library_site,
    loosen_app,
    planting_app,
    queue_tap_app,
)
from .mpk_apps import (
    BREAKOUT,
    CONCURRENT_CACHES_OUTPUT,
    CTYPES_PEEK,
    ESCAPE,
    FAIL_THEN_CLEAN,
    NUMPY_CTYPES,
    PEEK,
    PEEK_IN_WORKERS,
    THREAD_PEEK,
    TWO_HTTPS,
    WARM,
    concurrent_caches,
    write_mpk_app,
)

HARNESS = ROOT / "tests" / "mpk" / "qemu" / "run-in-qemu.sh"
DRIVER = Path(__file__).with_name("mpk_qemu_driver.py")
QEMU_TIMEOUT_S = 2700
LOCAL_AWS = EXAMPLES / "local-aws" / "local_aws.py"
# Under the emulated CPU moto_server takes tens of seconds to answer its first request.
LOCAL_AWS_START_TIMEOUT_S = "400"
# The AWS examples see only the guest's local endpoints, never a profile of the host's.
AWS_ISOLATED = {"AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                "AWS_EC2_METADATA_DISABLED": "true"}
HARNESS_SETUP_FAILED = 126
ITEMS = json.dumps({"items": [1, 2, 3, 4]})


def _compose(app: Path, out: Path, isolation: str) -> Path:
    """Compose on the host (the guest only runs actions: half the interpreter starts
    under the emulated CPU)."""
    done = subprocess.run([sys.executable, "-m", "faastlane", "compose", str(app), "-o",
                           str(out), "--isolation", isolation], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    return out


def _compose_measured(app: Path, out: Path, items: str) -> Path:
    """Compose for mpk with the placement a real run measured (on the host, without
    isolation): the Map's long jobs on warm worker processes."""
    trace = out.with_suffix(".trace")
    done = subprocess.run([sys.executable, "-m", "faastlane", "run", str(app), "--isolation",
                           "none", "--input", items, "--trace", str(trace)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([sys.executable, "-m", "faastlane", "compose", str(app), "-o",
                           str(out), "--isolation", "mpk", "--vcpus", "2",
                           "--profile-from", str(trace)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    placement = json.loads((out / "plan.json").read_text())["states"]["Jobs"]
    assert placement["placement"] == "processes" and "learned" not in placement, placement
    return out


def _run(action: Path, *args: str) -> list[str]:
    return [sys.executable, str(action), *args]


def _example(name: str, isolation: str, tmp: Path, input_file: Path | None = None,
             ) -> list[str]:
    action = _compose(EXAMPLES / name, tmp / f"{name}-{isolation}", isolation)
    return _run(action, "--input-file", str(input_file or EXAMPLES / name / "input.json"))


def _example_cases(tmp: Path) -> list[dict[str, Any]]:
    """The four examples in mpk and none mode; healthcare and sentiment against the
    examples' local AWS endpoints, started inside the guest (it has loopback only)."""
    scans = tmp / "ml-predict-inputs"
    subprocess.run([sys.executable, str(EXAMPLES / "ml-predict" / "generate_input.py"),
                    str(scans)], check=True, timeout=300)
    state = tmp / "local-aws"
    aws = [sys.executable, str(LOCAL_AWS)]
    cases: list[dict[str, Any]] = []
    for isolation in ("mpk", "none"):
        cases.append({"name": f"finra-{isolation}", "argv": _example("finra", isolation, tmp)})
        cases.append({"name": f"ml-predict-{isolation}",
                      "argv": _example("ml-predict", isolation, tmp, scans / "input.json")})
    cases.append({"name": "local-aws", "exports": True, "timeout": 900,
                  "argv": [*aws, "start", "--state-dir", str(state)],
                  "env": {"FAASTLANE_LOCAL_AWS_START_TIMEOUT": LOCAL_AWS_START_TIMEOUT_S}})
    for name in ("healthcare", "sentiment"):
        for isolation in ("mpk", "none"):
            cases.append({"name": f"{name}-{isolation}", "env": AWS_ISOLATED,
                          "argv": _example(name, isolation, tmp)})
    cases.append({"name": "local-aws-stop", "argv": [*aws, "stop", "--state-dir", str(state)]})
    return cases


def _https_cases(tmp: Path, action: Path) -> list[dict[str, Any]]:
    """An HTTPS server started in the guest (its certificate made on the host), then two
    functions calling it in turn: a TLS handshake inside each domain."""
    cert, key = https_server.self_signed_certificate(tmp)
    return [{"name": "https-server", "exports": True,
             "argv": [sys.executable, str(Path(https_server.__file__)), cert, key]},
            {"name": "https", "argv": _run(action)}]


def _guard_cases(tmp: Path) -> list[dict[str, Any]]:
    """Issue 17's Python-level attacks (guard_apps.py) under mpk. Their controls (the
    same apps under none, where each attack works) need no keys: they run natively in
    test_guard_workflows.py, and are not repeated under the emulated CPU."""
    cases = []
    for name, make in (("plant", planting_app), ("frames", frames_app),
                       ("helper", helper_app), ("loosen", loosen_app),
                       ("library", library_app), ("library-peek", library_peek_app),
                       ("lazy-library", lazy_library_app), ("queue-tap", queue_tap_app)):
        app = make(tmp / f"guard-{name}")
        action = _compose(app, tmp / f"guard-{name}-mpk", "mpk")
        case = {"name": f"guard-{name}-mpk", "argv": _run(action, "--input", "{}")}
        if library_site(app).exists():  # its library, installed on the Python path
            case["env"] = {"PYTHONPATH": str(library_site(app))}
        cases.append(case)
    return cases


@pytest.fixture(scope="module")
def guest(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every case's ``{"code", "stdout", "stderr"}``, from one QEMU boot."""
    tmp = tmp_path_factory.mktemp("mpk-qemu")
    def app(name: str, workflow: dict, isolation: str = "mpk") -> Path:
        return _compose(write_mpk_app(tmp / name, workflow), tmp / f"{name}-{isolation}",
                        isolation)

    cases = [
        {"name": "peek", "argv": _run(app("peek", PEEK))},
        {"name": "peek-none", "argv": _run(app("peek", PEEK, "none"))},
        {"name": "ctypes-peek", "argv": _run(app("ctypes-peek", CTYPES_PEEK))},
        {"name": "breakout", "argv": _run(app("breakout", BREAKOUT))},
        {"name": "peek-in-workers", "argv": _run(_compose_measured(
            write_mpk_app(tmp / "peek-in-workers", PEEK_IN_WORKERS),
            tmp / "peek-in-workers-mpk", ITEMS), "--input", ITEMS)},
        {"name": "thread-peek", "argv": _run(app("thread-peek", THREAD_PEEK))},
        {"name": "numpy-ctypes", "argv": _run(app("numpy-ctypes", NUMPY_CTYPES))},
        {"name": "numpy-ctypes-none",
         "argv": _run(app("numpy-ctypes", NUMPY_CTYPES, "none"))},
        {"name": "warm", "argv": _run(app("warm", WARM),
                                      "--input", json.dumps({"text": "ab ab cd ef"}))},
        {"name": "escape", "argv": _run(app("escape", ESCAPE))},
        {"name": "fail-then-clean", "argv": _run(app("fail", FAIL_THEN_CLEAN))},
        {"name": "concurrent-caches", "argv": _run(
            app("caches", concurrent_caches(str(tmp / "meet"))), "--threads-only")},
        *_https_cases(tmp, app("https", TWO_HTTPS)),
        *_guard_cases(tmp),
        *_example_cases(tmp),
    ]
    cases_file = tmp / "cases.json"
    cases_file.write_text(json.dumps(cases))
    env = dict(os.environ, QEMU_TIMEOUT=str(QEMU_TIMEOUT_S), FAASTLANE_MPK="on")
    proc = subprocess.run([str(HARNESS), str(ROOT), sys.executable, str(DRIVER),
                           str(cases_file)], capture_output=True, text=True, env=env,
                          timeout=QEMU_TIMEOUT_S + 120)
    if proc.returncode == HARNESS_SETUP_FAILED:
        pytest.fail(f"QEMU IS UNAVAILABLE (a failure, not a skip):\n{proc.stderr[-4000:]}",
                    pytrace=False)
    results = {}
    for line in proc.stdout.splitlines():
        if line.startswith("MPKCASE "):
            case = json.loads(line.removeprefix("MPKCASE "))
            results[case.pop("name")] = case
    assert len(results) == len(cases), (
        f"the guest ran {len(results)} of {len(cases)} cases (exit {proc.returncode}):\n"
        f"{(proc.stdout + proc.stderr)[-6000:]}")
    return results


def _output(guest: dict[str, dict[str, Any]], name: str, code: int = 0) -> Any:
    case = guest[name]
    assert case["code"] == code, (f"{name}: exit {case['code']}\n{case['stdout'][-3000:]}\n"
                                  f"{case['stderr'][-3000:]}")
    return json.loads(case["stdout"])


def test_reading_another_functions_heap_stops_the_workflow_naming_both(
        guest: dict[str, dict[str, Any]]) -> None:
    out = _output(guest, "peek", code=1)
    assert out["Error"] == "Faastlane.IsolationViolation"
    assert "function 'Peek' touched the private heap of function 'Keeper'" in out["Cause"]
    # Control: without isolation the same read succeeds (so the test can fail).
    assert _output(guest, "peek-none")["peek"] == {"value": "keeper-secret"}


def test_a_map_job_on_a_warm_worker_reading_another_functions_heap_is_stopped(
        guest: dict[str, dict[str, Any]]) -> None:
    out = _output(guest, "peek-in-workers", code=1)
    assert out["Error"] == "Faastlane.IsolationViolation", out
    # Reported by the Orchestrator for the worker that died, naming the job.
    assert out["Cause"].startswith("iteration "), out
    assert "of Map 'Jobs'" in out["Cause"], out
    assert "function 'Peek' touched the private heap of function 'Keeper'" in out["Cause"]


def test_ctypes_is_refused_to_function_code_under_keys(
        guest: dict[str, dict[str, Any]]) -> None:
    """The hardening, on in mpk mode, refuses ctypes before any read is attempted."""
    out = _output(guest, "ctypes-peek", code=1)
    assert out["Error"] == "IsolationViolation", out
    assert json.loads(out["Cause"])["errorMessage"].startswith(
        "function 'CtypesPeek': ctypes (ctypes.")


def test_function_code_runs_sealed_and_hardened_under_keys(
        guest: dict[str, dict[str, Any]]) -> None:
    out = _output(guest, "breakout")
    assert out["sealed_to_my_slot"] and out["seccomp"], out
    for key in ("exit", "live_domains", "thread_live_domains"):
        assert out[key].startswith("SealedError: cannot "), out
    for key in ("proc_self_mem", "ctypes", "thread_ctypes", "mem_dir_fd", "subprocess",
                "thread_fork", "gc", "settrace"):
        assert out[key].startswith("IsolationViolation: function 'Breakout': "), out


def test_a_read_by_a_thread_a_function_started_names_that_function(
        guest: dict[str, dict[str, Any]]) -> None:
    """Issue 17, class 6: the thread is born sealed to ThreadPeek's domain, so the
    fault report names ThreadPeek, not the Orchestrator (peek-none is the control)."""
    out = _output(guest, "thread-peek", code=1)
    assert out["Error"] == "Faastlane.IsolationViolation", out
    assert "function 'ThreadPeek' touched the private heap of function 'Keeper'" in \
        out["Cause"], out


def test_numpy_ctypes_inside_a_function_under_keys(
        guest: dict[str, dict[str, Any]]) -> None:
    keys, shared = _output(guest, "numpy-ctypes"), _output(guest, "numpy-ctypes-none")
    assert keys == shared == {"pointer_matches": True, "shape": [3, 4], "sum": 66.0}


def test_warm_state_promotion_and_libraries_under_keys(
        guest: dict[str, dict[str, Any]]) -> None:
    out = _output(guest, "warm")
    assert (out["model1"]["calls"], out["model2"]["calls"]) == (1, 2)
    assert [out[f"lazy{i}"]["loaded_now"] for i in (1, 2, 3)] == [True, False, False]
    assert out["libraries"]["array_sum"] == 66.0 and out["libraries"]["total"] == "3.30"
    assert out["consumed"]["text"] == "made by Produce " * 3
    # Its finalizer was left for exit, and the action still exited cleanly (code 0
    # above): the exiting thread never read the function's private finalizer.
    assert out["finalize"] == {"finalizer_pending": True}
    # Two functions called one shared lru_cache (urlsplit) in turn: each used its own
    # copy of the cache (stdlib_caches.py), never a link the other made.
    assert out["urls_b"] == {"host": "ef.b.example"}
    # Registries the standard library fills on first use (a Flag combination, a class's
    # __slotnames__, OpenSSL's method store) took shared entries: no escape, no fault.
    assert out["registries1"]["seen"] == out["registries2"]["seen"] == "set at import"
    assert out["registries2"]["flag_shared"] and out["registries2"]["slotnames_shared"]


def test_two_functions_call_an_https_server_under_keys(
        guest: dict[str, dict[str, Any]]) -> None:
    """The second function's TLS handshake reads only shared OpenSSL state: what the
    handshakes fetch was warmed at load (library_caches.warm_tls_handshakes)."""
    assert _output(guest, "https") == {f"{n}{i}": f"/{n}{i}" for i in (1, 2)
                                       for n in ("HttpsA", "HttpsB")}


def test_functions_running_at_once_keep_their_own_stdlib_caches_under_keys(
        guest: dict[str, dict[str, Any]]) -> None:
    """-Th: two functions meet mid-invocation and ask re, struct, an lru_cache and
    linecache for what the other filled; each gets its own entry (stdlib_caches.py),
    where a shared cache handed out the other's private one and faulted."""
    assert _output(guest, "concurrent-caches") == CONCURRENT_CACHES_OUTPUT


def test_escape_and_failure_under_keys(guest: dict[str, dict[str, Any]]) -> None:
    escape = _output(guest, "escape", code=1)
    assert escape["Error"] == "Faastlane.IsolationError"
    assert "function 'Escape'" in escape["Cause"]
    clean = _output(guest, "fail-then-clean")
    assert clean["caught"]["Error"] == "ValueError" and clean["again"] == {"ok": True}


@pytest.mark.parametrize("example", ["finra", "ml-predict", "healthcare", "sentiment"])
def test_each_example_gives_the_same_output_under_keys(
        guest: dict[str, dict[str, Any]], example: str) -> None:
    """Every function of the example in its own domain, C malloc routed (numpy arrays and
    Pillow images private), each boto3 user with its own default session (healthcare and
    sentiment, against the examples' local endpoints in the guest): the output equals
    none mode's and the expected one (ml-predict's ``model.trained_at`` is when the
    container trained)."""
    expected = json.loads((EXAMPLES / example / "expected.json").read_text())
    keys, shared = _output(guest, f"{example}-mpk"), _output(guest, f"{example}-none")
    if example == "ml-predict":
        keys, shared = ({k: out[k] for k in expected} for out in (keys, shared))
    assert keys == shared == expected


def test_planting_shared_code_is_refused_under_keys(
        guest: dict[str, dict[str, Any]]) -> None:
    """Class 1: a wrapper of json.dumps planted by Thief would run in Victim's domain
    and keep its secret (it does under none: test_guard_workflows.py); refused, naming
    Thief, and the secret is in nothing the workflow reports."""
    case = guest["guard-plant-mpk"]
    assert SECRET not in case["stdout"] + case["stderr"]
    out = _output(guest, "guard-plant-mpk", code=1)
    assert out["Error"] == "Faastlane.IsolationError", out
    assert "function 'Thief' may not change 'dumps' in the namespace of module 'json'" \
        in out["Cause"], out


def test_frames_and_other_threads_are_out_of_reach_under_keys(
        guest: dict[str, dict[str, Any]]) -> None:
    """Class 3: what frames below the function and other threads' frames reach holds the
    data in flight (found there under none: test_guard_workflows.py)."""
    assert _output(guest, "guard-frames-mpk")["thief"]["stolen"] == [
        "refused: IsolationViolation"]


def test_a_helper_module_runs_sealed_in_its_function_under_keys(
        guest: dict[str, dict[str, Any]]) -> None:
    """Class 2: functions/_helper.py's body runs sealed in User's domain: the domain
    API is refused to it (unsealed under none: test_guard_workflows.py)."""
    keys = _output(guest, "guard-helper-mpk")["r1"]
    assert keys["sealed"] is True, keys
    assert keys["domains"].startswith("SealedError: cannot list the live domains"), keys


def test_the_hardenings_state_is_read_only_under_keys(
        guest: dict[str, dict[str, Any]]) -> None:
    """The hook's policy and tables, reachable from its module, cannot be loosened by
    function code (under none, with no guard, they change: test_guard_workflows.py)."""
    assert set(_output(guest, "guard-loosen-mpk")["r0"].values()) == {"SharedWriteError"}


def test_a_librarys_module_body_runs_sealed_under_keys(
        guest: dict[str, dict[str, Any]]) -> None:
    """Class 2 for libraries: User's library attacklib loads sealed in the library
    loader, with no function's rights (each attempt goes through under none:
    test_guard_workflows.py)."""
    result = _output(guest, "guard-library-mpk")
    assert result["r1"] == {"domains": "SealedError", "plant": "SharedWriteError",
                            "class": "SharedWriteError", "process": "IsolationViolation",
                            "steal": "IsolationViolation", "thread": True,
                            "ctypes": "done", "append-finder": "done"}, result
    assert result["r2"] == {"sealed": '{"se'}, result


def test_the_runtimes_queues_are_refused_to_function_code_under_keys(
        guest: dict[str, dict[str, Any]]) -> None:
    """Data in flight through the runtime's queues: Thief's threads, waiting on the
    worker threads' queues, are refused the get that would hand them Source's result
    (under none they take it: test_guard_workflows.py)."""
    result = _output(guest, "guard-queue-tap-mpk")
    assert result["read"] == {"stolen": [], "refused": ["SharedWriteError"]}, result


def test_a_library_imported_lazily_runs_without_the_functions_rights_under_keys(
        guest: dict[str, dict[str, Any]]) -> None:
    """A library Victim imports while it runs loads on the loader thread, under the
    loader's PKRU: nothing of Victim's is below its frames, nothing is kept for Thief
    (under none it copies Victim's secret: test_guard_workflows.py)."""
    result = _output(guest, "guard-lazy-library-mpk")
    assert result["r1"] == {"stolen": [], "thread": "faastlane:library-loader"}, result


def test_a_librarys_read_of_another_functions_heap_faults_under_keys(
        guest: dict[str, dict[str, Any]]) -> None:
    """The loader's PKRU opens no function's heap: peeklib's body, reading Keeper's
    class at import, stops the workflow with a fault naming User's libraries and Keeper
    (it reads it under none: test_guard_workflows.py)."""
    out = _output(guest, "guard-library-peek-mpk", code=1)
    assert out["Error"] == "Faastlane.IsolationViolation", out
    assert ("function 'User (importing its libraries)' touched the private heap of "
            "function 'Keeper'") in out["Cause"], out
