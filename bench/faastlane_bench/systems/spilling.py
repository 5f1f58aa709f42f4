"""Faastlane on several containers: the composed action behind an OpenWhisk REST front.

The system under test of the placement figure (``placement.py``). ``containers`` action
servers (``runtime/platforms/action_server.py``, the OpenWhisk ``/init`` + ``/run``
protocol), each pinned to its cpuset as ``docker run --cpuset-cpus`` would pin a
container, are all initialised with the same composed action, behind the REST front of
:mod:`.openwhisk_front`. An execution is one blocking activation; when the Orchestrator
spills a Parallel/Map group it invokes the same action through the same front
(``runtime/parallel/invokers.py``), exactly as on OpenWhisk, and the group runs in
another container.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from faastlane.app_source import load
from faastlane.compose.action import write_action
from faastlane.deploy.archive import write_zip

from .action_pool import ActionProcess
from .base import RunResult
from .openwhisk_front import Controller

ACTION = "faastlane-app"


def action_zip(app: str, planning: dict[str, Any], scratch: str) -> bytes:
    """The composed action as OpenWhisk's zip (``__main__.py`` at the top)."""
    folder = write_action(load(app, planning), os.path.join(scratch, "action"))
    return Path(write_zip(os.path.join(scratch, "action.zip"), [(folder, "")]).path).read_bytes()


class DockerAction(ActionProcess):
    """The same container protocol in a real container of the runtime image
    (``docker run --network host --cpuset-cpus ...``): for checking the process
    stand-ins against Docker."""

    def __init__(self, image: str, cpus: set[int]) -> None:
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
        self.connection.close()
        subprocess.run(["docker", "rm", "-f", self.container], capture_output=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class SpillingSystem:
    """Worker system ``faastlane-containers``: spec ``planning`` (compose options),
    ``cpu_sets`` (one per container, ``containers`` of them), ``spill`` (the
    containers' FAASTLANE_SPILL: ``always`` or ``auto``) and optionally
    ``docker_image`` (containers of that image instead of pinned processes)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.scratch = tempfile.mkdtemp(prefix="faastlane-bench-spill-")
        code = action_zip(spec["app"], spec["planning"], self.scratch)
        cpu_sets = [set(c) for c in spec["cpu_sets"]]
        image = spec.get("docker_image")
        with ThreadPoolExecutor(max_workers=len(cpu_sets)) as pool:
            self.containers = list(pool.map(
                lambda c: DockerAction(image, c) if image else ActionProcess(self.scratch, c),
                cpu_sets))
        self.controller = Controller(self.containers)
        env = {"__OW_API_HOST": self.controller.url, "FAASTLANE_SPILL": spec["spill"]}
        for container in self.containers:
            container.init(code, env)

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
        shutil.rmtree(self.scratch, ignore_errors=True)
