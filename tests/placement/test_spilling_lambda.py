"""Spilling through AWS Lambda's Invoke API, end to end, against a local stand-in.

``lambda_endpoint.LambdaEndpoint`` stands in for the AWS Lambda service endpoint
(``https://lambda.us-east-1.amazonaws.com``, Invoke API 2015-03-31): it checks every
request's SigV4 signature with botocore's signer and runs the function's Lambda package
(``faastlane package --target lambda``'s function.zip and layer) in execution
environments driven by the real ``awslambdaric`` through a local Runtime API, one more
environment per concurrent invocation, as Lambda scales. Neither AWS nor moto's Lambda
(which needs Docker images from a public registry) can be reached from here.

The Orchestrator in the first environment finds itself on Lambda from the variables
Lambda sets (``AWS_LAMBDA_FUNCTION_NAME``, the role's ``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``), and ``AWS_ENDPOINT_URL_LAMBDA``
points its Invoke calls at the stand-in.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deploy.deploy_apps import FINRA
from deploy.test_lambda_runtime import unpack
from faastlane.deploy.bundle import package_lambda

from .lambda_endpoint import Keys, LambdaEndpoint
from .test_spilling import finra_input, one_container

REGION = "us-east-1"
ROLE = Keys("ASIAFAASTLANETESTKEY", "role+secret/for/the/placement/tests", "role-session-token")
CLIENT = Keys("AKIAFAASTLANECLIENT0", "client+secret/for/the/placement/tests")
GROUP_KEY = "__faastlane_group"


@pytest.fixture
def lambda_service(tmp_path: Path) -> Iterator[LambdaEndpoint]:
    root = tmp_path / "lambda"
    root.mkdir()
    endpoint = LambdaEndpoint(REGION, {k.access_key: k for k in (ROLE, CLIENT)}, root)
    yield endpoint
    endpoint.close()


def create_function(endpoint: LambdaEndpoint, app: Path, name: str, tmp_path: Path,
                    role: Keys = ROLE, **planning: Any) -> None:
    """``faastlane package --target lambda``, unpacked as Lambda unpacks it, with the
    environment Lambda gives a function whose role allows lambda:InvokeFunction."""
    package = package_lambda(str(app), str(tmp_path / f"{name}-package"), **planning)
    unpacked = tmp_path / f"{name}-unpacked"
    unpacked.mkdir()
    task, opt = unpack(package, unpacked)
    endpoint.add_function(name, task, opt, {
        "AWS_ACCESS_KEY_ID": role.access_key, "AWS_SECRET_ACCESS_KEY": role.secret_key,
        "AWS_SESSION_TOKEN": role.token or "", "AWS_ENDPOINT_URL_LAMBDA": endpoint.url,
        "FAASTLANE_SPILL": "always"})


def invoke(endpoint: LambdaEndpoint, name: str, payload: Any) -> tuple[str | None, Any]:
    """The client's Invoke through boto3, the way a user calls the function."""
    import boto3

    client = boto3.client("lambda", endpoint_url=endpoint.url, region_name=REGION,
                          aws_access_key_id=CLIENT.access_key,
                          aws_secret_access_key=CLIENT.secret_key)
    answer = client.invoke(FunctionName=name, Payload=json.dumps(payload).encode())
    return answer.get("FunctionError"), json.loads(answer["Payload"].read())


def groups(endpoint: LambdaEndpoint) -> list[Any]:
    return [c for c in endpoint.calls if isinstance(c.body, dict) and GROUP_KEY in c.body]


def test_finra_spills_through_signed_lambda_invocations(
        lambda_service: LambdaEndpoint, tmp_path: Path) -> None:
    payload = finra_input(100)
    create_function(lambda_service, FINRA, "faastlane-finra", tmp_path, vcpus=2,
                    max_containers=3)
    error, output = invoke(lambda_service, "faastlane-finra", payload)
    assert error is None, output
    assert output == one_container(FINRA, payload, tmp_path)

    spilled = groups(lambda_service)
    assert len(spilled) == 2  # 100 rules, 2 vCPUs, 3 environments: two remote groups
    assert all(c.verdict == "ok" for c in lambda_service.calls)
    assert all(c.function == "faastlane-finra" for c in spilled)
    # Signed by the runtime itself with the role's temporary credentials.
    assert all(c.headers["authorization"].startswith(
        f"AWS4-HMAC-SHA256 Credential={ROLE.access_key}/") for c in spilled)
    assert all(c.headers["x-amz-security-token"] == ROLE.token for c in spilled)
    assert all(c.headers["x-amz-invocation-type"] == "RequestResponse" for c in spilled)
    assert sorted(j for c in spilled for j in c.body[GROUP_KEY]["jobs"]) == list(range(34, 100))
    assert len(lambda_service.started) == 3  # Lambda scaled out for the concurrent groups


def test_a_refused_signature_fails_the_execution_with_lambdas_error(
        lambda_service: LambdaEndpoint, tmp_path: Path) -> None:
    wrong = Keys(ROLE.access_key, "not-the-role-secret", ROLE.token)
    create_function(lambda_service, FINRA, "faastlane-finra", tmp_path, role=wrong,
                    vcpus=2, max_containers=2)
    error, output = invoke(lambda_service, "faastlane-finra", finra_input(50))
    assert error == "Unhandled"
    assert output["errorType"] == "Lambda.AWSLambdaException"
    assert "HTTP 403" in output["errorMessage"]
    refused = groups(lambda_service)
    assert refused and all(c.verdict.startswith("InvalidSignatureException")
                           for c in refused)
    client_call = lambda_service.calls[0]
    assert client_call.verdict == "ok"  # boto3's own signature passes the same check
