"""Fixtures of running servers, shared by the deployment and placement tests: action
containers (as processes on this machine's Python, or as runtime-image containers under
Docker) and moto's server.

A conftest takes them by importing them; tests ask for them by their fixture names
(``action_servers``, ``runtime_image``, ``containers``, ``image_containers``,
``local_registry``, ``moto``). Docker
fixtures need a running engine: ``runtime_image`` runs ``docker/ensure-dockerd.sh``
(installs docker.io, starts dockerd) and builds the runtime image (cached by input
hash); if that is impossible the tests fail, they never skip.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .deploy_servers import (
    ActionServer,
    build_runtime_image,
    ensure_docker,
    free_port,
    registry_qualified,
    start_action_server,
    start_local_registry,
    start_moto_server,
    stop,
    wait_for_port,
)

# Makes a container; its arguments are more ``docker run`` options (limits, environment).
Containers = Callable[..., tuple[str, ActionServer]]


@pytest.fixture(name="action_servers")
def action_server_processes(tmp_path: Path) -> Iterator[Callable[[], ActionServer]]:
    """A factory of fresh action containers (processes), all stopped afterwards."""
    started: list[subprocess.Popen] = []
    lock = threading.Lock()  # the OpenWhisk endpoint starts containers from concurrent requests

    def make() -> ActionServer:
        with lock:
            folder = tmp_path / f"container-{len(started)}"
            folder.mkdir()
            process, server = start_action_server(folder)
            started.append(process)
        return server

    yield make
    for process in started:
        stop(process)


@pytest.fixture(scope="session", name="runtime_image")
def built_runtime_image() -> str:
    """The Faastlane runtime image (docker/build.sh runtime), built if it is not."""
    try:
        ensure_docker()
        return build_runtime_image()
    except RuntimeError as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture(name="containers")
def runtime_containers(runtime_image: str) -> Iterator[Containers]:
    """A factory of runtime-image containers (host network, 127.0.0.1 only), all removed
    afterwards."""
    started: list[str] = []

    def make(*options: str) -> tuple[str, ActionServer]:
        port = free_port()
        container = subprocess.run(
            ["docker", "run", "-d", "--rm", "--network", "host", *options, runtime_image,
             "--host", "127.0.0.1", "--port", str(port)],
            capture_output=True, text=True, check=True).stdout.strip()
        started.append(container)
        wait_for_port(port)
        return container, ActionServer(f"http://127.0.0.1:{port}")

    yield make
    for container in started:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)


@pytest.fixture(name="image_containers")
def blackbox_containers(runtime_image: str) -> Iterator[Callable[[str], ActionServer]]:
    """A factory of action containers of any image whose entry point is an action server
    (a Docker action's image), as OpenWhisk's invoker makes them: the image pulled by
    name first when the name has a registry, then run (host network, 127.0.0.1 only)."""
    started: list[str] = []
    lock = threading.Lock()

    def make(image: str) -> ActionServer:
        if registry_qualified(image):
            with lock:  # one pull at a time, as concurrent activations may ask at once
                subprocess.run(["docker", "pull", "-q", image], capture_output=True,
                               text=True, check=True)
        port = free_port()
        container = subprocess.run(
            ["docker", "run", "-d", "--rm", "--network", "host", image,
             "--host", "127.0.0.1", "--port", str(port)],
            capture_output=True, text=True, check=True).stdout.strip()
        started.append(container)
        wait_for_port(port, timeout=120)
        return ActionServer(f"http://127.0.0.1:{port}")

    yield make
    for container in started:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)


@pytest.fixture(scope="session", name="local_registry")
def local_image_registry(runtime_image: str, tmp_path_factory: pytest.TempPathFactory
                         ) -> Iterator[str]:
    """A local registry (Debian's docker-registry) on 127.0.0.1: its address. Asks for
    the runtime image first, so the Docker engine is up for the pushes."""
    try:
        process, address = start_local_registry(tmp_path_factory.mktemp("registry") / "data")
    except RuntimeError as err:
        pytest.fail(f"the local registry did not start: {err}", pytrace=False)
    yield address
    stop(process)


@pytest.fixture(scope="session", name="moto")
def moto_server() -> Iterator[str]:
    """moto's server on 127.0.0.1: its URL, for AWS_ENDPOINT_URL."""
    process, url = start_moto_server()
    yield url
    stop(process)
