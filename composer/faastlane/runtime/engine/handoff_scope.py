"""Where the engine's threads allocate the data in flight: a hook isolation fills in.

Under ``--isolation mpk`` the data handed from one function to the next -- an execution's
input, each result, every state's input and output -- lives in the hand-off domain's
heap, under a protection key no function holds (``isolation/handoff.py``). The engine's
threads that make or transform that data run in :func:`held`: the Orchestrator's
execution, the warm worker threads, the threads of service calls and spilled branches.
Elsewhere it does nothing.

Standard library only: this ships inside composed actions.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

_held: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext
_released: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext
_take: Callable[[Any], Any] = lambda value: value  # noqa: E731


def held() -> AbstractContextManager[Any]:
    """The calling thread allocates in the hand-off heap for the body (re-entrant)."""
    return _held()


def released() -> AbstractContextManager[Any]:
    """The calling thread allocates in the shared heap for the body: for what the
    functions' own code reads (a warm thread's Thread object, its records)."""
    return _released()


def take(value: Any) -> Any:
    """A plain JSON value that came from outside (an execution's input), rebuilt in the
    hand-off heap; as it is where there is none."""
    return _take(value)


def install(scope: Callable[[], AbstractContextManager[Any]],
            release: Callable[[], AbstractContextManager[Any]],
            taker: Callable[[Any], Any]) -> None:
    """Set what :func:`held`, :func:`released` and :func:`take` do
    (``isolation.handoff``, once)."""
    global _held, _released, _take
    _held, _released, _take = scope, release, taker
