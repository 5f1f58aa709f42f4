"""Which sandboxes exist and which are busy: a small table in shared memory.

Made by the Orchestrator before it forks anything, so that every process of the
Orchestrator's side -- the zygote, pool workers, forked branches -- sees one table. A
sandbox never maps it (the zygote's child unmaps it before it runs function code): what
a function could write there would at most mislead the choice of a slot.

Per slot (function ``f``, slot ``k``): a state byte and the sandbox's pid. The zygote
writes ``EMPTY``/``STARTED`` and the pid; callers mark a slot ``BUSY`` while they use it
and ``IDLE`` after. Two callers may both take one idle slot: the second then waits for
the first's invocation, nothing worse.
"""

from __future__ import annotations

import mmap
import os
import struct

EMPTY, IDLE, BUSY = 0, 1, 2
_PID = struct.Struct("=i")


class Table:
    def __init__(self, functions: int, slots: int, fd: int | None = None) -> None:
        """A new table (``fd`` None), or the one made by another process, whose memory
        file ``fd`` it passed on (the zygote runs a fresh interpreter: an anonymous
        mapping would not cross its exec)."""
        self.functions = functions
        self.slots = slots
        count = max(1, functions * slots)
        self._count = count
        size = count * (1 + _PID.size)
        self.fd = os.memfd_create("faastlane-sandboxes") if fd is None else fd
        if fd is None:
            os.ftruncate(self.fd, size)
        self._memory = mmap.mmap(self.fd, size)  # MAP_SHARED

    def close_file(self) -> None:
        """Close the memory file (the mapping stays): once the zygote has it."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _at(self, f: int, k: int) -> int:
        return f * self.slots + k

    def state(self, f: int, k: int) -> int:
        return self._memory[self._at(f, k)]

    def set_state(self, f: int, k: int, state: int) -> None:
        self._memory[self._at(f, k)] = state

    def pid(self, f: int, k: int) -> int:
        pid: int = _PID.unpack_from(self._memory, self._count + _PID.size * self._at(f, k))[0]
        return pid

    def set_pid(self, f: int, k: int, pid: int) -> None:
        _PID.pack_into(self._memory, self._count + _PID.size * self._at(f, k), pid)

    def started(self, f: int, k: int, pid: int) -> None:
        self.set_pid(f, k, pid)
        self.set_state(f, k, IDLE)

    def emptied(self, f: int, k: int) -> None:
        self.set_pid(f, k, 0)
        self.set_state(f, k, EMPTY)

    def choose(self, f: int, turn: int) -> tuple[int, bool]:
        """A slot for function ``f``: an idle one (claimed: marked busy), else an empty
        one to start (True), else a busy one to queue on (by ``turn``, round robin)."""
        empty = -1
        for k in range(self.slots):
            state = self.state(f, k)
            if state == IDLE:
                self.set_state(f, k, BUSY)
                return k, False
            if state == EMPTY and empty < 0:
                empty = k
        if empty >= 0:
            return empty, True
        return turn % self.slots, False

    def unmap(self) -> None:
        self._memory.close()
