"""The healthcare and sentiment examples packaged and run through both deployment paths,
and the size limits packaging ml-predict as a zip runs into on either platform.

OpenWhisk: the package zip (its requirements vendored for the ``python:3.11`` kind)
initialised in a real action server with the endpoints' configuration in /init's ``env``
(where OpenWhisk's invoker puts an action's environment), then /run with the example's
input. Lambda: function.zip + layer.zip unpacked as Lambda does and run by the real
``awslambdaric`` against the local Runtime API, the configuration in the function's
environment. Both reach the local AWS endpoints (moto, the Comprehend Medical stand-in)
through boto3, and the tests check what landed there with the example suites' own checks.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from faastlane.deploy.bundle import package_lambda, package_openwhisk
from integration.apps import faastlane
from integration.examples import EXAMPLES
from integration.local_aws import (
    LocalAws,
    fresh_aws,  # noqa: F401  (a pytest fixture)
    local_aws_endpoints,  # noqa: F401  (a pytest fixture)
)
from integration.test_example_healthcare import (
    _check_analytics_saw_only_masked_notes,
    _check_protected_table,
)
from integration.test_example_sentiment import check_table_and_topic

from .deploy_servers import ActionServer
from .runtime_api import RuntimeApi
from .test_lambda_runtime import lambda_environment, start, unpack

# What each example leaves in local AWS besides its result, checked after every run.
AFTER_RUN: dict[str, Callable[[LocalAws, Any], None]] = {
    "healthcare": lambda aws, report: (_check_protected_table(aws),
                                       _check_analytics_saw_only_masked_notes(
                                           report["analytics"])),
    "sentiment": lambda aws, report: check_table_and_topic(aws),
}


def _read(app: str, name: str) -> Any:
    return json.loads((EXAMPLES / app / name).read_text(encoding="utf-8"))


def _refusal(stderr: str) -> str:
    """The one-line error, the last line; before it only progress lines (vendoring the
    requirements, when they are not cached yet)."""
    *progress, line = stderr.strip().splitlines()
    assert all(p.startswith("faastlane: ") and "error" not in p for p in progress), progress
    return line


@pytest.fixture
def runtime_api() -> Iterator[RuntimeApi]:
    api = RuntimeApi()
    yield api
    api.close()


@pytest.mark.parametrize("app", sorted(AFTER_RUN))
def test_example_runs_as_an_openwhisk_action(app: str, aws: LocalAws,
                                             action_server: ActionServer, tmp_path: Path):
    package = package_openwhisk(str(EXAMPLES / app), str(tmp_path / f"{app}.zip"))
    code = base64.b64encode(Path(package.action.path).read_bytes()).decode()
    status, answer = action_server.init({"value": {
        "main": "main", "code": code, "binary": True, "env": aws.exports}})
    assert (status, answer) == (200, {"ok": True}), answer
    status, result = action_server.run(_read(app, "input.json"),
                                       activation_id="0" * 32, action_name=f"/guest/{app}",
                                       namespace="guest", deadline="9999999999999")
    assert status == 200, (result, action_server.stderr and action_server.stderr.read_text())
    assert result == _read(app, "expected.json")
    AFTER_RUN[app](aws, result)


@pytest.mark.parametrize("app", sorted(AFTER_RUN))
def test_example_runs_as_a_lambda_function(app: str, aws: LocalAws, runtime_api: RuntimeApi,
                                           tmp_path: Path):
    package = package_lambda(str(EXAMPLES / app), str(tmp_path / "zips"))
    task, opt = unpack(package, tmp_path)
    # The function's configured environment: the endpoints, region, credentials, names.
    env = {**lambda_environment(runtime_api, task), **aws.exports,
           "PYTHONPATH": str(opt / "python")}
    process = start([sys.executable, "-m", "awslambdaric", "lambda_function.handler"], env,
                    task, tmp_path / "runtime.log")
    try:
        outcome = runtime_api.invoke(_read(app, "input.json"))
    finally:
        process.kill()
        process.wait()
    assert outcome.kind == "response", (tmp_path / "runtime.log").read_text()
    assert outcome.body == _read(app, "expected.json")
    AFTER_RUN[app](aws, outcome.body)


def test_ml_predict_is_refused_as_a_zip_with_the_limit_its_size_and_the_way_out(
        tmp_path: Path):
    """numpy + Pillow + scikit-learn (with scipy) are too big for a zip on either platform
    (see examples/ml-predict/README.md); the refusal names the limit, the measured size
    and the option that deploys it as an image instead (test_images.py does)."""
    app = str(EXAMPLES / "ml-predict")
    openwhisk = faastlane("package", app, "--target", "openwhisk", "-o",
                          str(tmp_path / "ml-predict.zip"), timeout=1200)
    assert openwhisk.code == 2
    line = _refusal(openwhisk.stderr)
    assert re.fullmatch(r"faastlane: error: \S+ml-predict\.zip is 6\d\.\d\d MB, over "
                        r"OpenWhisk's limit for an action's code of 48 MB; deploy it as a "
                        r"Docker action instead \(--docker: .*\)", line), line
    # Lambda: the unzipped size is checked before anything is zipped (no upload route
    # lifts it); the cp313 packages alone are over 250 MB.
    lam = faastlane("package", app, "--target", "lambda", "-o", str(tmp_path / "lambda"),
                    timeout=1200)
    assert lam.code == 2
    line = _refusal(lam.stderr)
    assert re.fullmatch(r"faastlane: error: ml-predict with its layers is 2\d\d\.\d\d MB, "
                        r"over Lambda's limit for a function and its layers unzipped of "
                        r"250 MB; deploy a container image instead \(--image: .*\).*", line), \
        line
    assert not (tmp_path / "lambda" / "layer.zip").exists()
