"""``faastlane deploy/invoke --target lambda``: boto3 against moto's server on 127.0.0.1
(AWS_ENDPOINT_URL), which stores functions and layers as Lambda's API does. moto cannot
run the code without pulling Lambda images from a registry, so execution is tested
through the Runtime API instead (test_lambda_runtime.py)."""

from __future__ import annotations

import io
import json
import os
import urllib.request
import zipfile
from pathlib import Path
from types import SimpleNamespace

import boto3
import pytest

from faastlane.deploy import deployer
from faastlane.deploy.aws_lambda import LambdaClient
from faastlane.deploy.bundle import package_lambda
from faastlane.deploy.errors import MissingConfiguration
from integration.apps import ROOT, faastlane

from .deploy_apps import FINRA
from .deploy_servers import start_moto_server, stop

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


def layer_versions(moto: str, layer: str) -> list[int]:
    return [v["Version"] for v in
            lambda_client(moto).list_layer_versions(LayerName=layer)["LayerVersions"]]


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
    assert (config["MemorySize"], config["Timeout"]) == (1024, 300)  # a new function's
    expected = package_lambda(str(small_app), str(tmp_path / "zips"))
    assert config["CodeSize"] == expected.function.size  # the same, deterministic zip
    layer_arn = config["Layers"][0]["Arn"]
    assert layer_arn.endswith(":layer:small-fn-faastlane:1")
    assert config["Layers"][0]["CodeSize"] == expected.layer.size

    second = faastlane("deploy", str(small_app), "--target", "lambda", "--name", "small-fn",
                       "--memory", "2048", "--timeout", "60", env=env)  # needs no role
    assert second.code == 0, second.stderr
    assert "update function small-fn" in second.stderr
    config = client.get_function(FunctionName="small-fn")["Configuration"]
    assert (config["MemorySize"], config["Timeout"]) == (2048, 60)
    # The same layer content: no new version.
    assert "layer small-fn-faastlane unchanged: version 1" in second.stderr
    assert config["Layers"][0]["Arn"] == layer_arn
    assert layer_versions(moto, "small-fn-faastlane") == [1]

    third = faastlane("deploy", str(small_app), "--target", "lambda", "--name", "small-fn",
                      "--timeout", "90", env=env)
    assert third.code == 0, third.stderr
    assert "keeps its memory 2048 MB" in third.stderr
    config = client.get_function(FunctionName="small-fn")["Configuration"]
    # What the redeploy does not give, it keeps: not the defaults.
    assert (config["MemorySize"], config["Timeout"]) == (2048, 90)
    fourth = faastlane("deploy", str(small_app), "--target", "lambda", "--name", "small-fn",
                       env=env)
    assert fourth.code == 0, fourth.stderr
    config = client.get_function(FunctionName="small-fn")["Configuration"]
    assert (config["MemorySize"], config["Timeout"]) == (2048, 90)


def _zip(name: str, text: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(name, text)
    return buffer.getvalue()


def _publish(moto: str, layer: str, description: str) -> int:
    return lambda_client(moto).publish_layer_version(
        LayerName=layer, Content={"ZipFile": _zip("python/placeholder.py", description)},
        CompatibleRuntimes=["python3.13"], Description=description)["Version"]


def test_a_changed_layer_is_published_and_only_our_superseded_versions_deleted(
        moto: str, role: str, small_app: Path, tmp_path: Path):
    layer = "prune-fn-faastlane"
    foreign = _publish(moto, layer, "published by hand, not by faastlane")
    earlier = _publish(moto, layer, "Faastlane: an earlier deploy [faastlane sha256:"
                                    f"{'0' * 64} runtime:python3.13 for:prune-fn]")
    others = _publish(moto, layer, "Faastlane: another function's [faastlane sha256:"
                                   f"{'1' * 64} runtime:python3.13 for:other-fn]")
    env = aws_env(tmp_path, moto)
    done = faastlane("deploy", str(small_app), "--target", "lambda", "--name", "prune-fn",
                     "--role", role, env=env)
    assert done.code == 0, done.stderr
    assert f"publish layer {layer}" in done.stderr
    config = lambda_client(moto).get_function(FunctionName="prune-fn")["Configuration"]
    assert config["Layers"][0]["Arn"].endswith(f":layer:{layer}:4")
    assert f"deleted superseded layer {layer} version(s) {earlier}" in done.stderr
    # Only the version it had published for this function went; the others stay.
    assert layer_versions(moto, layer) == [4, others, foreign]
    described = lambda_client(moto).get_layer_version(LayerName=layer, VersionNumber=4)
    assert "[faastlane sha256:" in described["Description"]
    assert "for:prune-fn]" in described["Description"]

    again = faastlane("deploy", str(small_app), "--target", "lambda", "--name", "prune-fn",
                      env=env)
    assert again.code == 0, again.stderr
    assert f"layer {layer} unchanged: version 4" in again.stderr
    assert layer_versions(moto, layer) == [4, others, foreign]


@pytest.mark.mpk  # packages the built cpython-mpk runtime
def test_finra_deploys_with_a_custom_runtime(moto: str, role: str, tmp_path: Path):
    if not (ROOT / "cpython-mpk" / "build-lambda" / "bin" / "python3").exists():
        pytest.fail("cpython-mpk for Lambda is not built: run `make -C cpython-mpk lambda`",
                    pytrace=False)
    done = faastlane("deploy", str(FINRA), "--target", "lambda", "--custom-runtime",
                     "--role", role, env=aws_env(tmp_path, moto))
    assert done.code == 0, done.stderr
    config = lambda_client(moto).get_function(FunctionName="finra")["Configuration"]
    assert config["Runtime"] == "provided.al2023"
    assert [layer["Arn"].split(":")[-2] for layer in config["Layers"]] == \
        ["faastlane-cpython-mpk", "finra-faastlane"]


def _nothing_named(moto: str, name: str) -> None:
    """Neither a function nor a layer of ``name`` exists in the (local) account."""
    client = lambda_client(moto)
    assert name not in [f["FunctionName"] for f in client.list_functions()["Functions"]]
    assert not [layer for layer in client.list_layers()["Layers"]
                if layer["LayerName"].startswith(name)]


def test_creating_without_a_role_is_one_line_and_creates_nothing(moto: str, small_app: Path,
                                                                 tmp_path: Path):
    done = faastlane("deploy", str(small_app), "--target", "lambda", "--name", "no-role-fn",
                     env=aws_env(tmp_path, moto, FAASTLANE_LAMBDA_ROLE=None))
    assert done.code == 2
    assert done.stderr.strip().splitlines() == [
        "faastlane: error: creating Lambda function no-role-fn needs an execution role: pass "
        "--role arn:aws:iam::ACCOUNT:role/NAME (or export FAASTLANE_LAMBDA_ROLE)"]
    _nothing_named(moto, "no-role-fn")


@pytest.mark.parametrize("setting", [("--memory", "64"), ("--timeout", "901")])
def test_settings_lambda_refuses_are_one_line_and_create_nothing(
        moto: str, role: str, small_app: Path, tmp_path: Path, setting: tuple[str, str]):
    done = faastlane("deploy", str(small_app), "--target", "lambda", "--name", "bad-setting-fn",
                     "--role", role, *setting, env=aws_env(tmp_path, moto))
    assert done.code == 2
    assert done.stderr.strip().splitlines() == [
        f"faastlane: error: {setting[0]} ({'MB' if setting[0] == '--memory' else 'seconds'}) "
        f"{setting[1]} is outside Lambda's range "
        f"{'128-10240' if setting[0] == '--memory' else '1-900'}"]
    _nothing_named(moto, "bad-setting-fn")


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


def test_an_answer_that_is_not_json_is_one_line(tmp_path: Path):
    """A function on a custom runtime may answer anything: `invoke` says in one line that
    it is not JSON, instead of a traceback. moto without Docker answers what it is told."""
    process, url = start_moto_server()
    try:
        _moto_api(url, "config", {"lambda": {"use_docker": False}})
        _moto_api(url, "static/lambda-simple/response",
                  {"results": ["OK from a custom runtime"], "region": REGION})
        env = aws_env(tmp_path, url)
        iam = boto3.client("iam", endpoint_url=url, region_name=REGION,
                           aws_access_key_id="testing", aws_secret_access_key="testing")
        arn = iam.create_role(RoleName="r", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        lambda_client(url).create_function(
            FunctionName="plain-fn", Role=arn, Runtime="provided.al2023", Handler="x",
            Code={"ZipFile": _zip("bootstrap", "#!/bin/sh\n")})
        done = faastlane("invoke", "plain-fn", "--target", "lambda", "--input", "{}", env=env)
    finally:
        stop(process)
    assert done.code == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "faastlane: error: AWS Lambda Invoke plain-fn: 200: the function's answer is not "
        "JSON (24 bytes): 'OK from a custom runtime'"]


def _moto_api(url: str, path: str, body: dict) -> None:
    request = urllib.request.Request(f"{url}/moto-api/{path}", method="POST",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=30).close()


def test_an_image_deploy_checks_the_role_before_pushing(moto: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch):
    """--image: no push (nor anything else) before the role of a new function is known."""
    for key, value in aws_env(tmp_path, moto).items():
        monkeypatch.setenv(key, value)
    pushed: list[str] = []
    monkeypatch.setattr(deployer.images, "push", lambda image, registry: pushed.append(image))
    package = SimpleNamespace(image=SimpleNamespace(tag="faastlane/lambda-x:1", size=1))
    with pytest.raises(MissingConfiguration, match="needs an execution role"):
        deployer.deploy_lambda_image(package, LambdaClient(), "image-no-role-fn", None,
                                     "127.0.0.1:9", None, None, lambda _: None)
    assert pushed == []
    _nothing_named(moto, "image-no-role-fn")
