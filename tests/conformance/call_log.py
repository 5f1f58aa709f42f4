"""Where the Retry cases' functions log their calls: a small service on an abstract Unix
socket, one per test process.

``flaky.py`` logs each call of an execution and ``count.py`` reads the log. Under
``--isolation process`` each function's /tmp is its own container's, as on Lambda, so
two functions cannot share a file there; they share this service instead, as Lambda
functions share an external store. A case's ``@SCRATCH@`` becomes ``NAME#KEY``: the
socket's name and a key of the execution's own. Requests are one line, ``append KEY``
(log a call now) or ``read KEY``; the answer is the key's call times as JSON.
"""

from __future__ import annotations

import json
import secrets
import socket
import threading
import time

_lock = threading.Lock()
_calls: dict[str, list[float]] = {}
_name: str | None = None


def new_scratch() -> str:
    """A fresh execution's ``@SCRATCH@``: the service's name and a key (started once)."""
    global _name
    with _lock:
        if _name is None:
            _name = f"faastlane-conformance-{secrets.token_hex(6)}"
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind("\0" + _name)
            listener.listen(64)
            threading.Thread(target=_serve, args=(listener,), daemon=True,
                             name="conformance-call-log").start()
        return f"{_name}#{secrets.token_hex(6)}"


def _serve(listener: socket.socket) -> None:
    while True:
        connection, _ = listener.accept()
        with connection:
            connection.settimeout(10)
            try:
                _answer(connection)
            except OSError:
                pass  # a caller that gave up (or a stranger probing @faastlane-* sockets)


def _answer(connection: socket.socket) -> None:
    request = b""
    while not request.endswith(b"\n"):
        chunk = connection.recv(4096)
        if not chunk:
            break
        request += chunk
    op, _, key = request.decode(errors="replace").strip().partition(" ")
    with _lock:
        calls = _calls.setdefault(key, [])
        if op == "append":
            calls.append(time.time())
        answer = json.dumps(calls)
    connection.sendall(answer.encode())
