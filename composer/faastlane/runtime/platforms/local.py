"""Running a composed action on this machine: ``python ACTION_DIR --input '{...}'``.

The action folder's ``__main__.py`` is OpenWhisk's entry point and, when run as a script,
this command line. The workflow's output is the only thing written to standard output:
functions' own prints (their logs, on a real platform) go to standard error, at the file
descriptor level so that C code and forked branches obey it too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from ..action_plan import ActionPlan
from ..asl.errors import error_object
from ..engine import fault_reports, flight, functions, history, modes, trace
from ..isolation import domains
from ..options import PARALLEL_PROCESSES, PARALLEL_THREADS
from ..orchestrator import SUCCEEDED, Orchestrator, Result
from ..run_options import BadInput, add_input, add_placement, add_recording, read_input
from . import labelled_output, shutdown

# This file is faastlane_runtime/platforms/local.py inside the action folder.
ACTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Run this composed Faastlane workflow locally.")
    add_input(parser)
    add_placement(parser)
    add_recording(parser)
    parser.add_argument("--source-root", metavar="APP",
                        help="the app folder this action was composed from: stack traces "
                             "name its files (faastlane run passes it)")
    parser.add_argument("--parent", type=int, metavar="PID",
                        help="the faastlane command that started this run: the run stops, "
                             "with everything it started, when that process dies")
    parser.add_argument("--flight", metavar="FILE",
                        help="record which states run into FILE (made by faastlane run), "
                             "which names them if this process dies")
    parser.add_argument("--source-folder", action="append", default=[],
                        metavar="FOLDER=SOURCE",
                        help="a function folder of the action and the folder it was copied "
                             "from (a template's CodeUri): stack traces name its files")
    return parser


def _die(message: str) -> None:
    sys.stderr.write(f"faastlane: error: {message}\n")
    raise SystemExit(2)


def main(load: Callable[[ActionPlan], Orchestrator], argv: list[str] | None = None) -> int:
    """Run one execution; ``load(plan)`` builds the Orchestrator (importing every
    function) after standard output has been handed to standard error, so that even a
    function's module-level prints cannot mix with the result."""
    shutdown.install()
    args = _parser().parse_args(argv)
    if args.parent:
        shutdown.stop_with(args.parent)
    if args.source_root:
        functions.show_sources_from(args.source_root, dict(
            item.split("=", 1) for item in args.source_folder if "=" in item))
    if args.trace not in (None, "-"):
        args.trace = os.path.abspath(args.trace)
    if args.history:
        args.history = os.path.abspath(args.history)
    # plan.json, read once; --isolation changes the mode the functions are loaded for.
    plan = ActionPlan.read(ACTION_ROOT).overriding(args.isolation)
    # The functions' working directory is the task root, the action folder, as on Lambda
    # (/var/task) and in the OpenWhisk action (action_launcher), not wherever the user
    # stood; one for every function, as threads share it.
    os.chdir(ACTION_ROOT)
    result_fd = os.dup(1)
    sys.stdout.flush()
    os.dup2(2, 1)  # from here on, anything printed goes to stderr
    if not modes.for_options(plan.options).loads_privately():
        labelled_output.install()
        return _run(load, plan, args, result_fd)

    def report(error: str, cause: str) -> None:
        if error == functions.EXIT_ERROR and args.flight:  # not an isolation violation
            cause += flight.while_running(args.flight)
        _write_result(result_fd, error_object(error, cause))

    # Functions in protection domains: a fault kills the process, so run it supervised.
    return fault_reports.supervise(
        lambda: _run(load, plan, args, result_fd), report)


def _run(load: Callable[[ActionPlan], Orchestrator], plan: ActionPlan,
         args: argparse.Namespace, result_fd: int) -> int:
    if args.flight:  # here: under mpk, this is the supervised process
        flight.record_to(args.flight)
    try:
        orchestrator = load(plan)
    except domains.IsolationUnavailableError as exc:
        _die(str(exc))
    # The input is read only now: the sandboxes' zygote, forked while the functions
    # load, must not carry it (a state may hand a function a part of it only).
    try:
        args.input_text, execution_input = read_input(args)
    except BadInput as exc:
        orchestrator.close()
        _die(str(exc))
    parallel = PARALLEL_THREADS if args.threads_only else (
        PARALLEL_PROCESSES if args.processes_only else None)
    options = orchestrator.with_options(
        vcpus=args.vcpus, parallel=parallel,
        processes_only=True if args.processes_only else None)
    if args.trace:
        trace.enable()
    if args.history:
        history.enable()
    start = trace.now()
    result = orchestrator.execute(execution_input, options)
    end = trace.now()
    sys.stdout.flush()
    if args.trace:
        header = {"workflow": orchestrator.name, "status": result.status,
                  "isolation": options.isolation, "parallel": options.parallel,
                  "processes_only": options.processes_only,
                  "vcpus": options.cpu_budget(), "start": start, "end": end,
                  "end_to_end_ms": round((end - start) * 1000, 3)}
        if orchestrator.mode.loads_privately():
            header["mpk"] = domains.status().implementation  # "keys" or "no-keys"
            from ..isolation.private_heaps import malloc_routed  # loaded only in mpk mode

            header["mpk_malloc"] = "routed" if malloc_routed() else "shared"
        _write_trace(args.trace, header, [r for r in trace.take() if not history.carried(r)])
    if args.history:
        events = result.history or []
        history.given_input(events, args.input_text)
        _write_history(args.history, events)
    _write_result(result_fd, result.to_json())
    if result.status != SUCCEEDED:
        _report_failure(result)
    return 0 if result.status == SUCCEEDED else 1


def _write_trace(target: str, header: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """The timeline on stderr (``-``) or in its own file, apart from functions' output."""
    if target == "-":
        trace.write(sys.stderr, header, records)
        return
    with open(target, "w", encoding="utf-8") as stream:
        trace.write(stream, header, records)


def _write_history(target: str, events: list[dict[str, Any]]) -> None:
    try:
        history.write(target, events)
    except OSError as exc:
        sys.stderr.write(f"faastlane: error: cannot write the history to {target}: "
                         f"{exc.strerror}\n")


def _report_failure(result: Result) -> None:
    """Say on stderr, for a person, which state failed and why: the result on stdout
    keeps Step Functions' shape (a Lambda error's cause is JSON inside a string)."""
    where = f" in state '{result.state}'" if result.state else ""
    try:
        document = json.loads(result.cause or "")
    except ValueError:
        document = None
    if isinstance(document, dict) and "errorMessage" in document:
        message = f"{document.get('errorType', result.error)}: {document['errorMessage']}"
        stack = "".join(document.get("stackTrace") or [])
    else:
        message, stack = f"{result.error}: {result.cause or ''}".rstrip(": "), ""
    sys.stderr.write(f"faastlane: the execution failed{where}: {message}\n")
    if stack:
        sys.stderr.write("Traceback (the function's frames):\n" + stack)


def _write_result(result_fd: int, value: Any) -> None:
    try:
        with os.fdopen(result_fd, "w", encoding="utf-8") as out:
            out.write(json.dumps(value) + "\n")
    except BrokenPipeError:
        pass  # the reader went away (`| head -1`): nothing to say, as Unix tools do
