"""The healthcare and sentiment examples deployed unchanged with ``faastlane deploy``, as
a user deploys them after ``eval "$(examples/local-aws/start)"``, then run where they
were deployed.

What each function needs is in two places, as on Lambda: the table and topic names in
the example's ``faastlane.json`` (each function's own ``Environment.Variables``, which
the composed action carries), and the endpoints (and, on OpenWhisk, the credentials and
region) in the deployed action's own environment, given by ``deploy --env``. Nothing of
the test's own environment reaches the action: the action containers and the Lambda
runtime get only what the platform would give them.

OpenWhisk: the local controller (openwhisk_endpoint.py) stores the action and its
``init`` parameters and hands those to the container's ``/init`` as ``env``, as
OpenWhisk's invoker does; ``faastlane invoke`` runs it. Lambda: moto's server stores the
function and its configuration; the code it stores (same digest) runs under the real
``awslambdaric`` with the environment Lambda would give it: the runtime's variables,
the configuration's ``Environment.Variables`` as moto returns them, and the execution
role's credentials.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from faastlane.deploy.bundle import package_lambda
from integration.apps import faastlane
from integration.examples import EXAMPLES
from integration.local_aws import (
    LocalAws,
    fresh_aws,  # noqa: F401  (a pytest fixture)
    local_aws_endpoints,  # noqa: F401  (a pytest fixture)
)

from .deploy_servers import ActionServer
from .openwhisk_endpoint import OpenWhiskEndpoint, clean_env
from .runtime_api import RuntimeApi
from .test_deploy_lambda import REGION, aws_env, lambda_client, role  # noqa: F401 (fixture)
from .test_deploy_openwhisk import AUTH
from .test_examples_deploy import AFTER_RUN
from .test_lambda_runtime import lambda_environment, start, unpack

# What the functions' boto3 needs of the action's environment, beyond faastlane.json.
ENDPOINTS = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_COMPREHENDMEDICAL")
OPENWHISK_ENV = (*ENDPOINTS, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                 "AWS_DEFAULT_REGION")
# Set by local-aws/start, but given to the functions by faastlane.json, not by deploy.
RESOURCE_NAMES = ("HEALTHCARE_TABLE", "SENTIMENT_TABLE", "SENTIMENT_TOPIC_ARN")
# A name each example's faastlane.json gives one function, and that function.
SHADOWED = {"healthcare": ("HEALTHCARE_TABLE", "StoreProtected"),
            "sentiment": ("SENTIMENT_TABLE", "StorePositive")}


def _read(app: str, name: str) -> object:
    return json.loads((EXAMPLES / app / name).read_text(encoding="utf-8"))


def _test_process_gives_nothing_away() -> None:
    """The action containers are started from this process: it must not hold what the
    deployment is to give them, or the test would prove nothing."""
    leaked = [k for k in (*OPENWHISK_ENV, *RESOURCE_NAMES) if k in os.environ]
    assert not leaked, f"the test process's environment has {leaked}"


@pytest.fixture
def controller(action_servers: Callable[[], ActionServer]) -> Iterator[OpenWhiskEndpoint]:
    endpoint = OpenWhiskEndpoint(AUTH, action_servers)
    yield endpoint
    endpoint.close()


@pytest.mark.parametrize("app", sorted(AFTER_RUN))
def test_example_deploys_unchanged_to_openwhisk_and_runs(app: str, aws: LocalAws,
                                                         controller: OpenWhiskEndpoint,
                                                         tmp_path: Path):
    _test_process_gives_nothing_away()
    # The user's shell after eval "$(examples/local-aws/start)".
    shell = clean_env(tmp_path, **aws.exports)
    connection = ("--apihost", controller.url, "--auth", AUTH)
    env_options = [arg for name in OPENWHISK_ENV for arg in ("--env", name)]
    # A usual mistake: trying to change a name faastlane.json gives a function.
    table, reader = SHADOWED[app]
    deployed = faastlane("deploy", str(EXAMPLES / app), "--target", "openwhisk",
                         *connection, *env_options, "--env", f"{table}=not-the-table",
                         env=shell, timeout=600)
    assert deployed.code == 0, deployed.stderr
    assert f"environment: {', '.join(sorted((*OPENWHISK_ENV, table)))}" in deployed.stderr
    assert deployed.stderr.splitlines()[0] == (
        f"faastlane: warning: --env {table} is not what function {reader} sees: "
        f"faastlane.json gives it {table} of its own, which wins; change it there to "
        "change it")
    put, = [c for c in controller.calls if c.method == "PUT"]
    # The action's own environment: init parameters, with the shell's values.
    assert put.body["parameters"] == sorted(
        [{"key": k, "value": aws.exports[k], "init": True} for k in OPENWHISK_ENV]
        + [{"key": table, "value": "not-the-table", "init": True}], key=lambda p: p["key"])

    invoked = faastlane("invoke", app, "--target", "openwhisk", *connection, "--input-file",
                        str(EXAMPLES / app / "input.json"), env=shell, timeout=300)
    assert invoked.code == 0, invoked.stdout + invoked.stderr
    assert invoked.json == _read(app, "expected.json")
    AFTER_RUN[app](aws, invoked.json)
    # Nothing of the action's environment leaked into the activation's input.
    run_input = [c for c in controller.calls if c.method == "POST"][-1].body
    assert run_input == _read(app, "input.json")

    # A redeploy without --env keeps the action's environment (as the controller keeps
    # what a PUT leaves out), so the action still reaches its endpoints.
    again = faastlane("deploy", str(EXAMPLES / app), "--target", "openwhisk", *connection,
                      env=shell, timeout=600)
    assert again.code == 0, again.stderr
    assert "parameters" not in [c for c in controller.calls if c.method == "PUT"][-1].body
    aws.reset()
    invoked = faastlane("invoke", app, "--target", "openwhisk", *connection, "--input-file",
                        str(EXAMPLES / app / "input.json"), env=shell, timeout=300)
    assert invoked.code == 0, invoked.stdout + invoked.stderr
    assert invoked.json == _read(app, "expected.json")


@pytest.mark.parametrize("app", sorted(AFTER_RUN))
def test_example_deploys_unchanged_to_lambda_and_runs(app: str, aws: LocalAws, moto: str,
                                                      role: str, tmp_path: Path):  # noqa: F811
    _test_process_gives_nothing_away()
    name = f"{app}-example"
    # The deploying shell reaches Lambda (moto, AWS_ENDPOINT_URL); the function reaches
    # the examples' endpoints, given by value.
    shell = aws_env(tmp_path, moto)
    given = {k: aws.exports[k] for k in ENDPOINTS}
    deployed = faastlane("deploy", str(EXAMPLES / app), "--target", "lambda", "--name",
                         name, "--role", role,
                         *[arg for k, v in given.items() for arg in ("--env", f"{k}={v}")],
                         env=shell, timeout=600)
    assert deployed.code == 0, deployed.stderr
    assert f"environment: {', '.join(sorted(given))}" in deployed.stderr
    config = lambda_client(moto).get_function(FunctionName=name)["Configuration"]
    assert config["Environment"]["Variables"] == given

    package = package_lambda(str(EXAMPLES / app), str(tmp_path / "zips"))
    digest = base64.b64encode(hashlib.sha256(
        Path(package.function.path).read_bytes()).digest()).decode()
    assert config["CodeSha256"] == digest  # what runs below is what was deployed
    task, opt = unpack(package, tmp_path)
    api = RuntimeApi()
    # What Lambda gives the function's process: its runtime's variables, the
    # configuration's, and the execution role's credentials.
    env = {**lambda_environment(api, task), **config["Environment"]["Variables"],
           "AWS_ACCESS_KEY_ID": aws.exports["AWS_ACCESS_KEY_ID"],
           "AWS_SECRET_ACCESS_KEY": aws.exports["AWS_SECRET_ACCESS_KEY"],
           "AWS_SESSION_TOKEN": "role-session", "AWS_DEFAULT_REGION": REGION,
           "AWS_REGION": REGION, "PYTHONPATH": str(opt / "python")}
    process = start([sys.executable, "-m", "awslambdaric", config["Handler"]], env, task,
                    tmp_path / "runtime.log")
    try:
        outcome = api.invoke(_read(app, "input.json"))
    finally:
        process.kill()
        process.wait()
        api.close()
    assert outcome.kind == "response", (tmp_path / "runtime.log").read_text()
    assert outcome.body == _read(app, "expected.json")
    AFTER_RUN[app](aws, outcome.body)

    # A redeploy without --env keeps the function's variables and says so.
    again = faastlane("deploy", str(EXAMPLES / app), "--target", "lambda", "--name", name,
                      env=shell, timeout=600)
    assert again.code == 0, again.stderr
    assert f"keeps its memory 1024 MB and timeout 300 s and environment " \
           f"({', '.join(sorted(given))})" in again.stderr
    config = lambda_client(moto).get_function(FunctionName=name)["Configuration"]
    assert config["Environment"]["Variables"] == given


@pytest.mark.parametrize(("given", "message"), [
    ("AWS_ACCESS_KEY_ID=x", "--env AWS_ACCESS_KEY_ID: Lambda reserves AWS_ACCESS_KEY_ID "
                            "(its runtime and the execution role set it)"),
    ("1BAD=x", "--env 1BAD=x: a variable's name is letters, digits and _, starting with a "
               "letter (NAME=VALUE, or NAME for this shell's value)"),
    ("NOT_IN_SHELL", "--env NOT_IN_SHELL: NOT_IN_SHELL is not set in this shell; give its "
                     "value as --env NOT_IN_SHELL=VALUE"),
    (f"BIG={'x' * 4100}", "--env: the variables take 4103 bytes, over Lambda's limit of "
                          "4096 bytes for a function's environment"),
])
def test_an_environment_lambda_refuses_is_one_line_and_creates_nothing(
        moto: str, role: str, tmp_path: Path, given: str, message: str):  # noqa: F811
    done = faastlane("deploy", str(EXAMPLES / "sentiment"), "--target", "lambda", "--name",
                     "refused-env", "--role", role, "--env", given,
                     env=aws_env(tmp_path, moto, NOT_IN_SHELL=None))
    assert done.code == 2, done.stderr
    assert done.stderr.strip().splitlines() == [f"faastlane: error: {message}"]
    functions = lambda_client(moto).list_functions()["Functions"]
    assert "refused-env" not in [f["FunctionName"] for f in functions]
    layers = lambda_client(moto).list_layers()["Layers"]
    assert "refused-env-faastlane" not in [layer["LayerName"] for layer in layers]
