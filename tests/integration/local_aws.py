"""Local AWS endpoints for the example tests, started by the project's own scripts.

``examples/local-aws/start`` launches ``moto_server`` (DynamoDB, SNS, SQS) and the
Comprehend Medical stand-in on free loopback ports and prints the ``export`` lines a user
would ``eval``; the session fixture parses those lines, so the tests use exactly the
configuration a user gets, and ``stop`` ends both servers afterwards.

Test modules take the fixtures by importing them::

    from .local_aws import (  # the fixture functions; pytest knows them as local_aws, aws
        fresh_aws,  # noqa: F401
        local_aws_endpoints,  # noqa: F401
    )

``aws`` empties moto and recreates the examples' tables, topic and review queue before
each test, so every test sees only what its own run wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from .examples import EXAMPLES, load_module

LOCAL_AWS = EXAMPLES / "local-aws"
SCRIPT_TIMEOUT = 90

scripts = load_module(LOCAL_AWS / "local_aws.py", "examples_local_aws")


def parse_exports(text: str) -> dict[str, str]:
    env: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("export "):
            key, _, value = line.removeprefix("export ").partition("=")
            env[key] = value
    return env


def clean_environment() -> dict[str, str]:
    """This process's environment without any AWS setting of the machine's user.

    A real profile, region or endpoint on the host must never reach a test run, and no
    test may fall back to the instance metadata service.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                "AWS_EC2_METADATA_DISABLED": "true"})
    return env


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


class LocalAws:
    """The running endpoints: their exported configuration and what landed in them."""

    def __init__(self, exports: dict[str, str]) -> None:
        self.exports = exports

    def environment(self, **overrides: str | None) -> dict[str, str]:
        """The environment of a ``faastlane run``; ``None`` removes a variable."""
        env = {**clean_environment(), **self.exports}
        for key, value in overrides.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return env

    def client(self, service: str) -> Any:
        import boto3

        endpoint = self.exports.get(f"AWS_ENDPOINT_URL_{service.upper()}",
                                    self.exports["AWS_ENDPOINT_URL"])
        make: Any = boto3.client  # any service by name (the typed stubs want a literal)
        return make(service, endpoint_url=endpoint,
                    region_name=self.exports["AWS_DEFAULT_REGION"],
                    aws_access_key_id=self.exports["AWS_ACCESS_KEY_ID"],
                    aws_secret_access_key=self.exports["AWS_SECRET_ACCESS_KEY"])

    def reset(self) -> None:
        scripts.reset(self.exports)

    def items(self, table: str) -> dict[str, dict[str, Any]]:
        """Every item of ``table`` as plain JSON values, by its hash key."""
        from boto3.dynamodb.types import TypeDeserializer

        dynamodb = self.client("dynamodb")
        key = dynamodb.describe_table(TableName=table)["Table"]["KeySchema"][0]["AttributeName"]
        deserialize = TypeDeserializer().deserialize
        items = [{k: _plain(deserialize(v)) for k, v in item.items()}
                 for page in dynamodb.get_paginator("scan").paginate(TableName=table)
                 for item in page["Items"]]
        return {item[key]: item for item in items}

    def drain_queue(self, queue_name: str) -> list[dict[str, Any]]:
        """Receive and delete every message in the queue: SNS envelopes, parsed."""
        sqs = self.client("sqs")
        url = sqs.get_queue_url(QueueName=queue_name)["QueueUrl"]
        envelopes: list[dict[str, Any]] = []
        while True:
            batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
            if not batch:
                return envelopes
            for message in batch:
                envelopes.append(json.loads(message["Body"]))
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


def _script(name: str, state: Path) -> subprocess.CompletedProcess[str]:
    env = {**clean_environment(), "PYTHON": sys.executable}
    return subprocess.run([str(LOCAL_AWS / name), "--state-dir", str(state)], check=False,
                          capture_output=True, text=True, timeout=SCRIPT_TIMEOUT, env=env)


# Each test module that imports the fixture gets its own session-scoped instance of it;
# they share one pair of servers, stopped when the last of them is torn down.
_shared: dict[str, Any] = {"users": 0}


@pytest.fixture(scope="session", name="local_aws")
def local_aws_endpoints(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalAws]:
    if _shared["users"] == 0:
        state = tmp_path_factory.mktemp("local-aws")
        started = _script("start", state)
        assert started.returncode == 0, f"examples/local-aws/start failed:\n{started.stderr}"
        _shared.update(state=state, endpoints=LocalAws(parse_exports(started.stdout)),
                       recorded=json.loads((state / "state.json").read_text()))
    _shared["users"] += 1
    try:
        yield _shared["endpoints"]
    finally:
        _shared["users"] -= 1
        if _shared["users"] == 0:
            stopped = _script("stop", _shared["state"])
            assert stopped.returncode == 0, stopped.stderr
            for process in _shared["recorded"]["processes"].values():  # really gone
                cmdline = Path(f"/proc/{process['pid']}/cmdline")
                assert not cmdline.exists() or \
                    process["marker"] not in cmdline.read_text(errors="replace"), process


@pytest.fixture(name="aws")
def fresh_aws(local_aws: LocalAws) -> LocalAws:
    local_aws.reset()
    return local_aws
