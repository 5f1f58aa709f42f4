"""A template deployed: its functions' environment, timeout and memory travel inside the
Lambda package, with nothing but the template given. The function.zip + layer.zip run
as Lambda runs them, by the real ``awslambdaric`` against the local Runtime API."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.runtime_api import RuntimeApi
from deploy.test_lambda_runtime import lambda_environment, start, unpack
from faastlane.app.project.parameters import ProjectOptions
from faastlane.app.project.resources import generated_name
from faastlane.deploy.bundle import package_lambda

TEMPLATE = """\
Transform: AWS::Serverless-2016-10-31
Parameters:
  Stage: {Type: String, Default: dev}
Globals:
  Function:
    Runtime: python3.11
    Environment:
      Variables: {STAGE: !Ref Stage}
Resources:
  Machine:
    Type: AWS::Serverless::StateMachine
    Properties:
      Definition:
        StartAt: Report
        States:
          Report: {Type: Task, Resource: !GetAtt ReportFunction.Arn, End: true}
  ReportFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: report/
      Handler: app.lambda_handler
      Timeout: 7
      MemorySize: 384
      Environment:
        Variables:
          TABLE: !Ref Orders
  Orders:
    Type: AWS::Serverless::SimpleTable
"""
REPORT = """\
import os


def lambda_handler(event, context):
    return {"stage": os.environ["STAGE"], "table": os.environ["TABLE"],
            "memory": context.memory_limit_in_mb, "name": context.function_name,
            "timeout_left_ms": context.get_remaining_time_in_millis()}
"""


@pytest.fixture
def runtime_api() -> Iterator[RuntimeApi]:
    api = RuntimeApi()
    yield api
    api.close()


def test_a_deployed_template_carries_its_functions_settings(tmp_path: Path,
                                                            runtime_api: RuntimeApi) -> None:
    project = tmp_path / "shop"
    (project / "report").mkdir(parents=True)
    (project / "template.yaml").write_text(TEMPLATE)
    (project / "report" / "app.py").write_text(REPORT)
    package = package_lambda(str(project / "template.yaml"), str(tmp_path / "zips"),
                             project=ProjectOptions(parameter_overrides=("Stage=prod",)))
    assert package.name == "Machine"
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
    result = outcome.body
    assert result.pop("timeout_left_ms") <= 7000
    assert result == {"stage": "prod", "table": generated_name("shop", "Orders"),
                      "memory": "384", "name": "ReportFunction"}
