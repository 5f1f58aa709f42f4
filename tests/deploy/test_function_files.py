"""A function's own files, opened relative to its module, are found in the packaged
action on both platforms (the working directory there is the action's folder, shared by
all functions: tests/integration/test_working_directory.py)."""

from __future__ import annotations

import base64
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from faastlane.deploy.bundle import package_lambda, package_openwhisk
from integration.test_working_directory import EXPECTED, files_app

from .deploy_servers import ActionServer
from .runtime_api import RuntimeApi
from .test_lambda_runtime import lambda_environment, start, unpack


@pytest.fixture
def runtime_api() -> Iterator[RuntimeApi]:
    api = RuntimeApi()
    yield api
    api.close()


def test_files_beside_the_functions_are_found_in_an_openwhisk_action(
        action_server: ActionServer, tmp_path: Path):
    package = package_openwhisk(str(files_app(tmp_path / "app")), str(tmp_path / "a.zip"))
    code = base64.b64encode(Path(package.action.path).read_bytes()).decode()
    status, answer = action_server.init({"value": {"main": "main", "code": code,
                                                   "binary": True}})
    assert (status, answer) == (200, {"ok": True}), answer
    status, result = action_server.run({}, activation_id="0" * 32, action_name="/guest/app",
                                       namespace="guest", deadline="9999999999999")
    assert (status, result) == (200, EXPECTED), action_server.stderr.read_text()


def test_files_beside_the_functions_are_found_in_a_lambda_function(
        runtime_api: RuntimeApi, tmp_path: Path):
    package = package_lambda(str(files_app(tmp_path / "app")), str(tmp_path / "zips"))
    task, opt = unpack(package, tmp_path)
    env = {**lambda_environment(runtime_api, task), "PYTHONPATH": str(opt / "python")}
    process = start([sys.executable, "-m", "awslambdaric", "lambda_function.handler"], env,
                    task, tmp_path / "runtime.log")
    try:
        outcome = runtime_api.invoke({})
    finally:
        process.kill()
        process.wait()
    assert outcome.kind == "response", (tmp_path / "runtime.log").read_text()
    assert outcome.body == EXPECTED
