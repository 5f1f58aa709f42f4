"""Fixtures for the placement tests: several action containers behind one OpenWhisk
endpoint, serving the same action, and an S3-compatible store (moto's server).

The servers, the endpoint and their fixtures are the deployment tests' own
(``tests/deploy``); only the environment the containers get is particular to spilling.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from deploy.deploy_servers import ActionServer
from deploy.openwhisk_endpoint import OpenWhiskEndpoint
from deploy.server_fixtures import (  # noqa: F401  (pytest fixtures, registered by importing)
    Containers,
    action_server_processes,
    built_runtime_image,
    moto_server,
    runtime_containers,
)

from .spill_cli import AUTH

BUCKET = "faastlane-spill"


@pytest.fixture
def store_env(moto: str) -> dict[str, str]:
    """What a container needs to park big payloads in the store (a fresh bucket prefix)."""
    import boto3  # the tests' own client, to make the bucket and look inside it

    env = {"FAASTLANE_SPILL_STORE": f"s3://{BUCKET}/run-{os.urandom(4).hex()}",
           "AWS_ENDPOINT_URL_S3": moto, "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
    s3 = boto3.client("s3", endpoint_url=moto, region_name="us-east-1",
                      aws_access_key_id="testing", aws_secret_access_key="testing")
    if BUCKET not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
        s3.create_bucket(Bucket=BUCKET)
    return env


@pytest.fixture
def server_processes(action_servers: Callable[[], ActionServer], store_env: dict[str, str],
                     monkeypatch: pytest.MonkeyPatch) -> Callable[[], ActionServer]:
    """A factory of action containers as processes (they inherit the store settings)."""
    for key, value in store_env.items():
        monkeypatch.setenv(key, value)  # set now, before the factory starts any process
    return action_servers


@pytest.fixture
def limited_containers(containers: Containers, store_env: dict[str, str]
                       ) -> Callable[[], ActionServer]:
    """A factory of runtime-image containers limited to one CPU (``--cpus 1``), with the
    store settings and the test's FAASTLANE_SPILL (processes inherit it; these do not)."""
    def make() -> ActionServer:
        settings = dict(store_env)
        if "FAASTLANE_SPILL" in os.environ:
            settings["FAASTLANE_SPILL"] = os.environ["FAASTLANE_SPILL"]
        env = [arg for key, value in settings.items() for arg in ("-e", f"{key}={value}")]
        return containers("--cpus", "1", *env)[1]

    return make


def endpoint(factory: Callable[[], ActionServer],
             images: Callable[[str], ActionServer] | None = None
             ) -> Iterator[OpenWhiskEndpoint]:
    controller = OpenWhiskEndpoint(AUTH, factory, images)
    yield controller
    controller.close()


@pytest.fixture
def controller(server_processes: Callable[[], ActionServer]) -> Iterator[OpenWhiskEndpoint]:
    """The OpenWhisk REST front over action-server processes."""
    yield from endpoint(server_processes)


@pytest.fixture
def docker_controller(limited_containers: Callable[[], ActionServer], runtime_image: str
                      ) -> Iterator[OpenWhiskEndpoint]:
    """The OpenWhisk REST front over one-CPU Docker containers; an action deployed with
    ``--docker`` (a blackbox action) runs in them too, as the runtime image is its image."""
    def image_containers(image: str) -> ActionServer:
        assert image == runtime_image, f"only the runtime image runs here, not {image}"
        return limited_containers()

    yield from endpoint(limited_containers, image_containers)
