"""``faastlane deploy/invoke --target lambda``: boto3 against moto's server on 127.0.0.1
(AWS_ENDPOINT_URL), which stores functions and layers as Lambda's API does. moto cannot
run the code without pulling Lambda images from a registry, so execution is tested
through the Runtime API instead (test_lambda_runtime.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import boto3
import pytest

from faastlane.deploy.bundle import package_lambda
from integration.apps import ROOT, faastlane

from .deploy_apps import FINRA

REGION = "us-east-1"


def aws_env(tmp_path: Path, endpoint: str | None, **changes: str | None) -> dict[str, str]:
    """Only the AWS configuration a test gives: no ~/.aws, no instance metadata."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_CONFIG_FILE=str(tmp_path / "no-config"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-credentials"),
               AWS_EC2_METADATA_DISABLED="true", AWS_ACCESS_KEY_ID="testing",
               AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION=REGION)
    if endpoint:
        env["AWS_ENDPOINT_URL"] = endpoint
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


@pytest.fixture(scope="module")
def role(moto: str) -> str:
    iam = boto3.client("iam", endpoint_url=moto, region_name=REGION,
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    # The moto server lives for the session and other modules use this fixture too.
    try:
        return iam.get_role(RoleName="faastlane-test")["Role"]["Arn"]
    except iam.exceptions.NoSuchEntityException:
        pass
    return iam.create_role(RoleName="faastlane-test", AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                "Principal": {"Service": "lambda.amazonaws.com"}}]
    }))["Role"]["Arn"]


def lambda_client(moto: str):
    return boto3.client("lambda", endpoint_url=moto, region_name=REGION,
                        aws_access_key_id="testing", aws_secret_access_key="testing")


def test_deploy_creates_then_updates_function_and_layer(moto: str, role: str, small_app: Path,
                                                        tmp_path: Path):
    env = aws_env(tmp_path, moto)
    first = faastlane("deploy", str(small_app), "--target", "lambda", "--name", "small-fn",
                      "--role", role, env=env)
    assert first.code == 0, first.stderr
    assert "create function small-fn" in first.stderr
    client = lambda_client(moto)
    config = client.get_function(FunctionName="small-fn")["Configuration"]
    assert (config["Runtime"], config["Handler"]) == ("python3.13", "lambda_function.handler")
    expected = package_lambda(str(small_app), str(tmp_path / "zips"))
    assert config["CodeSize"] == expected.function.size  # the same, deterministic zip
    layer_arn = config["Layers"][0]["Arn"]
    assert layer_arn.endswith(":layer:small-fn-faastlane:1")
    assert config["Layers"][0]["CodeSize"] == expected.layer.size

    second = faastlane("deploy", str(small_app), "--target", "lambda", "--name", "small-fn",
                       "--memory", "2048", env=env)  # an update needs no role
    assert second.code == 0, second.stderr
    assert "update function small-fn" in second.stderr
    config = client.get_function(FunctionName="small-fn")["Configuration"]
    assert config["MemorySize"] == 2048
    assert config["Layers"][0]["Arn"].endswith(":layer:small-fn-faastlane:2")


@pytest.mark.mpk  # packages the built cpython-mpk runtime
def test_finra_deploys_with_a_custom_runtime(moto: str, role: str, tmp_path: Path):
    if not (ROOT / "cpython-mpk" / "build" / "bin" / "python3").exists():
        pytest.fail("cpython-mpk is not built: run `make -C cpython-mpk`", pytrace=False)
    done = faastlane("deploy", str(FINRA), "--target", "lambda", "--custom-runtime",
                     "--role", role, env=aws_env(tmp_path, moto))
    assert done.code == 0, done.stderr
    config = lambda_client(moto).get_function(FunctionName="finra")["Configuration"]
    assert config["Runtime"] == "provided.al2023"
    assert [layer["Arn"].split(":")[-2] for layer in config["Layers"]] == \
        ["faastlane-cpython-mpk", "finra-faastlane"]


def test_creating_without_a_role_is_one_line(moto: str, small_app: Path, tmp_path: Path):
    done = faastlane("deploy", str(small_app), "--target", "lambda", "--name", "no-role-fn",
                     env=aws_env(tmp_path, moto, FAASTLANE_LAMBDA_ROLE=None))
    assert done.code == 2
    assert done.stderr.strip().splitlines()[-1].startswith(
        "faastlane: error: creating Lambda function no-role-fn needs an execution role")


def test_missing_credentials_and_region_are_one_line(moto: str, small_app: Path,
                                                     tmp_path: Path):
    no_keys = faastlane("invoke", "small-fn", "--target", "lambda",
                        env=aws_env(tmp_path, moto, AWS_ACCESS_KEY_ID=None,
                                    AWS_SECRET_ACCESS_KEY=None))
    assert no_keys.code == 2
    assert no_keys.stderr.startswith("faastlane: error: no AWS credentials:")
    no_region = faastlane("deploy", str(small_app), "--target", "lambda",
                          env=aws_env(tmp_path, moto, AWS_DEFAULT_REGION=None))
    assert no_region.code == 2
    assert no_region.stderr.startswith("faastlane: error: no AWS region configured:")
    assert len(no_region.stderr.strip().splitlines()) == 1


def test_an_api_error_reports_status_and_message(moto: str, tmp_path: Path):
    done = faastlane("invoke", "not-deployed", "--target", "lambda",
                     env=aws_env(tmp_path, moto))
    assert done.code == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("faastlane: error: AWS Lambda Invoke not-deployed: 404 "
                           "ResourceNotFoundException: ")


def test_a_payload_over_6_mb_is_refused_before_upload(tmp_path: Path):
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"blob": "x" * (6 * 1024 * 1024)}))
    # No endpoint at all: the check must come before any request.
    done = faastlane("invoke", "small-fn", "--target", "lambda", "--input-file", str(big),
                     env=aws_env(tmp_path, "http://127.0.0.1:9"))
    assert done.code == 2
    assert "over Lambda's limit for a synchronous invocation's payload of 6 MB" in done.stderr
