"""OpenWhisk's REST front for one action over a fixed set of warm containers.

A small controller on 127.0.0.1 answers OpenWhisk's
``POST /api/v1/namespaces/_/actions/NAME?blocking=true&result=true`` by running the
activation in a free warm container (an :class:`~.action_pool.ActionProcess`, the
OpenWhisk ``/init`` + ``/run`` protocol), as an invoker with warm containers does. The
Orchestrator's spilled Parallel/Map groups reach copies of the action through it, as on
OpenWhisk (``runtime/parallel/invokers.py``); it counts them.
"""

from __future__ import annotations

import json
import queue
import socket
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from faastlane.runtime.parallel.protocol import GROUP_KEY

from .action_pool import ActionProcess

AUTH = "bench:placement"  # the key the containers use for their own invocations


class Controller:
    """OpenWhisk's REST front for one action over a fixed set of warm containers."""

    def __init__(self, containers: list[ActionProcess]) -> None:
        self.free: queue.Queue[ActionProcess] = queue.Queue()
        for container in containers:
            self.free.put(container)
        self.groups = 0  # sub-workflow invocations seen (spilled groups)
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def activate(self, name: str, body: bytes) -> tuple[int, bytes]:
        if GROUP_KEY.encode() in body[:64]:
            with self.lock:
                self.groups += 1
        container = self.free.get()  # wait for a warm container, as the invoker queues
        try:
            status, answer = container.activate(name, body, AUTH)
        finally:
            self.free.put(container)
        if status != 200:
            return 502, json.dumps({"error": answer.decode("utf-8", "replace")}).encode()
        failed = answer.startswith(b'{"error"')
        return (502 if failed else 200), answer

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _handler(controller: Controller) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            path = urllib.parse.urlsplit(self.path).path.split("/")
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, answer = (controller.activate(path[-1], body or b"{}")
                              if path[-2:-1] == ["actions"] else (404, b"{}"))
            head = (f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(answer)}\r\n"
                    f"\r\n").encode()
            self.wfile.write(head + answer)  # one write: no wait for a delayed ACK

    return Handler
