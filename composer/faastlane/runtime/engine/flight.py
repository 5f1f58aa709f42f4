"""What the Orchestrator's threads are running, kept where its crash cannot erase it.

Under a thread mode a function that ends the shared process (``os._exit``, a fatal
signal) takes the Orchestrator with it: nothing left in the process can say which state
ran. So each invocation writes its state and function into its thread's slot of a
memory-mapped file (a store to memory, no system call) and clears it after; the process
that started the Orchestrator reads the slots when it died (:func:`running_in`).
Recording is off unless the starter asked for it (``faastlane run``): one global test.
"""

from __future__ import annotations

import itertools
import mmap
import os
import threading

_SLOTS = 64  # threads at once; more share slots (the report may then miss one)
_SLOT = 256  # bytes: a running flag, "state\0function\0", cut to fit
_SIZE = _SLOTS * _SLOT

_map: mmap.mmap | None = None
_local = threading.local()
_next_slot = itertools.count()


def record_to(path: str) -> None:
    """Record into ``path`` (made by the starter with :func:`prepare`)."""
    global _map
    fd = os.open(path, os.O_RDWR)
    try:
        _map = mmap.mmap(fd, _SIZE)
    finally:
        os.close(fd)


def _forget() -> None:
    # A forked child (a sandbox, a Parallel branch's process) is not the Orchestrator:
    # its parent reports its death itself.
    global _map
    _map = None


os.register_at_fork(after_in_child=_forget)


def prepare(path: str) -> None:
    """Create the recording file, every slot empty."""
    with open(path, "wb") as handle:
        handle.truncate(_SIZE)


def _slot() -> int:
    slot = getattr(_local, "slot", None)
    if slot is None:
        slot = _local.slot = next(_next_slot) % _SLOTS
    offset: int = slot * _SLOT
    return offset


def running(state: str, function: str) -> None:
    """This thread now runs ``function`` for ``state`` (``""``: its module's init)."""
    if _map is None:
        return
    data = b"\1" + f"{state}\0{function}".encode()[:_SLOT - 2] + b"\0"
    offset = _slot()
    _map[offset:offset + len(data)] = data


def finished() -> None:
    """This thread's function returned."""
    if _map is not None:
        _map[_slot()] = 0


def running_in(path: str) -> list[tuple[str, str]]:
    """The (state, function) pairs a dead Orchestrator was running, from its recording."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(_SIZE)
    except OSError:
        return []
    found = []
    for offset in range(0, len(data), _SLOT):
        if data[offset]:
            state, _, rest = data[offset + 1:offset + _SLOT].partition(b"\0")
            function = rest.partition(b"\0")[0]
            found.append((state.decode(errors="replace"), function.decode(errors="replace")))
    return found


def while_running(path: str) -> str:
    """`` while running state 'B' (function 'b')...`` and how to contain such a crash,
    from the recording of an Orchestrator that died; empty if it ran no function."""
    running_now = running_in(path)
    if not running_now:
        return ""
    shown = ", ".join(f"state '{state}' (function '{function}')" if state
                      else f"the init of function '{function}'"
                      for state, function in running_now)
    return (f" while running {shown}; a function in its own sandboxed process "
            "(--isolation process, the function not marked trusted) fails only its Task "
            "on such a crash, as on Lambda, and Retry and Catch apply")
