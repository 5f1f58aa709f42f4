"""The hand-off domain: data in flight between functions, under a key of its own.

Under ``--isolation mpk`` a function's result, once it leaves the function, and the
state data the Orchestrator makes from it until the next function's entry gate live in
the heap of one more protection domain, the hand-off domain. Its key is held by every
thread of the runtime outside the functions' domains (``_faastlane.set_handoff``: the
outside PKRU grants it) and by no function: a function's domain grants key 0 and its own
key, and a thread function code starts leaves its domain with key 0 only. So the data in
flight is readable by the Orchestrator and, through the copy its entry gate makes, by
the receiving function -- by nobody else, whatever reference function code may find.

The runtime's threads that make or transform state data allocate there
(``engine.handoff_scope.held``, filled in here). Around a function's entry and exit
they step out (:func:`outside`): what the runtime keeps per function and per thread
(records, thread-local state) stays in the shared heap, where that function can read
it. A function's input crosses its entry gate as a private deep copy made in C with
the hand-off key granted for the copy only (``Domain.run_sealed_on``); its result is
rebuilt there by the sealed invoker (``_faastlane.hand_off``) -- one that is not plain
JSON is promoted into the shared heap, reachable only from the invoking frame, and moved
in by :func:`take`. Design: docs/security.md section 3b.

Standard library only: this ships inside composed actions.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any

from ..asl.errors import StatesError
from ..engine import fault_reports, handoff_scope
from . import domains, hardening

NAME = "the hand-off data"  # how fault reports and refusals name its owner

_domain: domains.ProtectionDomain | None = None
# Touched before a thread first enters: what a thread makes for itself on its first
# use of a threading.local (the key of its per-thread dicts, each local's dict) is read
# again inside the functions it runs, so it must be made in the shared heap.
_per_thread = threading.local()
_read_inside: list[threading.local] = [_per_thread]


def read_inside(local: threading.local) -> None:
    """``local``'s per-thread dicts are read inside functions: made before a thread
    first enters the hand-off heap (register at import, outside every domain)."""
    _read_inside.append(local)


def activate() -> None:
    """Create the hand-off domain and give its key to the runtime's threads (once, before
    the functions' domains and the warm threads)."""
    global _domain
    if _domain is not None:
        return
    domain = domains.ProtectionDomain(NAME, private_heap=True)
    domain.make_handoff()
    fault_reports.announce(domain.slot, domain.key, NAME)
    # The hardening judges a thread by its domain: the code in this one is the runtime's.
    hardening.name_runtime_domain(domain.slot)
    _domain = domain
    handoff_scope.install(_Inside, outside, take)


def active() -> bool:
    return _domain is not None


class _Inside:
    """Allocate in the hand-off heap for the body; nothing if already there."""

    __slots__ = ("entered",)

    def __enter__(self) -> None:
        assert _domain is not None
        self.entered = not _domain.is_current()
        if self.entered:
            if not hasattr(_per_thread, "made"):
                for local in _read_inside:
                    local.__dict__  # noqa: B018 - made here, shared
                _per_thread.made = True
            _domain.enter()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.entered:
            _domain.exit()  # type: ignore[union-attr]


class outside:  # noqa: N801 - used as a context manager, named as one
    """Allocate in the shared heap for the body, if the thread was in the hand-off heap:
    around a function's gates, whose bookkeeping that function reads."""

    __slots__ = ("left",)

    def __enter__(self) -> None:
        self.left = _domain is not None and _domain.is_current()
        if self.left:
            _domain.exit()  # type: ignore[union-attr]

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.left:
            _domain.enter()  # type: ignore[union-attr]


def take(value: Any) -> Any:
    """``value`` (plain JSON) rebuilt in the hand-off heap, every leaf but the immortal
    ones new: nothing of it stays in key 0. As it is without a hand-off domain."""
    if _domain is None:
        return value
    with _Inside():
        return domains.native_module().deep_copy_json(value)


def take_error(error: StatesError) -> StatesError:
    """A function's error, its name and cause moved into the hand-off heap."""
    if _domain is None:
        return error
    copy = domains.native_module().deep_copy_json
    with _Inside():
        # Its own class (an IsolationError names the function), message and all new.
        moved = StatesError.__new__(type(error))
        StatesError.__init__(moved, copy(error.error), copy(error.cause))
        for name, value in vars(error).items():
            if name not in ("error", "cause"):
                setattr(moved, name, value)
    return moved
