"""Which endpoints a local run may create a template's resources on: this machine's
only (the embedded local AWS is one), whatever the spelling."""

from __future__ import annotations

import pytest

from faastlane.app.project.local_aws import configured_endpoint, is_loopback
from faastlane.app.project.parameters import parse_overrides
from faastlane.errors import FaastlaneError


@pytest.mark.parametrize("url, loopback", [
    ("http://127.0.0.1:5000", True),
    ("http://127.8.9.10", True),
    ("http://localhost:4566", True),
    ("http://[::1]:5000", True),
    ("https://dynamodb.us-east-1.amazonaws.com", False),
    ("http://10.0.0.5:5000", False),
    ("http://localhost.example.com", False),
    ("not a url", False),
])
def test_loopback_endpoints(url: str, loopback: bool) -> None:
    assert is_loopback(url) is loopback


def test_a_service_endpoint_wins_over_the_general_one() -> None:
    env = {"AWS_ENDPOINT_URL": "http://127.0.0.1:1",
           "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:2"}
    assert configured_endpoint("dynamodb", env) == "http://127.0.0.1:2"
    assert configured_endpoint("sns", env) == "http://127.0.0.1:1"
    assert configured_endpoint("sqs", {}) is None


@pytest.mark.parametrize("given", [("Stage",), ("=x",), ("ParameterKey=,ParameterValue=x",)])
def test_malformed_overrides_are_one_clear_error(given: tuple[str, ...]) -> None:
    with pytest.raises(FaastlaneError, match="--parameter-overrides"):
        parse_overrides(given)
