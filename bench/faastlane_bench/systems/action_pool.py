"""Per-function action processes speaking the OpenWhisk action protocol.

Each function of the app is packaged as its own action zip (``__main__.py``, the app's
``functions/`` folder, and which function to call) and loaded into ``size`` action
servers (``runtime/platforms/action_server.py``, the project's implementation of OpenWhisk's
``/init`` + ``/run`` container protocol), each with its warm launcher child: the
"one container per function" deployment. A call checks out a free server of the function
(OpenWhisk sends one activation at a time to a container) and POSTs ``/run``.
"""

from __future__ import annotations

import base64
import http.client
import io
import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Any

from faastlane.app.folder import FUNCTIONS_DIR
from faastlane.app_source import load
from faastlane.runtime.engine.functions import FunctionSpec

from .function_action import SPEC_FILE

_ENTRY = '''"""OpenWhisk entry of one function, as the benchmark baselines deploy it."""

import os

from faastlane_bench.systems.function_action import FunctionAction

_ACTION = FunctionAction(os.path.dirname(os.path.abspath(__file__)))


def main(args):
    return _ACTION.main(args)
'''
START_TIMEOUT = 120.0


def function_zip(app_root: str, spec: FunctionSpec) -> bytes:
    """The action zip of one function: its entry, its spec and the app's functions/."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("__main__.py", _ENTRY)
        archive.writestr(SPEC_FILE, json.dumps(asdict(spec)))
        functions = os.path.join(app_root, FUNCTIONS_DIR)
        for folder, dirs, files in os.walk(functions):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                path = os.path.join(folder, name)
                archive.write(path, os.path.relpath(path, app_root))
    return buffer.getvalue()


class ActionProcess:
    """One action server (one "container") on a loopback port."""

    def __init__(self, root: str, cpus: set[int] | None = None) -> None:
        self.log_path = os.path.join(root, f"server-{uuid.uuid4().hex[:8]}.log")
        self.log = open(self.log_path, "w+", encoding="utf-8")
        # ``cpus``: the container's cpuset (the server and its launcher child inherit it).
        self.process = subprocess.Popen(
            [sys.executable, "-m", "faastlane.runtime.platforms.action_server",
             "--host", "127.0.0.1", "--port", "0", "--root", root],
            stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL,
            preexec_fn=None if cpus is None else lambda: os.sched_setaffinity(0, cpus))
        self.port = self._wait_for_port()
        self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        self.connection.connect()
        # http.client sends headers and body in two writes: without this, each request
        # would wait for the server's delayed ACK (the server turns Nagle off likewise).
        self.connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _wait_for_port(self) -> int:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            with open(self.log_path, encoding="utf-8") as handle:
                for line in handle:
                    if "listening on" in line:
                        return int(line.rsplit(":", 1)[1])
            if self.process.poll() is not None:
                break
            time.sleep(0.02)
        raise RuntimeError(f"the action server did not start: {self._log_tail()}")

    def _log_tail(self, lines: int = 20) -> str:
        """The end of the server's log, for an error message (the log goes with the pool's
        temporary folder)."""
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as handle:
                return "".join(handle.readlines()[-lines:]).strip() or "(its log is empty)"
        except OSError:  # not a file (a container's log)
            return f"see {self.log_path}"

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        self.connection.request("POST", path, body=json.dumps(body).encode(),
                                headers={"Content-Type": "application/json"})
        response = self.connection.getresponse()
        return response.status, json.loads(response.read())

    def init(self, action_zip: bytes, env: dict[str, str] | None = None) -> None:
        """``/init`` with the action's zip (and ``env``, the action's environment)."""
        value: dict[str, Any] = {"main": "main", "binary": True,
                                 "code": base64.b64encode(action_zip).decode()}
        if env:
            value["env"] = env
        status, body = self.post("/init", {"value": value})
        if status != 200:
            raise RuntimeError(f"/init failed ({status}): {body}; the server said: "
                               f"{self._log_tail()}")

    def activate(self, name: str, value: bytes,
                 api_key: str | None = None) -> tuple[int, bytes]:
        """``/run`` of one activation of ``name`` with ``value``, already JSON (the caller
        encoded it to check its size): the status and the raw answer."""
        envelope: dict[str, str] = {"activation_id": uuid.uuid4().hex, "namespace": "_",
                                    "action_name": f"/_/{name}",
                                    "deadline": str(int((time.time() + 600) * 1000))}
        if api_key is not None:
            envelope["api_key"] = api_key
        self.connection.request(
            "POST", "/run", body=b'{"value":' + value + b"," + json.dumps(envelope)[1:].encode(),
            headers={"Content-Type": "application/json"})
        response = self.connection.getresponse()
        return response.status, response.read()

    def run(self, name: str, value: bytes) -> dict[str, Any]:
        """:meth:`activate`, which must answer with a JSON object."""
        status, answer = self.activate(name, value)
        body = json.loads(answer)
        if status != 200 or not isinstance(body, dict):
            raise RuntimeError(f"/run of {name} failed ({status}): {body}")
        return body

    def stop(self) -> None:
        self.connection.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


class ActionPool:
    """Warm action servers for every function of an app, ``size`` per function."""

    def __init__(self, app_path: str, size: int,
                 cpu_sets: list[set[int]] | None = None) -> None:
        """``cpu_sets``: the i-th container of each function gets the i-th set (cycling)."""
        app = load(app_path, {}).app
        self.cpu_sets = cpu_sets
        self.root = tempfile.mkdtemp(prefix="faastlane-bench-actions-")
        self.free: dict[str, queue.Queue[ActionProcess]] = {}
        self.servers: list[ActionProcess] = []
        jobs = [(name, spec, index) for name, spec in sorted(app.functions.items())
                for index in range(size)]
        with ThreadPoolExecutor(max_workers=max(1, len(jobs))) as pool:
            futures = [pool.submit(self._start, app.root, *job) for job in jobs]
        failures = [f.exception() for f in futures if f.exception() is not None]
        if failures:
            self.close()
            raise failures[0]  # type: ignore[misc]

    def _start(self, app_root: str, name: str, spec: FunctionSpec, index: int) -> None:
        cpus = self.cpu_sets[index % len(self.cpu_sets)] if self.cpu_sets else None
        server = ActionProcess(self.root, cpus)
        self.servers.append(server)  # list.append is atomic: stopped on any failure
        server.init(function_zip(app_root, spec))
        self.free.setdefault(name, queue.Queue()).put(server)

    def invoke(self, function: str, value: dict[str, Any]) -> dict[str, Any]:
        return self.invoke_encoded(function, json.dumps(value).encode())

    def invoke_encoded(self, function: str, value: bytes) -> dict[str, Any]:
        """One activation of ``function``: waits for a free container, as an invoker does."""
        free = self.free.get(function)
        if free is None:
            raise KeyError(function)
        server = free.get()
        try:
            return server.run(function, value)
        finally:
            free.put(server)

    def close(self) -> None:
        for server in self.servers:
            server.stop()
        shutil.rmtree(self.root, ignore_errors=True)
