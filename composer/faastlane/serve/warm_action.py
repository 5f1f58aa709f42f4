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
import json
import os
import sys
import traceback
from typing import Any

OPENWHISK, LAMBDA = "openwhisk", "lambda"


def _lambda_handler(action_dir: str) -> Any:
    spec = importlib.util.spec_from_file_location(
        "lambda_function", os.path.join(action_dir, "lambda_function.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.handler


def dispatcher(action_dir: str, openwhisk_main: Any) -> Any:
    """The entry the launcher loop calls with each request's ``value``."""
    lambda_handler = _lambda_handler(action_dir)
    from faastlane_runtime.engine.lambda_context import LambdaContext  # the action's own

    def call(value: dict[str, Any]) -> dict[str, Any]:
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
    from faastlane_runtime.platforms.action_launcher import _report_faults, load_entry, serve

    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    results = os.fdopen(args.result_fd, "w", encoding="utf-8")
    try:
        _report_faults(action_dir)
        entry = dispatcher(action_dir, load_entry(action_dir, args.main))
        # A signal stops this process and whatever the Orchestrator started (sandboxes,
        # forked workers), as it does a local run.
        from faastlane_runtime.platforms import shutdown
        shutdown.install()
    except BaseException:
        traceback.print_exc(file=sys.stderr)
        sys.stderr.flush()
        return 1
    results.write(json.dumps({"ok": True}) + "\n")
    results.flush()
    serve(entry, sys.stdin, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
