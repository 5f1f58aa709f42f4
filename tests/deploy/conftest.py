"""Fixtures for the deployment tests: packaged apps, action containers, moto, Docker.

Docker tests need a running engine: the ``docker_image`` fixture runs
``docker/ensure-dockerd.sh`` (installs docker.io, starts dockerd) and builds the runtime
image (cached by input hash); if that is impossible the tests fail, they never skip.
"""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path
from typing import Callable, Iterator

import pytest

from deploy_apps import FINRA, write_small_app
from deploy_servers import (ActionServer, build_runtime_image, ensure_docker, free_port,
                            start_action_server, start_moto_server, stop, wait_for_port)
from faastlane.deploy.bundle import package_lambda, package_openwhisk
from faastlane.deploy.bundle import LambdaPackage


@pytest.fixture(scope="session")
def small_app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_small_app(tmp_path_factory.mktemp("apps") / "small")


def _zip_code(path: str) -> str:
    return base64.b64encode(Path(path).read_bytes()).decode()


@pytest.fixture(scope="session")
def small_zip(small_app: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The small app's OpenWhisk zip, base64 as /init takes it."""
    out = tmp_path_factory.mktemp("zips") / "small.zip"
    return _zip_code(package_openwhisk(str(small_app), str(out)).action.path)


@pytest.fixture(scope="session")
def finra_zip(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("zips") / "finra.zip"
    return _zip_code(package_openwhisk(str(FINRA), str(out)).action.path)


@pytest.fixture(scope="session")
def small_lambda(small_app: Path, tmp_path_factory: pytest.TempPathFactory) -> LambdaPackage:
    return package_lambda(str(small_app), str(tmp_path_factory.mktemp("small-lambda")))


@pytest.fixture
def action_server(tmp_path: Path) -> Iterator[ActionServer]:
    """A fresh action container, as a process on this machine's Python."""
    process, server = start_action_server(tmp_path)
    yield server
    stop(process)


@pytest.fixture
def action_servers(tmp_path: Path) -> Iterator[Callable[[], ActionServer]]:
    """A factory of fresh action containers (processes), all stopped afterwards."""
    started = []

    def make() -> ActionServer:
        folder = tmp_path / f"container-{len(started)}"
        folder.mkdir()
        process, server = start_action_server(folder)
        started.append(process)
        return server

    yield make
    for process in started:
        stop(process)


@pytest.fixture(scope="session")
def docker_image() -> str:
    try:
        ensure_docker()
        return build_runtime_image()
    except RuntimeError as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture
def containers(docker_image: str) -> Iterator[Callable[[], tuple[str, ActionServer]]]:
    """A factory of runtime-image containers (host network, 127.0.0.1 only)."""
    started: list[str] = []

    def make() -> tuple[str, ActionServer]:
        port = free_port()
        container = subprocess.run(
            ["docker", "run", "-d", "--rm", "--network", "host", docker_image,
             "--host", "127.0.0.1", "--port", str(port)],
            capture_output=True, text=True, check=True).stdout.strip()
        started.append(container)
        wait_for_port(port)
        return container, ActionServer(f"http://127.0.0.1:{port}")

    yield make
    for container in started:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)


@pytest.fixture(scope="session")
def moto() -> Iterator[str]:
    """moto's server on 127.0.0.1: its URL, for AWS_ENDPOINT_URL."""
    process, url = start_moto_server()
    yield url
    stop(process)
