"""The warm child of ``faastlane serve``: the composed action, loaded once, answering
both platforms' calls.

It speaks the action server's launcher protocol (``runtime/platforms/action_launcher``:
an ack line, then one JSON request line in and one JSON result line out per call) and
reuses its loop; what differs is the entry: a request's ``value`` says which platform
called, and the action's own entry for that platform runs (``__main__.main`` for
OpenWhisk, ``lambda_function.handler`` for Lambda), so each gets exactly the result shape
it gets when deployed. Its standard output goes to standard error: ``faastlane serve``'s
output is its own, the functions' prints are logs.

Run as a script, it imports only the standard library and the action's own runtime
(``faastlane_runtime`` in the action folder), as the deployed action does.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

OPENWHISK, LAMBDA, STATES = "openwhisk", "lambda", "states"


def _lambda_handler(action_dir: str) -> Any:
    spec = importlib.util.spec_from_file_location(
        "lambda_function", os.path.join(action_dir, "lambda_function.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.handler


def _execution(value: dict[str, Any]) -> dict[str, Any]:
    """One execution for the Step Functions API: how it ended and its history's events
    (recorded for this execution only: Lambda and OpenWhisk calls run without)."""
    if TYPE_CHECKING:
        from faastlane.runtime.engine import history
    else:
        from faastlane_runtime.engine import history
    # The action's Orchestrator, loaded already (by lambda_function).
    orchestrator = importlib.import_module("orchestrator").ORCHESTRATOR

    history.enabled = True
    try:
        result = orchestrator.execute(value["input"], execution_name=value["name"])
    finally:
        history.enabled = False
    events = result.history or []
    history.given_input(events, value["input_text"])
    return {"status": result.status, "output": result.output, "error": result.error,
            "cause": result.cause, "events": events}


def dispatcher(action_dir: str,
               openwhisk_main: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The entry the launcher loop calls with each request's ``value``."""
    lambda_handler = _lambda_handler(action_dir)
    # The action's own runtime: for the checker, the same module installed.
    if TYPE_CHECKING:
        from faastlane.runtime.engine.lambda_context import LambdaContext
    else:
        from faastlane_runtime.engine.lambda_context import LambdaContext

    def call(value: dict[str, Any]) -> dict[str, Any]:
        if value.get("api") == STATES:
            return _execution(value)
        if value.get("api") == LAMBDA:
            context = LambdaContext(value["function"], request_id=value["request_id"])
            try:
                return {"result": lambda_handler(value["event"], context)}
            except Exception as exc:  # Lambda's "Unhandled" function error
                return {"error": {"errorMessage": str(exc), "errorType": type(exc).__name__,
                                  "requestId": value["request_id"], "stackTrace": []}}
        return {"result": openwhisk_main(value.get("params", {}))}

    return call


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action_dir")
    parser.add_argument("--main", default="main")
    parser.add_argument("--result-fd", type=int, required=True)
    args = parser.parse_args(argv)
    # This file's folder (sys.path[0]) must not shadow the action's modules.
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == here:
        sys.path.pop(0)
    action_dir = os.path.abspath(args.action_dir)
    sys.path.insert(0, action_dir)
    if TYPE_CHECKING:  # as in dispatcher
        from faastlane.runtime.platforms.action_launcher import launch
    else:
        from faastlane_runtime.platforms.action_launcher import launch

    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())

    def prepare(entry: Callable[[Any], Any]) -> Callable[[Any], Any]:
        # A signal stops this process and whatever the Orchestrator started (sandboxes,
        # forked workers), as it does a local run.
        if TYPE_CHECKING:
            from faastlane.runtime.platforms import shutdown
        else:
            from faastlane_runtime.platforms import shutdown

        shutdown.install()
        # Which states run, where serve reads it if this process dies (workflow.py).
        recording = os.environ.pop("FAASTLANE_FLIGHT", None)
        if recording:
            if TYPE_CHECKING:
                from faastlane.runtime.engine import flight
            else:
                from faastlane_runtime.engine import flight
            flight.record_to(recording)
        return dispatcher(action_dir, entry)

    return launch(action_dir, args.main, args.result_fd, prepare)

if __name__ == "__main__":
    sys.exit(main())
