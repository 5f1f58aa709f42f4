"""The CLI contract of ARCHITECTURE.md, exercised through the real command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from faastlane.runtime.isolation.domains import status_in_use

from .apps import chain, faastlane, task, write_app

ECHO = """
def handler(event, context):
    return event
"""


def test_run_prints_the_output_and_sends_function_prints_to_stderr(app_dir: Path) -> None:
    write_app(app_dir, chain(("Greet", task("greet"))), {"greet": """
        def handler(event, context):
            print("log line from the function")
            return {"greeting": "hello " + event["name"],
                    "function": context.function_name,
                    "has_time": context.get_remaining_time_in_millis() > 0,
                    "request": len(context.aws_request_id)}
    """})
    done = faastlane("run", str(app_dir), "--input", '{"name": "ada"}')
    assert done.code == 0, done.stderr
    assert done.json == {"greeting": "hello ada", "function": "greet", "has_time": True,
                         "request": 36}
    assert "log line from the function" in done.stderr
    assert "log line" not in done.stdout


def test_openwhisk_main_and_lambda_handler_styles_mix(app_dir: Path) -> None:
    write_app(app_dir, chain(("A", task("ow")), ("B", task("aws"))), {
        "ow": "def main(params):\n    return {'n': params['n'] + 1}\n",
        "aws": "def lambda_handler(event, context):\n    return {'n': event['n'] * 10}\n",
    })
    done = faastlane("run", str(app_dir), "--input", '{"n": 4}')
    assert (done.code, done.json) == (0, {"n": 50})


def test_a_raising_function_fails_the_execution_with_its_exception_class(app_dir: Path) -> None:
    write_app(app_dir, chain(("Boom", task("boom"))), {"boom": """
        class OrderRejected(Exception):
            pass

        def handler(event, context):
            raise OrderRejected("card declined")
    """})
    done = faastlane("run", str(app_dir))
    assert done.code == 1
    failure = done.json
    assert failure["Error"] == "OrderRejected"
    cause = json.loads(failure["Cause"])
    assert cause["errorType"] == "OrderRejected"
    assert cause["errorMessage"] == "card declined"
    assert any("raise OrderRejected" in line for line in cause["stackTrace"])


def test_non_json_output_is_runtime_marshal_error(app_dir: Path) -> None:
    write_app(app_dir, chain(("Bad", task("bad"))), {"bad": """
        def handler(event, context):
            return {"when": object()}
    """})
    done = faastlane("run", str(app_dir))
    assert done.code == 1
    assert done.json["Error"] == "Runtime.MarshalError"
    assert "object is not JSON serializable" in done.json["Cause"]


@pytest.mark.parametrize("isolation", ["none", "process"])
def test_a_result_holding_itself_is_runtime_marshal_error(app_dir: Path,
                                                          isolation: str) -> None:
    # awslambdaric's to_json fails with json.dumps's ValueError and reports its words:
    # "Unable to marshal response: Circular reference detected". It used to end in a
    # RecursionError from the copying walk.
    write_app(app_dir, chain(("Loop", task("loop"))), {"loop": """
        def handler(event, context):
            result = {"items": []}
            result["items"].append(result)
            return result
    """})
    done = faastlane("run", str(app_dir), "--isolation", isolation)
    assert done.code == 1, done.stderr
    assert done.json["Error"] == "Runtime.MarshalError"
    cause = json.loads(done.json["Cause"])
    assert cause["errorMessage"] == "Unable to marshal response: Circular reference detected"
    assert "RecursionError" not in done.stderr


def test_invalid_input_json_is_one_line_exit_2(app_dir: Path) -> None:
    write_app(app_dir, chain(("E", task("echo"))), {"echo": ECHO})
    done = faastlane("run", str(app_dir), "--input", "{nope")
    assert done.code == 2
    assert done.stderr.count("\n") == 1
    assert "--input is not valid JSON" in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_app_folder_is_one_line_exit_2(tmp_path: Path) -> None:
    done = faastlane("run", str(tmp_path / "nowhere"))
    assert done.code == 2
    assert done.stderr.strip() == f"faastlane: error: no app folder at {tmp_path / 'nowhere'}"


def test_validate_lists_every_problem_with_pointers_and_run_refuses(app_dir: Path) -> None:
    workflow = {
        "StartAt": "First",
        "States": {
            "First": {"Type": "Task", "Resource": "missing_fn", "Next": "Nowhere"},
            "Orphan": {"Type": "Pass", "End": True},
            "Bad": {"Type": "Pass", "InputPath": "$.[", "End": True},
        },
    }
    write_app(app_dir, workflow, {"echo": ECHO})
    done = faastlane("validate", str(app_dir))
    assert done.code == 1
    # Each problem on a line of its own: FILE: POINTER: message.
    prefix = f"{app_dir / 'workflow.json'}: "
    pointers = {line[len(prefix):].split(": ", 1)[0] for line in done.stdout.splitlines()
                if line.startswith(prefix)}
    assert {"/States/First/Resource", "/States/First/Next", "/States/Orphan",
            "/States/Bad/InputPath"} <= pointers
    refused = faastlane("run", str(app_dir))
    assert refused.code == 3  # a workflow refused as invalid (the CLI contract)
    assert refused.stdout == ""
    assert "/States/First/Next" in refused.stderr


def test_validate_json_output_and_valid_app(app_dir: Path) -> None:
    write_app(app_dir, chain(("E", task("echo"))), {"echo": ECHO})
    done = faastlane("validate", str(app_dir), "--json")
    assert (done.code, json.loads(done.stdout)) == (0, [])


def test_compose_writes_a_self_contained_action(app_dir: Path, tmp_path: Path) -> None:
    write_app(app_dir, chain(("E", task("echo", ResultPath="$.copy"))), {"echo": ECHO})
    out = tmp_path / "action"
    done = faastlane("compose", str(app_dir), "-o", str(out))
    assert done.code == 0, done.stderr
    for name in ("orchestrator.py", "plan.json", "workflow.json", "__main__.py",
                 "lambda_function.py", "faastlane_runtime/interpreter/states.py",
                 "functions/echo.py"):
        assert (out / name).is_file(), name
    plan = json.loads((out / "plan.json").read_text())
    # Nothing marked: isolated by default -- in a domain where this runtime has keys
    # (FAASTLANE_MPK=auto on a pku host), else in a sandbox.
    keys = status_in_use().available
    assert plan["isolation"]["mode"] == ("mpk" if keys else "process"), plan["isolation"]
    assert plan["isolation"]["reason"].startswith("isolated by default")
    assert plan["states"]["E"]["placement"] == ("thread" if keys else "sandbox")
    # The action runs without faastlane installed: -S leaves site-packages off the path.
    probe = ("import importlib.util, sys\n"
             "assert importlib.util.find_spec('faastlane') is None\n"
             "entry = sys.argv[1] + '/__main__.py'\n"
             "spec = importlib.util.spec_from_file_location('action', entry)\n"
             "action = importlib.util.module_from_spec(spec)\n"
             "spec.loader.exec_module(action)\n"
             "print(action.main({'x': 1}))\n")
    ran = subprocess.run([sys.executable, "-S", "-c", probe, str(out)],
                         capture_output=True, text=True, cwd=out.parent)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "{'x': 1, 'copy': {'x': 1}}"


def test_trace_reports_every_state_with_compute_time(app_dir: Path) -> None:
    write_app(app_dir, chain(("One", task("echo")), ("Two", {"Type": "Pass", "End": True})),
              {"echo": ECHO})
    done = faastlane("run", str(app_dir), "--isolation", "none", "--trace", "--input", "{}")
    assert done.code == 0
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    header, records = lines[0], lines[1:]
    assert header["trace"] == "faastlane" and header["status"] == "SUCCEEDED"
    assert header["isolation"] == "none"
    states = [(r["state"], r["type"]) for r in records]
    assert ("One", "Task") in states and ("Two", "Pass") in states
    [function] = [r for r in records if r["type"] == "Function"]
    assert function["function"] == "echo" and function["placement"] == "thread"
    assert function["compute_ms"] >= 0 and function["end"] >= function["start"]


@pytest.mark.mpk
def test_mpk_isolation_without_keys_is_refused_clearly_when_required(app_dir: Path) -> None:
    """FAASTLANE_MPK=on refuses rather than run unenforced where the CPU has no keys;
    where it has them (``pku`` in /proc/cpuinfo) the same command runs with them."""
    write_app(app_dir, chain(("E", task("echo"))), {"echo": ECHO})
    done = faastlane("run", str(app_dir), "--isolation", "mpk", "--input", '{"x": 1}',
                     env={**os.environ, "FAASTLANE_MPK": "on"})
    if "pku" in Path("/proc/cpuinfo").read_text().split():
        assert done.code == 0, done.stderr
        assert json.loads(done.stdout) == {"x": 1}
        return
    assert done.code == 2, done.stderr
    assert done.stderr.startswith("faastlane: error: MPK isolation required "
                                  "(FAASTLANE_MPK=on) but unavailable: the CPU has no "
                                  "protection keys")
    assert done.stdout == ""


def test_mpk_isolation_needs_the_pymalloc_allocator(app_dir: Path) -> None:
    write_app(app_dir, chain(("E", task("echo"))), {"echo": ECHO})
    done = faastlane("run", str(app_dir), "--isolation", "mpk",
                     env={**os.environ, "PYTHONMALLOC": "malloc"})
    assert done.code == 2, done.stderr
    assert "PYTHONMALLOC=malloc bypasses the allocator" in done.stderr


def test_module_level_prints_never_reach_stdout(app_dir: Path) -> None:
    write_app(app_dir, chain(("E", task("noisy"))), {"noisy": """
        print("loading the model...")

        def handler(event, context):
            return event
    """})
    done = faastlane("run", str(app_dir), "--input", '{"ok": 1}')
    assert (done.code, done.stdout) == (0, '{"ok": 1}\n')
    assert "loading the model..." in done.stderr
