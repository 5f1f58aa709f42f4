"""Protection domains for function threads: the Orchestrator's face of ``_faastlane``.

``_faastlane`` is a builtin module of the cpython-mpk runtime (see
``cpython-mpk/MODULE.md``).  A protection domain is a memory-protection key plus a
slot of address space tagged with it; a thread inside the domain (between its entry
and exit gates) reaches shared memory and that slot, and nothing of other domains.

This module imports on any Python.  Where ``_faastlane`` is missing (a stock
interpreter) or protection keys are not usable (a CPU without ``pku``, a kernel
without support, ``FAASTLANE_MPK=off``), :func:`status` says why and the Orchestrator
picks another isolation mode; :func:`keys_enabled` applies the ``FAASTLANE_MPK``
setting (``auto`` | ``on`` | ``off``) and fails closed for ``on``.  Standard library
only: it ships inside composed actions.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

T = TypeVar("T")
MODE_VARIABLE = "FAASTLANE_MPK"
MODES = ("auto", "on", "off")

_log = logging.getLogger("faastlane.isolation")

_native: ModuleType | None
try:
    import _faastlane

    _native = _faastlane
except ImportError:
    _native = None
    _MISSING_REASON = (
        f"the _faastlane module is not built into this interpreter "
        f"({sys.executable}, Python {sys.version.split()[0]}): run on the cpython-mpk "
        "runtime (make -C cpython-mpk)"
    )


class IsolationUnavailableError(RuntimeError):
    """Protection-key isolation was required where it cannot be had."""


def _error_class(name: str, base: type[RuntimeError], doc: str) -> type[RuntimeError]:
    """The native exception ``name``, or a look-alike where ``_faastlane`` is missing,
    so that ``except GateError`` works on every interpreter."""
    if _native is not None:
        native: type[RuntimeError] = getattr(_native, name)
        return native
    return type(name, (base,), {"__doc__": doc, "__module__": __name__})


DomainError = _error_class("DomainError", RuntimeError, "A domain operation was refused.")
GateError = _error_class(
    "GateError", DomainError, "Gate misuse: nested enter, exit of a domain not entered, ..."
)
DomainLimitError = _error_class(
    "DomainLimitError", DomainError, "No key or slot is left for another live domain."
)


@dataclass(frozen=True)
class MPKStatus:
    """Whether protection keys can isolate functions here, and if not, why."""

    available: bool
    reason: str | None
    # "keys": enforced; "no-keys": bookkeeping only; "missing": no _faastlane at all.
    implementation: str


def status() -> MPKStatus:
    """Detect (never assume) protection-key support of this interpreter and host."""
    if _native is None:
        return MPKStatus(False, _MISSING_REASON, "missing")
    return MPKStatus(
        bool(_native.available()), _native.unavailable_reason(), _native.implementation()
    )


def status_in_use(environ: Mapping[str, str] = os.environ) -> MPKStatus:
    """:func:`status` under the ``FAASTLANE_MPK`` setting: not available when it is
    ``off``, whatever the CPU has."""
    if requested_mode(environ) == "off":
        return MPKStatus(False, f"{MODE_VARIABLE}=off", "off")
    return status()


def available() -> bool:
    """True when domains are enforced by hardware protection keys."""
    return status().available


def unavailable_reason() -> str | None:
    """Why protection keys are not in use, or None when they are."""
    return status().reason


def requested_mode(environ: Mapping[str, str] = os.environ) -> str:
    """The ``FAASTLANE_MPK`` setting: ``auto`` (the default), ``on`` or ``off``."""
    mode = environ.get(MODE_VARIABLE, "auto").strip().lower() or "auto"
    if mode not in MODES:
        raise ValueError(f"{MODE_VARIABLE}={mode!r}: expected one of {', '.join(MODES)}")
    return mode


_fallback_reported = False


def keys_enabled(mode: str | None = None) -> bool:
    """Whether to isolate with protection keys under ``mode`` (default: the setting).

    ``on`` raises :class:`IsolationUnavailableError` naming what is missing; ``auto`` falls
    back and logs the reason once; ``off`` never uses keys.
    """
    global _fallback_reported
    mode = requested_mode() if mode is None else mode
    if mode not in MODES:
        raise ValueError(f"isolation mode {mode!r}: expected one of {', '.join(MODES)}")
    if mode == "off":
        return False
    current = status()
    if current.available:
        return True
    if mode == "on":
        raise IsolationUnavailableError(
            f"MPK isolation required ({MODE_VARIABLE}=on) but unavailable: {current.reason}"
        )
    if not _fallback_reported:
        _fallback_reported = True
        _log.warning("protection keys unavailable, domains run unenforced: %s", current.reason)
    return False


class ProtectionDomain:
    """The protection domain of one function: a key and a slot, until :meth:`destroy`.

    Creating one raises :class:`DomainLimitError` when 15 are live, and
    :class:`IsolationUnavailableError` on an interpreter without ``_faastlane``.  Without
    hardware keys (``status().implementation == "no-keys"``) the bookkeeping runs
    but nothing is enforced.

    With ``private_heap=True`` every Python allocation of a thread inside the domain
    lands in its slot (cpython-mpk/PRIVATE_HEAPS.md).  Then no object made inside may
    reach a thread outside after the exit gate: results must be copied out.
    """

    _registry: dict[int, ProtectionDomain] = {}
    _registry_lock = threading.Lock()

    def __init__(self, name: str, private_heap: bool = False) -> None:
        if _native is None:
            raise IsolationUnavailableError(_MISSING_REASON)
        self.name = name
        self._domain = _native.Domain(private_heap=True) if private_heap else _native.Domain()
        with self._registry_lock:
            self._registry[id(self._domain)] = self

    @property
    def key(self) -> int | None:
        """The protection key, or None without keys or once destroyed."""
        key: int | None = self._domain.key
        return key

    @property
    def slot(self) -> int:
        """Index of the domain's address slot."""
        slot: int = self._domain.slot
        return slot

    @property
    def private_heap(self) -> bool:
        """True when Python allocations inside the domain go to its slot."""
        return bool(getattr(self._domain, "private_heap", False))

    def heap_stats(self) -> dict[str, int] | None:
        """Counters of the private heap (arenas, large blocks, free extents), or None."""
        stats: dict[str, int] | None = self._domain.heap_stats()
        return stats

    @property
    def alive(self) -> bool:
        """False once destroyed."""
        return bool(self._domain.alive)

    def contains(self, address: int) -> bool:
        """Whether ``address`` lies in this domain's slot (arithmetic, no memory read)."""
        base: int = self._domain.base
        return self.alive and base <= address < base + self._domain.size

    @contextmanager
    def entered(self) -> Iterator[ProtectionDomain]:
        """Run the body inside the domain on the calling thread; always exit after.

        Raises :class:`GateError` if this thread is already inside a domain (domains
        do not nest) or the domain was destroyed.
        """
        self._domain.enter()
        try:
            yield self
        finally:
            self._domain.exit()

    def run_sealed(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` inside the domain with this thread *sealed*: nothing it
        runs can leave the domain or enter another through the gates (MODULE.md, "The
        seal"); threads it starts are sealed for life. What it returns must be shared;
        an exception leaves without traceback or context."""
        result: T = self._domain.run_sealed(function, *args)
        return result

    def run_sealed_on(self, value: Any, function: Callable[..., T], *args: Any
                      ) -> tuple[T, Any]:
        """``run_sealed(function, copy, *args)``, where ``copy`` is the domain's own deep
        copy of the plain JSON ``value``, made in C right after the entry gate: a value
        in the hand-off domain's heap is read there with the hand-off key granted for
        the copy only (:mod:`.handoff`). TypeError if ``value`` is not plain JSON.
        Returns its result and what the call handed off last (``hand_off``), or None."""
        result: tuple[T, Any] = self._domain.run_sealed_on(value, function, *args)
        return result

    def make_handoff(self) -> None:
        """Make this domain (with a private heap) the process's hand-off domain: threads
        outside every domain hold its key from now on, function code never does."""
        _native.set_handoff(self._domain)  # type: ignore[union-attr]  # a domain: _native is set

    def is_current(self) -> bool:
        """Whether the calling thread is inside this domain."""
        return _native.current_domain() is self._domain  # type: ignore[union-attr]  # as above

    def enter(self) -> None:
        """The entry gate alone (:meth:`entered` pairs it with the exit gate)."""
        self._domain.enter()

    def exit(self) -> None:
        """The exit gate alone."""
        self._domain.exit()

    def threads_inside(self) -> int:
        """How many threads are between this domain's gates now."""
        entered: int = self._domain.entered
        return entered

    def shared_referrers(self) -> list[object]:
        """Shared GC-tracked objects holding a pointer into the slot (addresses compared,
        nothing in the slot read): after a function returned, its escapes."""
        found: list[object] = self._domain.shared_referrers()
        return found

    def visible_items(self, container: object) -> list[Any]:
        """A shared dict's (key, value) pairs, or a list's, tuple's or set's items,
        without those holding another domain's objects: skipped by address, never
        read (iterating in Python would touch them, and fault)."""
        items: list[Any] = self._domain.visible_items(container)  # pairs, or items
        return items

    def destroy(self) -> None:
        """Zero the slot, retag it inaccessible, free the key (in that order).

        Raises :class:`GateError` while a thread is inside.
        """
        self._domain.destroy()
        with self._registry_lock:
            self._registry.pop(id(self._domain), None)

    def __repr__(self) -> str:
        state = f"key={self.key} slot={self.slot}" if self.alive else "destroyed"
        return f"<ProtectionDomain {self.name!r} {state}>"


def native_module() -> ModuleType:
    """``_faastlane`` itself; :class:`IsolationUnavailableError` where it is missing."""
    if _native is None:
        raise IsolationUnavailableError(_MISSING_REASON)
    return _native


def current_domain() -> ProtectionDomain | None:
    """The domain the calling thread is inside, or None (also without ``_faastlane``)."""
    if _native is None:
        return None
    raw = _native.current_domain()
    if raw is None:
        return None
    with ProtectionDomain._registry_lock:
        return ProtectionDomain._registry.get(id(raw))


def gate_counters() -> dict[str, int]:
    """Process-wide counts of domains and gate crossings (empty without ``_faastlane``)."""
    if _native is None:
        return {}
    counters: dict[str, int] = _native.counters()
    return counters
