"""The zygote: a fresh interpreter the Orchestrator starts before any function module is
imported; it starts (forks) each sandbox and reaps it, and does nothing else.

It is exec'd clean (:func:`exec_clean`), not forked and kept: a fork of the Orchestrator
would carry into every sandbox what the Orchestrator holds -- the workflow, every
function's spec and environment. It learns a function's spec (without its environment,
which the Orchestrator hands to the sandbox itself, ``server.serve``) only in the
request to fork a sandbox of it.

It binds every slot's socket when it starts, so that no name can be taken by anyone
else later; a sandbox inherits only its own. Requests come as frames of JSON on the
control socket, from Orchestrator-side processes only (``wire.peer_allowed``):

- ``{"op": "spawn", "f": F, "k": K, "spec": {...}, "hidden": [...], "memory": MB}``:
  start slot K of function F (its spec without environment, the action's paths its
  view hides, its memory limit) unless running; answers ``{"pid": N}`` at once (the
  sandbox imports its function while callers' requests already wait on its socket);
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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from ..engine import inherited
from ..engine.functions import FunctionSpec, exit_words
from . import confine, view, wire
from .table import Table

if TYPE_CHECKING:
    import socket

_REAP_INTERVAL = 0.5
_GRACE = 1.0  # seconds a sandbox that closed its socket gets to exit before it is killed

# The exec'd interpreter's program: its settings come on a pipe (argv is readable by
# any process of the same user).
_MAIN = ("import importlib, json, os, sys; c = json.loads(os.read(int(sys.argv[1]), 1 << 20)); "
         "sys.path[:] = c['path']; importlib.import_module(c['module']).main(c)")


def exec_clean(prefix: str, root: str, table: Table, trusted_filters: int,
               ready_fd: int) -> NoReturn:
    """In the Orchestrator's fresh fork: become the zygote, a new interpreter that keeps
    only the table's memory file and the ready pipe of this process."""
    try:
        confine.close_fds_except([ready_fd, table.fd])
        settings_read, settings_write = os.pipe()
        settings = {"prefix": prefix, "root": root, "functions": table.functions,
                    "slots": table.slots, "table_fd": table.fd, "ready_fd": ready_fd,
                    "trusted_filters": trusted_filters, "path": sys.path,
                    "module": __name__, "setup": inherited.steps()}
        os.write(settings_write, json.dumps(settings).encode())
        os.close(settings_write)
        for fd in (ready_fd, table.fd, settings_read):
            os.set_inheritable(fd, True)
        os.execv(sys.executable, [sys.executable, "-c", _MAIN, str(settings_read)])
    except BaseException:  # noqa: BLE001 - never unwind into the Orchestrator's code
        os._exit(70)


def main(settings: dict[str, Any]) -> NoReturn:
    """The exec'd zygote's life."""
    try:
        # exec made it dumpable again: its sandboxes must not be (their /proc files).
        confine.make_undumpable()
        confine.die_with_parent()
        inherited.repeat(settings["setup"])
        table = Table(settings["functions"], settings["slots"], settings["table_fd"])
        table.close_file()
        zygote = Zygote(settings["prefix"], settings["root"], table,
                        settings["trusted_filters"])
    except BaseException:  # noqa: BLE001 - the Orchestrator hears it on the ready pipe
        os._exit(70)
    zygote.run(settings["ready_fd"])


class Zygote:
    def __init__(self, prefix: str, root: str, table: Table, trusted_filters: int) -> None:
        self.root = root
        self.table = table
        self.trusted_filters = trusted_filters
        self.control = wire.listener(wire.address(prefix, "zygote"))
        self.listeners = {(f, k): wire.listener(wire.address(prefix, f"{f}.{k}"))
                          for f in range(table.functions) for k in range(table.slots)}
        self.children: dict[int, tuple[int, int]] = {}  # pid -> (f, k)
        self.ended: dict[int, str] = {}  # pid -> how it ended, until asked
        # The sandbox's life (server.serve), imported once the zygote is up (run).
        self.serve: Callable[[socket.socket, str, FunctionSpec, int], NoReturn]

    def run(self, ready_fd: int) -> NoReturn:
        status = 0
        try:
            confine.die_with_parent()
            # Nothing of the Orchestrator's stays open here (its result pipe, say).
            confine.close_fds_except([ready_fd, self.control.fileno(),
                                      *(s.fileno() for s in self.listeners.values())])
            os.write(ready_fd, b"R")
            os.close(ready_fd)
            # Imported now, once (every sandbox is forked with it), while the
            # Orchestrator goes on: the sockets are bound, its requests wait for this.
            from . import server

            self.serve = server.serve
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
            spec = FunctionSpec(**{**request["spec"], "environment": ()})
            return {"pid": self._spawn(f, k, spec, set(request["hidden"]),
                                       request.get("memory"))}
        if request["op"] == "reap":
            return {"status": self._reap(f, k, int(request["pid"]), bool(request["kill"]))}
        raise ValueError("unknown operation")

    def _spawn(self, f: int, k: int, spec: FunctionSpec, hidden: set[str],
               memory_mb: int | None) -> int:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            listener = self.listeners[(f, k)]
            self.table.unmap()
            try:
                contained = view.contain(self.root, hidden)
                confine.confine(memory_mb, [listener.fileno()],
                                None if contained else self.root)
            except Exception as exc:  # noqa: BLE001 - never unwind into the zygote's loop
                sys.stderr.write(f"[faastlane] sandbox of {spec.name}: cannot "
                                 f"confine it: {type(exc).__name__}: {exc}\n")
                os._exit(71)
            self.serve(listener, self.root, spec, self.trusted_filters)
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


