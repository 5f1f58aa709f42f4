"""A function whose init fails (its module raises at import, or exits) through the CLI, in
every isolation mode: as on Lambda, the Tasks that call it fail with Lambda's init error
(Retry and Catch apply), the workflow's other functions run, the init is tried again at
the next call, and ``serve`` starts and answers with that error."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

from .apps import ROOT, chain, faastlane, task, write_app

FIRST = """
def handler(event, context):
    return {"first": True}
"""

AFTER = """
def handler(event, context):
    return {"after": event}
"""

NOT_INSTALLED = """
import not_installed_pkg

def handler(event, context):
    return {"broken": False}
"""

# Lambda-style: a file read at import that the package does not ship.
READS_MODEL = """
import os

MODEL = open(os.path.join(os.path.dirname(__file__), "model.json")).read()

def handler(event, context):
    return MODEL
"""

# Fails its first two inits: the container's (when the action starts) and the one the
# first call runs again (Lambda's "suppressed init" after a failed init phase). The third,
# at the Retry's call, succeeds.
COLD_TWICE = """
import builtins

builtins.cold_twice_inits = getattr(builtins, "cold_twice_inits", 0) + 1
if builtins.cold_twice_inits < 3:
    raise RuntimeError("not warm yet")

def handler(event, context):
    return {"inits": builtins.cold_twice_inits}
"""

CAUGHT = {"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "After"}


def _caught_app(root: Path, broken_source: str) -> Path:
    workflow = chain(("First", task("first")),
                     ("Broken", task("broken", Catch=[CAUGHT])),
                     ("After", task("after")))
    workflow["States"]["Broken"]["End"] = True
    workflow["States"]["Broken"].pop("Next", None)
    return write_app(root, workflow, {"first": FIRST, "broken": broken_source,
                                      "after": AFTER})


def _cause(error: dict) -> dict:
    return json.loads(error["Cause"])


@pytest.mark.parametrize("isolation", ["none", "process", "mpk"])
def test_an_import_error_fails_only_the_task_that_calls_it_and_catch_applies(
        tmp_path: Path, isolation: str) -> None:
    app = _caught_app(tmp_path / "app", NOT_INSTALLED)
    done = faastlane("run", str(app), "--input", "{}", "--isolation", isolation)
    assert done.code == 0, done.stderr
    # The state before it ran, and the Catch's state after it.
    error = done.json["after"]["error"]
    assert done.json["after"]["first"] is True
    assert error["Error"] == "Runtime.ImportModuleError"
    assert _cause(error) == {
        "errorMessage": "Unable to import module 'broken': No module named 'not_installed_pkg'",
        "errorType": "Runtime.ImportModuleError", "requestId": "", "stackTrace": []}
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("isolation", ["none", "process", "mpk"])
def test_an_uncaught_init_error_fails_the_execution_naming_its_state(
        tmp_path: Path, isolation: str) -> None:
    app = write_app(tmp_path / "app", chain(("First", task("first")),
                                            ("LoadModel", task("broken"))),
                    {"first": FIRST, "broken": READS_MODEL})
    done = faastlane("run", str(app), "--input", "{}", "--isolation", isolation)
    assert done.code == 1
    assert done.json["Error"] == "FileNotFoundError"  # the init exception's own shape
    cause = _cause(done.json)
    assert cause["errorType"] == "FileNotFoundError" and "model.json" in cause["errorMessage"]
    # The stack names the user's own file and line, not the runtime's.
    assert any(str(app / "functions" / "broken.py") in frame and "line 4" in frame
               for frame in cause["stackTrace"])
    assert not any("faastlane_runtime" in frame for frame in cause["stackTrace"])
    assert "the execution failed in state 'LoadModel': FileNotFoundError" in done.stderr


@pytest.mark.parametrize("isolation", ["none", "process"])
def test_a_failed_init_is_tried_again_at_the_next_call(tmp_path: Path, isolation: str
                                                       ) -> None:
    retry = {"ErrorEquals": ["RuntimeError"], "IntervalSeconds": 1, "MaxAttempts": 1}
    app = write_app(tmp_path / "app", chain(("Warm", task("cold", Retry=[retry]))),
                    {"cold": COLD_TWICE})
    history = tmp_path / "history.json"
    done = faastlane("run", str(app), "--input", "{}", "--isolation", isolation,
                     "--history", str(history))
    assert done.code == 0, done.stderr
    # The first call ran the failed init again, and failed; the Retry's call ran it a third
    # time, which worked.
    assert done.json == {"inits": 3}
    events = json.loads(history.read_text())
    events = events["events"] if isinstance(events, dict) else events
    failed = [e for e in events if e["type"] == "LambdaFunctionFailed"]
    assert len(failed) == 1
    assert failed[0]["lambdaFunctionFailedEventDetails"]["error"] == "RuntimeError"


@pytest.mark.parametrize("isolation", ["none", "process", "mpk"])
@pytest.mark.parametrize("exit_code", ["raise SystemExit(3)", "raise KeyboardInterrupt"])
def test_an_init_that_exits_is_the_tasks_exit_error(tmp_path: Path, isolation: str,
                                                    exit_code: str) -> None:
    source = f"{exit_code}\n\ndef handler(event, context):\n    return 1\n"
    app = _caught_app(tmp_path / "app", source)
    done = faastlane("run", str(app), "--input", "{}", "--isolation", isolation)
    assert done.code == 0, done.stderr
    error = done.json["after"]["error"]
    assert error["Error"] == "Runtime.ExitError"
    expected = "exit status 3" if "SystemExit" in exit_code else "signal: interrupt"
    assert _cause(error)["errorMessage"].endswith(f"Runtime exited with error: {expected}")
    assert "Traceback" not in done.stderr


def test_serve_starts_and_answers_with_the_init_error(tmp_path: Path) -> None:
    app = write_app(tmp_path / "orders", chain(("Broken", task("broken"))),
                    {"broken": NOT_INSTALLED})
    log = tmp_path / "serve.log"
    with open(log, "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "faastlane", "serve", str(app), "--port", "0"],
            cwd=ROOT, stderr=stderr, stdout=subprocess.DEVNULL, env=dict(os.environ))
    try:
        url = None
        deadline = time.monotonic() + 60
        while url is None and time.monotonic() < deadline and process.poll() is None:
            found = re.search(r"on (http://127\.0\.0\.1:\d+)", log.read_text())
            url = found[1] if found else None
            time.sleep(0.1)
        assert url is not None, f"serve did not start: {log.read_text()}"
        client = boto3.client("lambda", endpoint_url=url, region_name="us-east-1",
                              aws_access_key_id="testing", aws_secret_access_key="testing",
                              config=Config(retries={"max_attempts": 1}))
        for _ in range(2):  # each call tries the init again, and fails again
            answer = client.invoke(FunctionName="orders", Payload=b"{}")
            assert answer["FunctionError"] == "Unhandled"
            error = json.loads(answer["Payload"].read())
            assert error["errorType"] == "Runtime.ImportModuleError"
            assert "No module named 'not_installed_pkg'" in error["errorMessage"]
        assert process.poll() is None
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize("isolation", ["none", "mpk"])
@pytest.mark.parametrize(("where", "said"), [
    ("handler", "while running state 'Broken' (function 'broken')"),
    ("init", "while running the init of function 'broken'"),
])
def test_a_crash_of_the_shared_process_names_what_ran_and_what_contains_it(
        tmp_path: Path, isolation: str, where: str, said: str) -> None:
    # Under a thread mode the function's process is the Orchestrator's: nothing is left
    # to catch the error, but the report says where it happened.
    body = "    os._exit(3)\n" if where == "handler" else "    return 1\n"
    source = "import os\n" + ("os._exit(3)\n" if where == "init" else "") + \
        "\ndef handler(event, context):\n" + body
    app = _caught_app(tmp_path / "app", source)
    done = faastlane("run", str(app), "--input", "{}", "--isolation", isolation)
    assert done.code == 1
    assert done.json["Error"] == "Runtime.ExitError"
    assert done.json["Cause"].startswith(f"the Orchestrator process exited with exit "
                                         f"status 3 {said}; a function in its own "
                                         "sandboxed process (--isolation process")
    assert "Traceback" not in done.stderr
