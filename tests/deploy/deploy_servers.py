"""Processes the tests start and stop: the action server, moto's server, containers."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from integration.apps import ROOT

# The runtime image runs the server as a script beside fault_reports.py; from the source
# tree it runs as a module of the package.
ACTION_SERVER_MODULE = "faastlane.runtime.platforms.action_server"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen | None = None,
                  timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def post(url: str, body: Any, raw: bytes | None = None,
         headers: dict[str, str] | None = None, method: str = "POST") -> tuple[int, Any]:
    """An HTTP request; (status, decoded JSON body)."""
    data = raw if raw is not None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json",
                                              **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


@dataclass
class ActionServer:
    """A running action container: its URL and, for a process, its log files."""

    url: str
    stdout: Path | None = None
    stderr: Path | None = None

    def init(self, body: Any = None, raw: bytes | None = None) -> tuple[int, Any]:
        return post(self.url + "/init", body, raw)

    def run(self, value: Any, **fields: Any) -> tuple[int, Any]:
        return post(self.url + "/run", {"value": value, **fields})


def start_action_server(tmp: Path) -> tuple[subprocess.Popen, ActionServer]:
    port = free_port()
    out, err = tmp / "server.stdout", tmp / "server.stderr"
    process = subprocess.Popen(
        [sys.executable, "-m", ACTION_SERVER_MODULE, "--host", "127.0.0.1", "--port", str(port),
         "--root", str(tmp / "actions")],
        stdout=out.open("wb"), stderr=err.open("wb"))
    wait_for_port(port, process)
    return process, ActionServer(f"http://127.0.0.1:{port}", out, err)


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def start_moto_server() -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                                "-p", str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    wait_for_port(port, process)
    return process, f"http://127.0.0.1:{port}"


def ensure_docker() -> None:
    """Install and start Docker as CI does; fail (never skip) if it cannot run."""
    done = subprocess.run([str(ROOT / "docker" / "ensure-dockerd.sh")], capture_output=True,
                          text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError("Docker cannot run here, and the Docker tests need it:\n"
                           + done.stderr)


def build_runtime_image() -> str:
    done = subprocess.run([str(ROOT / "docker" / "build.sh"), "runtime"], capture_output=True,
                          text=True, timeout=1800, env=dict(os.environ))
    if done.returncode != 0:
        raise RuntimeError("docker/build.sh runtime failed:\n" + done.stderr)
    return done.stdout.strip().splitlines()[-1]


def start_local_registry(storage: Path) -> tuple[subprocess.Popen, str]:
    """A local image registry (docker/local-registry.sh: Debian's docker-registry) on a
    free 127.0.0.1 port; its address, for ``--registry``."""
    port = free_port()
    address = f"127.0.0.1:{port}"
    process = subprocess.Popen([str(ROOT / "docker" / "local-registry.sh"), address,
                                str(storage)], stdout=subprocess.DEVNULL,
                               stderr=(storage.parent / "registry.log").open("wb"))
    wait_for_port(port, process, timeout=300)  # the first run may apt-get install it
    return process, address


def registry_qualified(image: str) -> bool:
    """Whether an image name starts with a registry host (``127.0.0.1:5000/app:1``)."""
    first = image.split("/", 1)[0]
    return "/" in image and ("." in first or ":" in first or first == "localhost")
