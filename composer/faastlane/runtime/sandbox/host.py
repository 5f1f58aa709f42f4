"""The Orchestrator's side of the sandboxes: start them, call them, replace them.

:class:`Sandboxes` is made before any function module is imported: it marks the
Orchestrator non-dumpable, forks the zygote, and asks it for the first sandbox of every
isolated function, which imports its module while the Orchestrator imports the trusted
ones. Any Orchestrator-side process (the Orchestrator's threads, pool workers, forked
branches) then calls a function with :meth:`Sandboxes.call`: it takes an idle slot of
the function (or starts one, up to ``slots`` -- the vCPUs -- per function, or queues on
a busy one), keeps one connection per slot and process, and turns every way a call can
end into the ASL error it should be.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterable
from typing import Any

from ..asl.errors import StatesError
from ..engine.execution import CallTimedOut
from ..engine.functions import EXIT_ERROR, FunctionSpec, runtime_exited
from . import confine, view, wire
from .table import BUSY, IDLE, Table
from .zygote import exec_clean

_CONNECT_TIMEOUT = 10.0


class Sandboxes:
    """The warm sandboxed processes of one Orchestrator (and of its forks)."""

    def __init__(self, root: str, specs: Iterable[FunctionSpec], slots: int,
                 memory_mb: int | None = None, workflow: Iterable[FunctionSpec] = ()
                 ) -> None:
        """``specs``: the functions that get sandboxes; ``workflow``: all its functions
        (a sandbox's view hides every other function's code, sandboxed or not)."""
        self.specs = list(specs)
        self.index = {spec.name: f for f, spec in enumerate(self.specs)}
        self.slots = max(1, slots)
        self.table = Table(len(self.specs), self.slots)
        self.prefix = f"faastlane-{os.getpid()}-{secrets.token_hex(8)}"
        self._owner = os.getpid()
        self._lock = threading.Lock()
        self._idle: dict[tuple[int, int], list[tuple[socket.socket, int]]] = {}
        self._control: socket.socket | None = None
        self._turn = 0
        self.memory = [spec.memory or memory_mb for spec in self.specs]
        every = [*self.specs, *workflow]
        self.hidden = [sorted(view.hidden_paths(spec, every)) for spec in self.specs]
        confine.make_undumpable()
        trusted_filters = wire.seccomp_filters()
        read_fd, write_fd = os.pipe()
        sys.stdout.flush()  # else the zygote's copy of unwritten output is written twice
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            exec_clean(self.prefix, root, self.table, trusted_filters, write_fd)
        os.close(write_fd)
        self.table.close_file()
        self.zygote = pid
        self._ready_fd = read_fd
        self._warming: threading.Thread | None = None
        self._warm_error: BaseException | None = None
        os.register_at_fork(after_in_child=self._forked)

    def holds(self, function: str) -> bool:
        return function in self.index

    def names(self) -> frozenset[str]:
        return frozenset(self.index)

    def warm(self) -> None:
        """Start every function's first sandbox (each imports its module then), on a
        thread of its own: the zygote's interpreter starts, and the sandboxes import,
        while the Orchestrator imports the trusted functions (:meth:`warmed` waits)."""
        self._warming = threading.Thread(target=self._warm_all, name="faastlane-sandboxes",
                                         daemon=True)
        self._warming.start()

    def _warm_all(self) -> None:
        try:
            ready = os.read(self._ready_fd, 1)
            os.close(self._ready_fd)
            if ready != b"R":
                raise OSError(f"the sandbox zygote (process {self.zygote}) did not start")
            for f in range(len(self.specs)):
                pid = self._spawn(f, 0)
                # Its environment goes to it first, on a connection kept for later calls.
                try:
                    self._release(f, 0, self._connect(f, 0, initial=True), pid)
                except OSError:
                    continue  # it died at once: its first call reports how (ready, call)
        except BaseException as exc:  # noqa: BLE001 - raised by warmed(), on the caller
            self._warm_error = exc

    def warmed(self) -> None:
        """Wait for :meth:`warm`: every first sandbox started (not yet imported)."""
        if self._warming is not None:
            self._warming.join()
            self._warming = None
        if self._warm_error is not None:
            raise self._warm_error

    def ready(self) -> None:
        """Wait until every first sandbox has imported its function (part of the
        container's cold start, as Lambda's init is)."""
        self.warmed()
        for spec in self.specs:
            try:
                self.call(spec.name, {"ping": True}, None)
            except StatesError:
                # It died starting (os._exit at import, say): as on Lambda, the Task
                # that calls it fails with Runtime.ExitError, not the whole container.
                continue

    # ------------------------------------------------------------------ calling

    def call(self, function: str, request: dict[str, Any], limit: float | None
             ) -> dict[str, Any]:
        """One invocation: the sandbox's reply (``value`` or ``error``/``cause``, and
        ``trace``). CallTimedOut past ``limit`` seconds; a sandbox that dies is a
        ``Runtime.ExitError`` naming it and how it ended."""
        f = self.index[function]
        payload = wire.encode_request(request)
        deadline = request.get("deadline")
        k, connection, pid = self._connection(f)
        if deadline is not None:
            # The time spent waiting for a free sandbox counts: the deadline is the Task's.
            left = deadline - time.monotonic()
            if left <= 0:
                self._release(f, k, connection, pid)
                raise CallTimedOut
            connection.settimeout(left)
        else:
            connection.settimeout(limit)
        try:
            wire.send(connection, payload)
            reply = wire.decode_reply(wire.receive(connection))
        except TimeoutError:
            wire.close_quietly(connection)
            self._reap(f, k, pid, kill=True)
            raise CallTimedOut from None
        except (wire.PeerGone, OSError, ValueError) as exc:
            wire.close_quietly(connection)
            how = self._reap(f, k, pid, kill=True)
            reason = "" if isinstance(exc, wire.PeerGone) else f"; {exc}"
            # Lambda's error for its Task; which process and why, for the log.
            sys.stderr.write(f"[faastlane] function '{function}': sandbox process {pid} "
                             f"exited without a result ({how}{reason})\n")
            raise runtime_exited(how, str(uuid.uuid4())) from None
        if reply.get("recycled"):  # it ends after this reply (out of memory)
            wire.close_quietly(connection)
            self._reap(f, k, pid, kill=False)
        else:
            self._release(f, k, connection, pid)
        if reply.get("late"):  # returned past the deadline: timed out, as on the platform
            raise CallTimedOut
        return reply

    def _connection(self, f: int) -> tuple[int, socket.socket, int]:
        """A slot of function ``f`` and this process's connection to its sandbox."""
        for _attempt in range(3):
            with self._lock:
                self._turn += 1
                k, start = self.table.choose(f, self._turn)
                idle = self._idle.get((f, k))
                cached = idle.pop() if idle else None
            if start:
                pid = self._spawn(f, k)
                self.table.set_state(f, k, BUSY)
                return k, self._connect(f, k, initial=True), pid
            else:
                pid = self.table.pid(f, k)
            if cached is not None:
                connection, for_pid = cached
                if for_pid == pid and _open(connection):
                    return k, connection, pid
                wire.close_quietly(connection)
                if for_pid == pid:  # its sandbox died while idle: replace it, try again
                    self._reap(f, k, pid, kill=True)
                    continue
            if pid == 0:  # emptied meanwhile
                continue
            return k, self._connect(f, k), pid
        raise StatesError(EXIT_ERROR, f"function '{self.specs[f].name}': its sandbox "
                                      f"keeps dying before it can be called")

    def _spawn(self, f: int, k: int) -> int:
        """Have the zygote start slot ``k`` of function ``f``: what it learns of the
        function is its spec without the environment, which goes to the sandbox only
        (:meth:`_connect` ``initial``)."""
        spec = dataclasses.asdict(dataclasses.replace(self.specs[f], environment=()))
        pid: int = self._zygote({"op": "spawn", "f": f, "k": k, "spec": spec,
                                 "hidden": self.hidden[f], "memory": self.memory[f]})["pid"]
        return pid

    def _connect(self, f: int, k: int, initial: bool = False) -> socket.socket:
        """A connection to slot ``k``'s sandbox; ``initial``: it was just started, and
        gets its function's environment first (it imports its module after that)."""
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.settimeout(_CONNECT_TIMEOUT)
        connection.connect(wire.address(self.prefix, f"{f}.{k}"))
        if initial:
            wire.send(connection, wire.encode_request(
                {"init": [list(pair) for pair in self.specs[f].environment]}))
        return connection

    def _release(self, f: int, k: int, connection: socket.socket, pid: int) -> None:
        with self._lock:
            self._idle.setdefault((f, k), []).append((connection, pid))
        if self.table.pid(f, k) == pid:
            self.table.set_state(f, k, IDLE)

    def _reap(self, f: int, k: int, pid: int, kill: bool) -> str:
        """Have the zygote end (``kill``) and reap sandbox ``pid``: how it ended."""
        if not pid:
            return "not started"
        with self._lock:
            stale = self._idle.pop((f, k), [])
        for connection, _ in stale:
            wire.close_quietly(connection)
        try:
            return str(self._zygote({"op": "reap", "f": f, "k": k, "pid": pid,
                                     "kill": kill})["status"])
        except (OSError, ValueError, KeyError, StatesError):
            return "unknown"

    def _zygote(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request to the zygote, on this process's control connection."""
        with self._lock:
            try:
                if self._control is None:
                    control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    control.settimeout(_CONNECT_TIMEOUT)
                    control.connect(wire.address(self.prefix, "zygote"))
                    self._control = control
                wire.send(self._control, json.dumps(request).encode())
                reply: dict[str, Any] = json.loads(wire.receive(self._control))
                return reply
            except (OSError, ValueError, wire.PeerGone) as exc:
                wire.close_quietly(self._control)
                self._control = None
                raise StatesError(EXIT_ERROR, f"the sandbox zygote did not answer: "
                                              f"{exc}") from None

    # ------------------------------------------------------------------ lifecycle

    def _forked(self) -> None:
        """In a fork of an Orchestrator-side process: its connections are the parent's
        (a reply could go to either); this process makes its own."""
        for connections in self._idle.values():
            for connection, _ in connections:
                wire.close_quietly(connection)
        self._idle = {}
        wire.close_quietly(self._control)
        self._control = None
        self._lock = threading.Lock()

    def close(self) -> None:
        """Stop the zygote and with it every sandbox (they die with it)."""
        if os.getpid() != self._owner or self.zygote == 0:
            return
        try:
            os.kill(self.zygote, 9)
            os.waitpid(self.zygote, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        self.zygote = 0
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and self._sandboxes_alive():
            time.sleep(0.01)

    def _sandboxes_alive(self) -> bool:
        for f in range(len(self.specs)):
            for k in range(self.slots):
                pid = self.table.pid(f, k)
                if pid and _exists(pid):
                    return True
        return False


def _open(connection: socket.socket) -> bool:
    """Whether the peer of an idle connection is still there (no byte is pending on an
    idle connection: end-of-file means the sandbox exited)."""
    try:
        connection.setblocking(False)
        return connection.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def _exists(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False
