"""The child process of the action server: loads an action once and runs activations.

Started by ``action_server.py`` after ``/init``, exactly like the launcher of OpenWhisk's
Python runtime (the "action loop"): it imports the action's ``__main__.py`` once (so the
Orchestrator and every function module stay warm), acknowledges with ``{"ok": true}`` on
the result pipe, then reads one JSON request per line on standard input and answers one
JSON line per activation on the result pipe. Standard output and error are the
container's logs; they belong to the action's own prints.

Standard library only: this file is copied into the runtime image on its own.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any, TextIO

ACTION_MODULE = "__faastlane_action__"


def _drop_own_directory() -> None:
    """Run as a script, this file's folder is ``sys.path[0]``; in a source checkout that
    folder holds the runtime's platform modules (``entry.py``, ``local.py``, ...), which must not
    shadow the action's own modules of the same names."""
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == here:
        sys.path.pop(0)


def load_entry(action_dir: str, main: str) -> Callable[[Any], Any]:
    """Import ``action_dir/__main__.py`` (not as ``__main__``: its local-CLI block must
    not run) and return its entry function."""
    os.chdir(action_dir)
    sys.path.insert(0, action_dir)
    spec = importlib.util.spec_from_file_location(ACTION_MODULE,
                                                  os.path.join(action_dir, "__main__.py"))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {action_dir}/__main__.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[ACTION_MODULE] = module
    spec.loader.exec_module(module)
    entry: object = getattr(module, main, None)
    if not callable(entry):
        raise AttributeError(f"__main__.py has no function {main!r}")
    return entry


def _report_faults(action_dir: str) -> None:
    """Send protection-key faults to the log the server handed over (``mpk`` isolation:
    the server names the functions when this process dies of one). Before the action
    loads: its functions' domains are announced as they are created."""
    if "FAASTLANE_FAULT_LOG" not in os.environ:
        return
    sys.path.insert(0, action_dir)
    try:
        # The runtime's package name inside an action, not in this checkout.
        from faastlane_runtime.engine import fault_reports  # type: ignore[import-not-found]
    except ImportError:
        return  # not a Faastlane action
    fault_reports.adopt_log()


def activate(entry: Callable[[Any], Any], request: dict[str, Any]) -> Any:
    """One activation: ``__OW_*`` variables from the request, then ``main(value)``."""
    for key, value in request.items():
        if key != "value":
            os.environ[f"__OW_{key.upper()}"] = value if isinstance(value, str) \
                else json.dumps(value)
    try:
        return entry(request.get("value", {}))
    except Exception as exc:  # the action's failure is its result, as OpenWhisk reports it
        traceback.print_exc(file=sys.stderr)
        return {"error": str(exc)}


def _encode(result: Any) -> str:
    try:
        return json.dumps(result, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        return json.dumps({"error": f"The action's result is not JSON: {exc}"})


def serve(entry: Callable[[Any], Any], requests: TextIO, results: TextIO) -> None:
    """Answer each request line with one result line until standard input closes."""
    for line in requests:
        if not line.strip():
            continue
        result = activate(entry, json.loads(line))
        sys.stdout.flush()
        sys.stderr.flush()
        results.write(_encode(result) + "\n")
        results.flush()


def main(argv: list[str] | None = None) -> int:
    _drop_own_directory()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action_dir")
    parser.add_argument("--main", default="main")
    parser.add_argument("--result-fd", type=int, required=True)
    args = parser.parse_args(argv)
    return launch(os.path.abspath(args.action_dir), args.main, args.result_fd)


def launch(action_dir: str, main: str, result_fd: int,
           prepare: Callable[[Callable[[Any], Any]], Callable[[Any], Any]] = lambda e: e
           ) -> int:
    """Load the action's entry (``prepare`` may wrap it), say ``ok`` on ``result_fd``,
    then answer requests; a failed load is printed on stderr and ends with 1."""
    results = os.fdopen(result_fd, "w", encoding="utf-8")
    try:
        _report_faults(action_dir)
        entry = prepare(load_entry(action_dir, main))
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
