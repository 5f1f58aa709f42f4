"""The placement plan: where each state's work runs, and why (written to plan.json).

The plan is made at compose time from the workflow's shape, the app's settings and the
command line; the Orchestrator reads its options back when it loads.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from .app import App
from .errors import IsolationUnavailable
from .runtime.execution import (
    MPK,
    NONE,
    PARALLEL_PROCESSES,
    PARALLEL_THREADS,
    PROCESS_ISOLATION,
    Options,
)
from .runtime.model import Machine, Map, Parallel, State, Task


def choose_isolation(app: App, requested: str | None) -> tuple[str, str]:
    """The isolation mode and the reason for it; refuses what cannot be given here."""
    if requested is not None:
        mode, reason = requested, "chosen on the command line"
    elif app.settings.isolation is not None:
        mode, reason = app.settings.isolation, "set in faastlane.json"
    elif app.settings.untrusted:
        mode, reason = PROCESS_ISOLATION, (
            "faastlane.json marks untrusted functions and protection keys are not in use: "
            "every function runs in its own process")
    else:
        mode, reason = NONE, "no function is marked untrusted: threads share one heap"
    if mode not in (MPK, PROCESS_ISOLATION, NONE):
        raise IsolationUnavailable(f"unknown isolation mode {mode!r} ({reason}); "
                                   f"use one of {MPK}, {PROCESS_ISOLATION}, {NONE}")
    if mode == MPK:
        raise IsolationUnavailable(
            f"isolation 'mpk' ({reason}) needs private heaps in the cpython-mpk runtime, "
            "which this version of faastlane cannot use yet; run with --isolation process "
            "(a process per function) or --isolation none")
    return mode, reason


def make_options(app: App, isolation: str, vcpus: int | None, threads_only: bool,
                 processes_only: bool) -> Options:
    return Options(isolation=isolation,
                   parallel=PARALLEL_THREADS if threads_only else PARALLEL_PROCESSES,
                   processes_only=processes_only,
                   vcpus=vcpus if vcpus is not None else (app.settings.vcpus or 0))


def _describe(state: State, options: Options) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": type(state).__name__}
    if isinstance(state, Task):
        entry["function"] = state.function
        if options.isolation == PROCESS_ISOLATION or options.processes_only:
            entry["placement"] = "process"
            entry["reason"] = ("isolation=process: the function runs in its own forked "
                               "process; its input and output cross a pipe as JSON")
        else:
            entry["placement"] = "thread"
            entry["reason"] = ("sequential state: the function runs on its own thread of "
                               "the Orchestrator; state passes by reference")
    elif isinstance(state, (Parallel, Map)):
        width = len(state.branches) if isinstance(state, Parallel) else "one per item"
        entry["branches" if isinstance(state, Parallel) else "iterations"] = width
        if options.parallel == PARALLEL_THREADS:
            entry["placement"] = "threads"
            entry["reason"] = "threads-only variant (-Th): parallel work shares the GIL"
        else:
            budget = options.vcpus or "the container's CPU count"
            entry["placement"] = "processes"
            entry["reason"] = (f"parallel work needs CPUs the GIL would deny threads: forked "
                               f"processes, at most {budget} at a time, results over pipes")
        if isinstance(state, Map) and state.max_concurrency:
            entry["max_concurrency"] = state.max_concurrency
    else:
        entry["placement"] = "inline"
        entry["reason"] = "no function: evaluated by the Orchestrator itself"
    return entry


def _states(machine: Machine, options: Options, prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, state in machine.states.items():
        key = f"{prefix}{name}"
        out[key] = _describe(state, options)
        if isinstance(state, Parallel):
            for i, branch in enumerate(state.branches):
                out.update(_states(branch, options, f"{key}/Branches/{i}/"))
        elif isinstance(state, Map):
            out.update(_states(state.iterator, options, f"{key}/ItemProcessor/"))
    return out


def make_plan(app: App, workflow: Machine, options: Options, isolation_reason: str
              ) -> dict[str, Any]:
    """plan.json's content."""
    return {
        "workflow": app.name,
        "options": asdict(options),
        "isolation": {"mode": options.isolation, "reason": isolation_reason},
        "functions": {name: {"module": spec.module_file, "entry": spec.entry,
                             "style": spec.style,
                             "untrusted": name in app.settings.untrusted,
                             "sensitive": name in app.settings.sensitive}
                      for name, spec in app.functions.items()},
        "states": _states(workflow, options, ""),
    }




