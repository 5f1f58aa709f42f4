"""The AWS SDK is shipped only where the target runtime lacks it and the app needs it.

Lambda's managed Python runtimes have boto3 (and botocore, s3transfer, jmespath): their
layers leave those out even when a requirements file lists boto3, as the healthcare and
sentiment examples' do for OpenWhisk, whose Python kinds lack it and get it vendored.
A function that imports boto3 without listing it gets it where the runtime lacks it.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from faastlane.deploy.vendoring import RUNTIME_SDK_PACKAGES, imports_aws_sdk
from integration.apps import faastlane, write_app
from integration.examples import EXAMPLES

pytestmark = pytest.mark.integration

SDK_TOPS = {"boto3", "botocore", "s3transfer", "jmespath"}


def _tops(archive: Path, under: str = "") -> set[str]:
    """The top-level names (packages, modules, .dist-info) in a zip, below ``under``."""
    with zipfile.ZipFile(archive) as opened:
        names = [n[len(under):] for n in opened.namelist() if n.startswith(under)]
    return {n.split("/", 1)[0].split("-", 1)[0] for n in names if n}


@pytest.mark.parametrize("example", ["healthcare", "sentiment"])
def test_lambda_layers_leave_out_the_sdk_openwhisk_zips_carry_it(example: str,
                                                                  tmp_path: Path) -> None:
    lam = faastlane("package", str(EXAMPLES / example), "--target", "lambda",
                    "-o", str(tmp_path / "lambda"))
    assert lam.code == 0, lam.stderr
    layer = tmp_path / "lambda" / "layer.zip"
    assert not _tops(layer, "python/") & SDK_TOPS
    assert "faastlane_runtime" in _tops(layer, "python/")
    ow = faastlane("package", str(EXAMPLES / example), "--target", "openwhisk",
                   "-o", str(tmp_path / "action.zip"))
    assert ow.code == 0, ow.stderr
    assert SDK_TOPS <= _tops(tmp_path / "action.zip")
    sizes = {"layer": layer.stat().st_size, "openwhisk": (tmp_path / "action.zip").stat().st_size}
    print(f"{example}: {sizes}")  # the sizes the report quotes (pytest -s)
    assert sizes["openwhisk"] - sizes["layer"] > 5_000_000  # botocore alone is several MB


SDK_APP = {"StartAt": "Tables", "States": {
    "Tables": {"Type": "Task", "Resource": "tables", "End": True}}}
SDK_FUNCTION = """
    from botocore.config import Config


    def handler(event, context):
        return {"retries": Config(retries={"max_attempts": 2}).retries}
"""


def test_a_function_importing_boto3_gets_it_where_the_runtime_lacks_it(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", SDK_APP, {"tables": SDK_FUNCTION})
    assert imports_aws_sdk(str(app))  # no requirements file names it
    ow = faastlane("package", str(app), "--target", "openwhisk", "-o", str(tmp_path / "a.zip"))
    assert ow.code == 0, ow.stderr
    assert {"boto3", "botocore"} <= _tops(tmp_path / "a.zip")
    lam = faastlane("package", str(app), "--target", "lambda", "-o", str(tmp_path / "lambda"))
    assert lam.code == 0, lam.stderr
    assert not _tops(tmp_path / "lambda" / "layer.zip", "python/") & SDK_TOPS
    assert RUNTIME_SDK_PACKAGES == SDK_TOPS


def test_an_app_without_the_sdk_gets_none(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", SDK_APP,
                    {"tables": "def handler(event, context):\n    return {'boto3': 0}\n"})
    assert not imports_aws_sdk(str(app))
    ow = faastlane("package", str(app), "--target", "openwhisk", "-o", str(tmp_path / "a.zip"))
    assert ow.code == 0, ow.stderr
    assert not _tops(tmp_path / "a.zip") & SDK_TOPS


SERVICE_APP = {"StartAt": "Label", "States": {
    "Label": {"Type": "Task", "Resource": "label", "Next": "Save"},
    "Save": {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:putItem",
             "Parameters": {"TableName": "reviews", "Item": {"id": {"S.$": "$.id"}}},
             "End": True}}}


def test_a_workflow_calling_aws_services_gets_the_sdk_where_the_runtime_lacks_it(
        tmp_path: Path) -> None:
    """No function imports boto3, but the Orchestrator calls DynamoDB with it."""
    app = write_app(tmp_path / "app", SERVICE_APP,
                    {"label": "def handler(event, context):\n    return event\n"})
    assert not imports_aws_sdk(str(app))
    ow = faastlane("package", str(app), "--target", "openwhisk", "-o", str(tmp_path / "a.zip"))
    assert ow.code == 0, ow.stderr
    assert {"boto3", "botocore"} <= _tops(tmp_path / "a.zip")
    lam = faastlane("package", str(app), "--target", "lambda", "-o", str(tmp_path / "lambda"))
    assert lam.code == 0, lam.stderr
    assert not _tops(tmp_path / "lambda" / "layer.zip", "python/") & SDK_TOPS
