"""Where work runs: threads, forked processes, isolation modes; crashes and big outputs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from .apps import chain, faastlane, task, write_app

WHO = """
import os, threading

def handler(event, context):
    return {"pid": os.getpid(), "thread": threading.get_ident()}
"""


def parallel(*branches: dict, **fields: object) -> dict:
    return {"Type": "Parallel", "Branches": list(branches), "End": True, **fields}


def test_sequential_tasks_share_the_orchestrator_process_without_isolation(app_dir: Path
                                                                            ) -> None:
    write_app(app_dir, chain(("A", task("who", ResultPath="$.a")),
                             ("B", task("who", ResultPath="$.b"))), {"who": WHO})
    done = faastlane("run", str(app_dir), "--isolation", "none")
    assert done.code == 0, done.stderr
    out = done.json
    assert out["a"]["pid"] == out["b"]["pid"]
    # each function invocation gets a thread of its own
    assert out["a"]["thread"] != 0


def test_process_isolation_runs_an_untrusted_function_in_its_own_warm_process(
        app_dir: Path) -> None:
    write_app(app_dir, chain(("T", task("trusted", ResultPath="$.t")),
                             ("A", task("who", ResultPath="$.a")),
                             ("B", task("who", ResultPath="$.b"))),
              {"who": WHO, "trusted": WHO}, settings={"untrusted": ["who"]})
    done = faastlane("run", str(app_dir))  # untrusted functions -> process by default
    assert done.code == 0, done.stderr
    out = done.json
    # Its own process (one for the container's life), not the Orchestrator's, where the
    # trusted function runs as a thread.
    assert out["a"]["pid"] == out["b"]["pid"] != out["t"]["pid"]


def test_parallel_branches_run_on_threads_until_measured_or_forked_with_p(app_dir: Path
                                                                         ) -> None:
    branches = [chain((f"W{i}", task("who"))) for i in range(3)]
    write_app(app_dir, chain(("P", parallel(*branches))), {"who": WHO})
    # Nothing measured these jobs: a first run is on the Orchestrator's threads.
    first = faastlane("run", str(app_dir), "--isolation", "none", "--vcpus", "3").json
    assert len({b["pid"] for b in first}) == 1
    forked = faastlane("run", str(app_dir), "--isolation", "none", "--vcpus", "3",
                       "--processes-only").json
    assert len({b["pid"] for b in forked}) == 3
    threaded = faastlane("run", str(app_dir), "--isolation", "none", "--threads-only").json
    assert len({b["pid"] for b in threaded}) == 1


def test_map_iterations_share_at_most_vcpus_processes(app_dir: Path) -> None:
    workflow = chain(("M", {"Type": "Map", "ItemsPath": "$.items", "End": True,
                            "ItemProcessor": chain(("W", task("who")))}))
    write_app(app_dir, workflow, {"who": WHO})
    done = faastlane("run", str(app_dir), "--vcpus", "2", "--input",
                     json.dumps({"items": list(range(7))}))
    assert done.code == 0, done.stderr
    assert len(done.json) == 7
    # At most one sandbox per vCPU (a second only when two jobs overlap, which a loaded
    # machine may not let them do).
    assert 1 <= len({r["pid"] for r in done.json}) <= 2


def test_a_killed_branch_is_an_error_not_a_hang(app_dir: Path) -> None:
    write_app(app_dir, chain(("P", parallel(chain(("Die", task("die"))),
                                            chain(("Ok", task("who"))))),
                             ), {"who": WHO, "die": """
        import os, signal

        def handler(event, context):
            os.kill(os.getpid(), signal.SIGKILL)
    """})
    started = time.monotonic()
    done = faastlane("run", str(app_dir), timeout=60)  # isolated: in its sandbox
    assert time.monotonic() - started < 30
    assert done.code == 1
    assert done.json["Error"] == "Runtime.ExitError"
    # Lambda's error document for its Task; the log says which process it was.
    assert json.loads(done.json["Cause"])["errorMessage"].endswith(
        "Error: Runtime exited with error: signal: killed")
    assert "function 'die': sandbox process" in done.stderr
    forked = faastlane("run", str(app_dir), "--isolation", "none", "--processes-only",
                       timeout=60)
    assert forked.code == 1 and forked.json["Error"] == "Runtime.ExitError"
    assert "function 'die': process" in forked.json["Cause"]
    assert "signal: killed" in forked.json["Cause"]


def test_a_crashed_branch_can_be_caught(app_dir: Path) -> None:
    crash = "import os\n\ndef handler(event, context):\n    os._exit(3)\n"
    workflow = chain(("P", parallel(chain(("Crash", task("crash"))),
                                    Catch=[{"ErrorEquals": ["States.ALL"], "Next": "Done",
                                            "ResultPath": "$.failure"}])),
                     ("Done", {"Type": "Pass", "End": True}))
    workflow["States"]["P"].pop("End", None)
    workflow["States"]["P"]["Next"] = "Done"
    write_app(app_dir, workflow, {"crash": crash})
    done = faastlane("run", str(app_dir), "--input", '{"k": 1}')
    assert done.code == 0, done.stderr
    assert done.json["k"] == 1
    assert done.json["failure"]["Error"] == "Runtime.ExitError"
    assert "exit status 3" in done.json["failure"]["Cause"]


def test_multi_megabyte_branch_outputs_cross_the_pipes(app_dir: Path) -> None:
    big = "def handler(event, context):\n    return 'x' * (4 * 1024 * 1024 + event['n'])\n"
    branches = [chain((f"B{i}", task("big", Parameters={"n": i}))) for i in range(3)]
    write_app(app_dir, chain(("P", parallel(*branches))), {"big": big})
    done = faastlane("run", str(app_dir), "--vcpus", "3")
    assert done.code == 0, done.stderr[-2000:]
    assert [len(s) for s in done.json] == [4 * 1024 * 1024 + i for i in range(3)]


def test_function_modules_are_imported_once_per_container(app_dir: Path, tmp_path: Path
                                                         ) -> None:
    log = tmp_path / "imports.log"
    counted = f"""
        with open({str(log)!r}, "a") as f:
            f.write("imported\\n")

        def handler(event, context):
            return event
    """
    workflow = chain(("A", task("counted")), ("B", task("counted")),
                     ("M", {"Type": "Map", "ItemsPath": "$.items", "End": True,
                            "ItemProcessor": chain(("C", task("counted")))}))
    write_app(app_dir, workflow, {"counted": counted})
    # Shared by threads (and warm workers forked after the import); isolated, each of a
    # function's sandboxes is a container of its own and imports it, as on Lambda.
    done = faastlane("run", str(app_dir), "--isolation", "none", "--input",
                     '{"items": [1, 2, 3, 4]}')
    assert done.code == 0, done.stderr
    assert log.read_text() == "imported\n"


@pytest.mark.parametrize("isolation", ["none", "process"])
def test_task_timeout_is_states_timeout(app_dir: Path, isolation: str) -> None:
    slow = "import time\n\ndef handler(event, context):\n    time.sleep(60)\n"
    write_app(app_dir, chain(("Slow", task("slow", TimeoutSeconds=1))), {"slow": slow})
    started = time.monotonic()
    done = faastlane("run", str(app_dir), "--isolation", isolation)
    assert time.monotonic() - started < 20
    assert done.code == 1
    assert done.json["Error"] == "States.Timeout"


def test_workflow_timeout_fails_the_execution_even_with_catch_all(app_dir: Path) -> None:
    workflow = chain(("Wait", {"Type": "Wait", "Seconds": 30}),
                     ("End", {"Type": "Pass", "End": True}))
    workflow["TimeoutSeconds"] = 1
    write_app(app_dir, workflow, {})
    started = time.monotonic()
    done = faastlane("run", str(app_dir))
    assert time.monotonic() - started < 15
    assert (done.code, done.json["Error"]) == (1, "States.Timeout")


def test_functions_mutating_their_event_do_not_change_state_input(app_dir: Path) -> None:
    mutate = """
        def handler(event, context):
            event["items"].append("added by function")
            event["secret"] = "leaked?"
            return {"seen": len(event["items"])}
    """
    write_app(app_dir, chain(("M", task("mutate", ResultPath="$.result"))),
              {"mutate": mutate})
    done = faastlane("run", str(app_dir), "--input", '{"items": ["a"]}')
    assert done.json == {"items": ["a"], "result": {"seen": 2}}


def test_a_function_calling_sys_exit_fails_its_state(app_dir: Path) -> None:
    write_app(app_dir, chain(("Quit", task("quit"))),
              {"quit": "import sys\n\ndef handler(event, context):\n    sys.exit(4)\n"})
    done = faastlane("run", str(app_dir))
    assert done.code == 1
    assert done.json["Error"] == "Runtime.ExitError"
    assert "exit status 4" in done.json["Cause"]


@pytest.mark.parametrize("isolation", ["none", "process"])
def test_a_function_raising_keyboard_interrupt_fails_its_state_and_catch_applies(
        app_dir: Path, isolation: str) -> None:
    # Uncaught, it would end a Lambda runtime (by SIGINT): its Task's Runtime.ExitError,
    # not the Orchestrator's traceback.
    write_app(app_dir, chain(("Stop", task("stop", Catch=[{
        "ErrorEquals": ["Runtime.ExitError"], "ResultPath": "$.err", "Next": "After"}],
        Next="After")), ("After", {"Type": "Pass", "End": True})),
        {"stop": "def handler(event, context):\n    raise KeyboardInterrupt\n"})
    done = faastlane("run", str(app_dir), "--isolation", isolation)
    assert done.code == 0, done.stderr
    assert done.json["err"]["Error"] == "Runtime.ExitError"
    assert "signal: interrupt" in done.json["err"]["Cause"]
    assert "Traceback" not in done.stderr


def test_a_function_that_kills_the_shared_process_is_reported(app_dir: Path) -> None:
    write_app(app_dir, chain(("Die", task("die"))), {"die": """
        import ctypes

        def handler(event, context):
            ctypes.string_at(0)  # a real fault, on the function's own thread
    """})
    done = faastlane("run", str(app_dir), "--isolation", "none")
    assert done.code == 1
    # The state and function that ran, and what contains such a crash.
    assert done.json == {"Error": "Runtime.ExitError", "Cause": (
        "the Orchestrator process exited with signal SIGSEGV while running state 'Die' "
        "(function 'die'); a function in its own sandboxed process (--isolation process, "
        "the function not marked trusted) fails only its Task on such a crash, as on "
        "Lambda, and Retry and Catch apply")}
    assert f"the execution failed: Runtime.ExitError: {done.json['Cause']}" in done.stderr
    # under process isolation only the function's own process dies
    isolated = faastlane("run", str(app_dir), "--isolation", "process")
    assert isolated.code == 1 and json.loads(isolated.json["Cause"])["errorMessage"].endswith(
        "Runtime exited with error: signal: segmentation fault")
