"""Functions behave as they do on AWS Lambda, through the CLI as a user runs it: each
function its own helper modules, its own environment, Lambda's log lines, its timeout."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from .apps import chain, faastlane, task, write_app

PARALLEL = {"StartAt": "P", "States": {"P": {"Type": "Parallel", "End": True, "Branches": [
    {"StartAt": "A", "States": {"A": task("A")}},
    {"StartAt": "B", "States": {"B": task("B")}}]}}}

ENTRY = '''
import os
import utils
from helpers import sub


def lambda_handler(event, context):
    return {"utils": utils.WHO, "sub": sub.WHO, "module": utils.__name__}
'''


def two_package_functions(root: Path) -> Path:
    """A and B each ship utils.py and a helpers package that imports utils."""
    app = write_app(root, PARALLEL, {})
    for name in ("A", "B"):
        folder = app / "functions" / name
        (folder / "helpers").mkdir(parents=True)
        (folder / "lambda_function.py").write_text(textwrap.dedent(ENTRY))
        (folder / "utils.py").write_text(f"WHO = {name!r}\n")
        (folder / "helpers" / "__init__.py").write_text("")
        (folder / "helpers" / "sub.py").write_text("import utils\nWHO = 'sub-' + utils.WHO\n")
    return app


def run(app: Path, *args: str, payload: object = None):
    done = faastlane("run", str(app), "--input", json.dumps(payload or {}), *args)
    try:
        output = json.loads(done.stdout)
    except json.JSONDecodeError:
        output = None
    return done.code, output, done.stderr


@pytest.mark.parametrize("mode", [("--isolation", "none"), ("--isolation", "none",
                                                             "--threads-only"),
                                  ("--isolation", "process")])
def test_each_function_imports_its_own_helper_modules(tmp_path: Path, mode) -> None:
    app = two_package_functions(tmp_path / "app")
    code, out, err = run(app, *mode)
    assert code == 0, err
    assert out == [{"utils": "A", "sub": "sub-A", "module": "faastlane_own_A.utils"},
                   {"utils": "B", "sub": "sub-B", "module": "faastlane_own_B.utils"}]
    assert faastlane("validate", str(app)).code == 0


def test_each_function_imports_its_own_helper_modules_mpk(tmp_path: Path) -> None:
    pytest.importorskip("_faastlane", reason="needs the cpython-mpk runtime (make test)")
    app = two_package_functions(tmp_path / "app")
    code, out, err = run(app, "--isolation", "mpk")
    assert code == 0, err
    assert [o["utils"] for o in out] == ["A", "B"]
    assert [o["sub"] for o in out] == ["sub-A", "sub-B"]
    assert "pointing into its private heap" not in err


# Both functions wait for each other inside their invocations (threads of one process,
# --threads-only), then read the environment: each must see its own. Each function has
# its own copy of a helper beside it (as each Lambda function has its own task root), so
# the two copies meet on one barrier kept in sys.modules.
RENDEZVOUS = '''
import sys, threading, types
BARRIER = sys.modules.setdefault(
    "faastlane_test_rendezvous",
    types.SimpleNamespace(barrier=threading.Barrier(2, timeout=20))).barrier
'''

ENV_FUNCTION = '''
import os
import _rendezvous

AT_IMPORT = os.environ.get("GREETING")


def handler(event, context):
    _rendezvous.BARRIER.wait()
    names = ("AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
             "AWS_LAMBDA_FUNCTION_VERSION", "AWS_LAMBDA_LOG_GROUP_NAME", "_HANDLER",
             "AWS_EXECUTION_ENV", "GREETING")
    seen = {name: os.environ.get(name) for name in names}
    seen["at_import"] = AT_IMPORT
    seen["in_copy"] = os.environ.copy().get("GREETING")
    seen["task_root"] = os.path.basename(os.environ["LAMBDA_TASK_ROOT"])
    seen["stream"] = bool(os.environ["AWS_LAMBDA_LOG_STREAM_NAME"])
    seen["region"] = os.environ["AWS_REGION"] == context.invoked_function_arn.split(":")[3]
    seen["memory"] = context.memory_limit_in_mb
    _rendezvous.BARRIER.wait()
    return seen
'''


def test_lambda_environment_is_each_functions_own_even_at_once(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", PARALLEL,
                    {"A": ENV_FUNCTION, "B": ENV_FUNCTION, "_rendezvous": RENDEZVOUS},
                    {"functions": {"A": {"environment": {"GREETING": "hello-a"},
                                         "memory": 512},
                                   "B": {"environment": {"GREETING": "hello-b"}}}})
    code, out, err = run(app, "--threads-only", "--isolation", "none")  # one process
    assert code == 0, err
    a, b = out
    for seen, name, greeting in ((a, "A", "hello-a"), (b, "B", "hello-b")):
        assert seen["AWS_LAMBDA_FUNCTION_NAME"] == name
        assert seen["AWS_LAMBDA_LOG_GROUP_NAME"] == f"/aws/lambda/{name}"
        assert seen["_HANDLER"] == f"{name}.handler"
        assert seen["AWS_LAMBDA_FUNCTION_VERSION"] == "$LATEST"
        assert seen["AWS_EXECUTION_ENV"].startswith("AWS_Lambda_python3.")
        assert seen["GREETING"] == seen["at_import"] == seen["in_copy"] == greeting
        assert seen["task_root"] == "functions" and seen["stream"] and seen["region"]
    assert (a["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"], a["memory"]) == ("512", "512")
    assert (b["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"], b["memory"]) == ("1024", "1024")


def test_function_settings_are_validated(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", chain(("A", task("A"))),
                    {"A": "def handler(event, context):\n    return 1\n"},
                    {"functions": {"A": {"timeout": 0, "memory": "big", "environment": {
                        "AWS_REGION": "x"}, "colour": 1}, "Nope": {}}})
    done = faastlane("validate", str(app))
    assert done.code == 1
    for expected in ("/functions/A/timeout", "from 1 to 900", "/functions/A/memory",
                     "/functions/A/environment", "AWS_REGION", "/functions/A/colour",
                     "/functions/Nope", "no function named 'Nope'"):
        assert expected in done.stdout + done.stderr


LOGGING = '''
import logging

logger = logging.getLogger()
logger.setLevel(logging.INFO)


def handler(event, context):
    logger.info("processed %s", event["id"])
    return context.aws_request_id
'''


def test_root_logger_prints_as_on_lambda(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", chain(("Log", task("log"))), {"log": LOGGING})
    code, out, err = run(app, payload={"id": 7})
    assert code == 0, err
    # A local run labels each line of a function's output with its state and function.
    line = re.compile(r"^\[Log/log\] \[INFO\]\t\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\t"
                      + re.escape(out) + r"\tprocessed 7$", re.M)
    assert line.search(err), err


NEVER_RETURNS = '''
import time


def handler(event, context):
    while True:
        time.sleep(0.05)
'''


@pytest.mark.parametrize("mode", ["none", "process"])
def test_a_function_that_never_returns_times_out(tmp_path: Path, mode: str) -> None:
    # No Retry or Catch: in isolation none a relay runs it (its waiter enforces).
    app = write_app(tmp_path / "app", chain(("Stuck", task("stuck"))),
                    {"stuck": NEVER_RETURNS}, {"functions": {"stuck": {"timeout": 1}}})
    code, out, err = run(app, "--isolation", mode)
    assert code == 1, err
    assert out["Error"] == "Sandbox.Timedout"
    cause = json.loads(out["Cause"])
    assert cause["errorType"] == "Sandbox.Timedout"
    assert re.fullmatch(r"RequestId: [0-9a-f-]{36} Error: Task timed out after 1\.00 seconds",
                        cause["errorMessage"])
    assert "Stuck" in err


COUNTS_ATTEMPTS = '''
import time


def handler(event, context):
    print("attempt", flush=True)  # its output: its process's /tmp may be its own
    while True:
        time.sleep(0.05)
'''


def test_function_timeout_is_retried_and_caught(tmp_path: Path) -> None:
    retry = [{"ErrorEquals": ["Sandbox.Timedout"], "IntervalSeconds": 1, "MaxAttempts": 1}]
    catch = [{"ErrorEquals": ["States.TaskFailed"], "ResultPath": "$.error", "Next": "Done"}]
    workflow = {"StartAt": "Stuck", "States": {
        "Stuck": task("stuck", Retry=retry, Catch=catch, Next="Done"),
        "Done": {"Type": "Pass", "End": True}}}
    app = write_app(tmp_path / "app", workflow, {"stuck": COUNTS_ATTEMPTS},
                    {"functions": {"stuck": {"timeout": 1}}})
    code, out, err = run(app)
    assert code == 0, err
    assert out["error"]["Error"] == "Sandbox.Timedout"
    assert [line for line in err.splitlines() if line.endswith("attempt")] == [
        "[Stuck/stuck] attempt", "[Stuck/stuck] attempt"], err  # one retry


def test_task_timeout_still_wins_when_shorter(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", chain(("Stuck", task("stuck", TimeoutSeconds=1))),
                    {"stuck": NEVER_RETURNS}, {"functions": {"stuck": {"timeout": 30}}})
    code, out, err = run(app)
    assert code == 1, err
    assert out["Error"] == "States.Timeout"
