"""Fixtures for the placement tests: several action containers behind one OpenWhisk
endpoint, serving the same action, and an S3-compatible store (moto's server).

The servers, the endpoint and the Docker helpers are the deployment tests' own
(``tests/deploy``); only the environment the containers get is particular to spilling.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable, Iterator

import pytest

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "deploy"))
sys.path.insert(0, str(TESTS))  # integration.apps: the app-writing helpers

from deploy_servers import (ActionServer, build_runtime_image, ensure_docker,  # noqa: E402
                            free_port, start_action_server, start_moto_server, stop,
                            wait_for_port)
from openwhisk_endpoint import OpenWhiskEndpoint  # noqa: E402

AUTH = "23bc46b1-71f6-4ed5-8c54-816aa4f8c502:placement-tests-key"
BUCKET = "faastlane-spill"


@pytest.fixture(scope="session")
def moto_url() -> Iterator[str]:
    process, url = start_moto_server()
    yield url
    stop(process)


@pytest.fixture
def store_env(moto_url: str) -> dict[str, str]:
    """What a container needs to park big payloads in the store (a fresh bucket prefix)."""
    import boto3  # the tests' own client, to make the bucket and look inside it

    env = {"FAASTLANE_SPILL_STORE": f"s3://{BUCKET}/run-{os.urandom(4).hex()}",
           "AWS_ENDPOINT_URL_S3": moto_url, "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
    s3 = boto3.client("s3", endpoint_url=moto_url, region_name="us-east-1",
                      aws_access_key_id="testing", aws_secret_access_key="testing")
    if BUCKET not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
        s3.create_bucket(Bucket=BUCKET)
    return env


@pytest.fixture
def server_processes(tmp_path: Path, store_env: dict[str, str],
                     monkeypatch: pytest.MonkeyPatch
                     ) -> Iterator[Callable[[], ActionServer]]:
    """A factory of action containers as processes (they inherit the store settings)."""
    for key, value in store_env.items():
        monkeypatch.setenv(key, value)
    started: list[subprocess.Popen] = []
    lock = threading.Lock()  # the endpoint starts containers from concurrent requests

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


@pytest.fixture(scope="session")
def runtime_image() -> str:
    try:
        ensure_docker()
        return build_runtime_image()
    except RuntimeError as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture
def limited_containers(runtime_image: str, store_env: dict[str, str]
                       ) -> Iterator[Callable[[], ActionServer]]:
    """A factory of runtime-image containers limited to one CPU (``--cpus 1``)."""
    started: list[str] = []

    def make() -> ActionServer:
        port = free_port()
        env = [arg for key, value in store_env.items() for arg in ("-e", f"{key}={value}")]
        container = subprocess.run(
            ["docker", "run", "-d", "--rm", "--network", "host", "--cpus", "1", *env,
             runtime_image, "--host", "127.0.0.1", "--port", str(port)],
            capture_output=True, text=True, check=True).stdout.strip()
        started.append(container)
        wait_for_port(port)
        return ActionServer(f"http://127.0.0.1:{port}")

    yield make
    for container in started:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)


def endpoint(factory: Callable[[], ActionServer]) -> Iterator[OpenWhiskEndpoint]:
    controller = OpenWhiskEndpoint(AUTH, factory)
    yield controller
    controller.close()


@pytest.fixture
def controller(server_processes: Callable[[], ActionServer]) -> Iterator[OpenWhiskEndpoint]:
    """The OpenWhisk REST front over action-server processes."""
    yield from endpoint(server_processes)


@pytest.fixture
def docker_controller(limited_containers: Callable[[], ActionServer]
                      ) -> Iterator[OpenWhiskEndpoint]:
    """The OpenWhisk REST front over one-CPU Docker containers."""
    yield from endpoint(limited_containers)
