"""Fixtures for the deployment tests: packaged apps, action containers, moto, Docker.

The servers' fixtures live in ``server_fixtures.py``, which the placement tests share.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest

from faastlane.deploy.bundle import LambdaPackage, package_lambda, package_openwhisk

from .deploy_apps import FINRA, write_small_app
from .deploy_servers import ActionServer, start_action_server, stop
from .server_fixtures import (  # noqa: F401  (pytest fixtures, registered by importing)
    action_server_processes,
    blackbox_containers,
    built_runtime_image,
    local_image_registry,
    moto_server,
    runtime_containers,
)


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
