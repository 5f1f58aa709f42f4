"""The zygote: forked by the Orchestrator before any function module or workflow data
exists, it starts (forks) each sandbox and reaps it, and does nothing else.

It binds every slot's socket when it starts, so that no name can be taken by anyone
else later; a sandbox inherits only its own. Requests come as frames of JSON on the
control socket, from Orchestrator-side processes only (``wire.peer_allowed``):

- ``{"op": "spawn", "f": F, "k": K}``: start slot K of function F unless running;
  answers ``{"pid": N}`` at once (the sandbox imports its function while callers'
  requests already wait on its socket);
- ``{"op": "reap", "f": F, "k": K, "pid": N, "kill": bool}``: the slot's sandbox is
  gone or must go (killed first with ``kill``): answers ``{"status": "..."}`` -- how it
  ended, for the caller's error -- and empties the slot.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from ..engine.functions import FunctionSpec, exit_words
from . import confine, server, view, wire
from .table import Table

if TYPE_CHECKING:
    import socket

_REAP_INTERVAL = 0.5
_GRACE = 1.0  # seconds a sandbox that closed its socket gets to exit before it is killed


class Zygote:
    def __init__(self, prefix: str, root: str, specs: Sequence[FunctionSpec],
                 memory_mb: Sequence[int | None], table: Table, trusted_filters: int) -> None:
        self.root = root
        self.specs = specs
        self.memory_mb = memory_mb
        self.table = table
        self.trusted_filters = trusted_filters
        self.control = wire.listener(wire.address(prefix, "zygote"))
        self.listeners = {(f, k): wire.listener(wire.address(prefix, f"{f}.{k}"))
                          for f in range(len(specs)) for k in range(table.slots)}
        self.children: dict[int, tuple[int, int]] = {}  # pid -> (f, k)
        self.ended: dict[int, str] = {}  # pid -> how it ended, until asked

    def run(self, ready_fd: int) -> NoReturn:
        status = 0
        try:
            confine.die_with_parent()
            # Nothing of the Orchestrator's stays open here (its result pipe, say).
            confine.close_fds_except([ready_fd, self.control.fileno(),
                                      *(s.fileno() for s in self.listeners.values())])
            os.write(ready_fd, b"R")
            os.close(ready_fd)
            self._loop()
        except BaseException:  # noqa: BLE001 - never unwind into the Orchestrator's code
            status = 70
        finally:
            os._exit(status)

    def _loop(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self.control, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select(_REAP_INTERVAL):
                if key.fileobj is self.control:
                    wire.admit(self.control, selector, self.trusted_filters)
                    continue
                # Only sockets are registered (the control socket and admitted peers).
                connection: socket.socket = key.fileobj  # type: ignore[assignment]
                try:
                    request = json.loads(wire.receive(connection))
                    wire.send(connection, json.dumps(self._handle(request)).encode())
                except (wire.PeerGone, OSError, ValueError, KeyError, TypeError):
                    selector.unregister(connection)
                    connection.close()
            self._reap_ended()

    def _handle(self, request: dict[str, Any]) -> dict[str, Any]:
        f, k = int(request["f"]), int(request["k"])
        if (f, k) not in self.listeners:
            raise ValueError("no such slot")
        if request["op"] == "spawn":
            pid = self.table.pid(f, k)
            if pid in self.children:
                return {"pid": pid}
            return {"pid": self._spawn(f, k)}
        if request["op"] == "reap":
            return {"status": self._reap(f, k, int(request["pid"]), bool(request["kill"]))}
        raise ValueError("unknown operation")

    def _spawn(self, f: int, k: int) -> int:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            listener = self.listeners[(f, k)]
            self.table.unmap()
            try:
                contained = view.contain(self.root, self.specs[f], self.specs)
                confine.confine(self.memory_mb[f], [listener.fileno()],
                                None if contained else self.root)
            except Exception as exc:  # noqa: BLE001 - never unwind into the zygote's loop
                sys.stderr.write(f"[faastlane] sandbox of {self.specs[f].name}: cannot "
                                 f"confine it: {type(exc).__name__}: {exc}\n")
                os._exit(71)
            server.serve(listener, self.root, self.specs[f], self.trusted_filters)
        self.children[pid] = (f, k)
        self.table.started(f, k, pid)
        return pid

    def _reap(self, f: int, k: int, pid: int, kill: bool) -> str:
        """How sandbox ``pid`` of slot (f, k) ended; it is killed if asked, or if it
        still runs after a grace period (it closed its socket but stayed)."""
        if self.children.get(pid) != (f, k):
            return self.ended.pop(pid, "ended")
        if kill:
            _kill(pid)
        deadline = time.monotonic() + _GRACE
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() >= deadline:
                _kill(pid)
                _, status = os.waitpid(pid, 0)
                break
            time.sleep(0.005)
        self._forget(pid)
        return exit_words(status)

    def _reap_ended(self) -> None:
        """Reap sandboxes that ended on their own (killed from outside, say): their
        slots are emptied, how they ended is kept for the caller that asks."""
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in self.children:
                self.ended[pid] = exit_words(status)
                self._forget(pid)

    def _forget(self, pid: int) -> None:
        f, k = self.children.pop(pid)
        if self.table.pid(f, k) == pid:
            self.table.emptied(f, k)
        self._drain(f, k)

    def _drain(self, f: int, k: int) -> None:
        """Close the connections still waiting in slot (f, k)'s backlog: they were for
        the sandbox that is gone (one that died importing or confining itself never
        accepted them), and their callers must hear so -- as a closed connection, which
        they report as the sandbox's exit -- instead of waiting on this listener."""
        listener = self.listeners[(f, k)]
        listener.setblocking(False)
        try:
            while True:
                try:
                    connection, _ = listener.accept()
                except (BlockingIOError, InterruptedError):
                    return
                connection.close()
        finally:
            listener.setblocking(True)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


