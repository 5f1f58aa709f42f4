"""One function invocation on the current thread, measured: what every placement calls
(a thread, a forked process, a sandbox). Kept apart from ``execution`` so that a sandbox
(``sandbox.server``) needs nothing of the workflow engine to run its function."""

from __future__ import annotations

import time
from typing import Any

from ..asl.errors import StatesError
from . import flight, lambda_env, trace
from .functions import Invocable

SANDBOX = "sandbox"  # a function in its own warm sandboxed process (trace, plan.json)


def timed_invoke(state_name: str, loaded: Invocable, event: Any,
                  timeout_seconds: float | None, placement: str
                  ) -> tuple[Any, StatesError | None]:
    """Invoke a function, detach its result and, when tracing, record its compute span."""
    traced = trace.enabled  # read once: the span is recorded whole or not at all
    if traced:
        start = trace.now()
        began = time.perf_counter()
    result, error = None, None
    function = loaded.spec.name
    # What this thread runs, for its output's label (functions.current_function).
    current = lambda_env.CURRENT
    current.label = function if state_name == function else f"{state_name}/{function}"
    flight.running(state_name, function)
    try:
        result = loaded.invoke(event, timeout_seconds)
    except StatesError as exc:
        error = exc
    finally:
        current.label = None
        flight.finished()
    if traced:
        compute = time.perf_counter() - began
        trace.record(state=state_name, type="Function", function=loaded.spec.name,
                     start=start, end=trace.now(), compute_ms=round(compute * 1000, 3),
                     placement=placement, error=None if error is None else error.error)
    return result, error
