"""Faastlane on several containers: the composed action behind an OpenWhisk REST front.

The system under test of the placement figure (``placement.py``). ``containers`` action
servers (``runtime/platforms/action_server.py``, the OpenWhisk ``/init`` + ``/run`` protocol), each
pinned to its cpuset as ``docker run --cpuset-cpus`` would pin a container, are all
initialised with the same composed action. A small controller on 127.0.0.1 answers
OpenWhisk's ``POST /api/v1/namespaces/_/actions/NAME?blocking=true&result=true`` by
running the activation in a free warm container, as an invoker with warm containers does.
An execution is one such activation; when the Orchestrator spills a Parallel/Map group it
invokes the same action through the same front (``runtime/parallel/invokers.py``), exactly as on
OpenWhisk, and the group runs in another container.
"""

from __future__ import annotations

import base64
import http.client
import io
import json
import os
import queue
import socket
import tempfile
import threading
import time
import urllib.parse
import uuid
import zipfile
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from faastlane.compose.action import prepare, write_action
from faastlane.runtime.parallel.protocol import GROUP_KEY

from .action_pool import ActionProcess
from .worker import RunResult

ACTION = "faastlane-app"
AUTH = "bench:placement"  # the key the containers use for their own invocations


def action_zip(app: str, planning: dict[str, Any], scratch: str) -> bytes:
    """The composed action as OpenWhisk's zip (``__main__.py`` at the top)."""
    folder = os.path.join(scratch, "action")
    write_action(prepare(app, **planning), folder)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for root, dirs, files in os.walk(folder):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                path = os.path.join(root, name)
                archive.write(path, os.path.relpath(path, folder))
    return buffer.getvalue()


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
            envelope = json.dumps({"activation_id": uuid.uuid4().hex, "namespace": "_",
                                   "action_name": f"/_/{name}", "api_key": AUTH,
                                   "deadline": str(int((time.time() + 600) * 1000))})
            container.connection.request(
                "POST", "/run", body=b'{"value":' + body + b"," + envelope[1:].encode(),
                headers={"Content-Type": "application/json"})
            response = container.connection.getresponse()
            answer = response.read()
        finally:
            self.free.put(container)
        if response.status != 200:
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


class DockerAction(ActionProcess):
    """The same container protocol in a real container of the runtime image
    (``docker run --network host --cpuset-cpus ...``): for checking the process
    stand-ins against Docker."""

    def __init__(self, image: str, cpus: set[int]) -> None:
        import subprocess

        port = _free_port()
        self.container = subprocess.run(
            ["docker", "run", "-d", "--rm", "--network", "host", "--cpuset-cpus",
             ",".join(map(str, sorted(cpus))), image, "--host", "127.0.0.1", "--port",
             str(port)], capture_output=True, text=True, check=True).stdout.strip()
        deadline = time.monotonic() + 120
        while True:
            try:
                self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
                self.connection.connect()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self.connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.port = port
        self.log_path = f"docker logs {self.container}"

    def stop(self) -> None:
        import subprocess

        self.connection.close()
        subprocess.run(["docker", "rm", "-f", self.container], capture_output=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class SpillingSystem:
    """Worker system ``faastlane-containers``: spec ``planning`` (compose options),
    ``cpu_sets`` (one per container, ``containers`` of them), ``spill`` (the
    containers' FAASTLANE_SPILL: ``always`` or ``auto``) and optionally
    ``docker_image`` (containers of that image instead of pinned processes)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.scratch = tempfile.mkdtemp(prefix="faastlane-bench-spill-")
        code = base64.b64encode(action_zip(spec["app"], spec["planning"], self.scratch))
        cpu_sets = [set(c) for c in spec["cpu_sets"]]
        image = spec.get("docker_image")
        with ThreadPoolExecutor(max_workers=len(cpu_sets)) as pool:
            self.containers = list(pool.map(
                lambda c: DockerAction(image, c) if image else ActionProcess(self.scratch, c),
                cpu_sets))
        self.controller = Controller(self.containers)
        env = {"__OW_API_HOST": self.controller.url, "FAASTLANE_SPILL": spec["spill"]}
        for container in self.containers:
            status, body = container.post("/init", {"value": {
                "main": "main", "binary": True, "code": code.decode(), "env": env}})
            if status != 200:
                raise RuntimeError(f"/init failed ({status}): {body}")
        self.connection_lock = threading.Lock()

    def run(self, execution_input: Any, traced: bool) -> RunResult:
        body = json.dumps(execution_input).encode()
        connection = http.client.HTTPConnection("127.0.0.1", self.controller.server.server_port,
                                                timeout=600)
        groups_before = self.controller.groups
        start = time.time()
        connection.request("POST", f"/api/v1/namespaces/_/actions/{ACTION}?blocking=true"
                                   f"&result=true", body=body,
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        answer = json.loads(response.read())
        end = time.time()
        connection.close()
        status = "SUCCEEDED" if response.status == 200 else "FAILED"
        if isinstance(answer, dict) and set(answer) == {"output"}:
            answer = answer["output"]  # OpenWhisk wraps a result that is not an object
        # states: how many groups went to other containers (the harness reports it)
        return RunResult(status, answer, start, end, states=self.controller.groups
                         - groups_before)

    def close(self) -> None:
        self.controller.close()
        for container in self.containers:
            container.stop()
