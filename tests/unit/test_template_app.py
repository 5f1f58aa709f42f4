"""A template becomes the same App an app folder gives: FunctionSpecs with the template's
environment, timeout and memory (SAM's Globals merged), the definition from any of its
sources, and an app folder may hold its definition in YAML."""

from __future__ import annotations

import json
from pathlib import Path

from faastlane.app.project.parameters import ProjectOptions
from faastlane.app.sources import load_app
from faastlane.compose.action import check_app

HANDLER = "def handler(event, context):\n    return event\n"


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_globals_environment_timeout_and_memory_reach_the_function_spec(
        tmp_path: Path) -> None:
    _write(tmp_path, {"src/app.py": HANDLER, "template.yaml": """\
Transform: AWS::Serverless-2016-10-31
Parameters:
  Wait: {Type: Number, Default: 30}
Globals:
  Function:
    Runtime: python3.12
    Timeout: !Ref Wait
    MemorySize: 512
    Environment:
      Variables: {STAGE: dev, SHARED: "1"}
Resources:
  Machine:
    Type: AWS::Serverless::StateMachine
    Properties:
      Definition:
        StartAt: A
        States:
          A: {Type: Task, Resource: !GetAtt Fn.Arn, End: true}
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: src
      Handler: app.handler
      MemorySize: 256
      Environment:
        Variables:
          STAGE: prod
          TABLE: !Ref Table
          DEBUG: true
  Table:
    Type: AWS::DynamoDB::Table
    Properties: {TableName: orders}
"""})
    app = load_app(str(tmp_path / "template.yaml"))
    assert check_app(app)[1] == []
    spec = app.functions["Fn"]
    assert dict(spec.environment) == {"STAGE": "prod", "SHARED": "1", "TABLE": "orders",
                                      "DEBUG": "true"}
    assert (spec.timeout, spec.memory) == (30, 256)
    assert app.name == "Machine"


def test_a_cdk_synth_template_with_an_asset_folder_and_a_joined_definition_string(
        tmp_path: Path) -> None:
    template = {"Resources": {
        "Fn9270CBC0": {"Type": "AWS::Lambda::Function",
                       "Properties": {"Code": {"S3Bucket": "cdk-assets", "S3Key": "abc.zip"},
                                      "Handler": "index.handler", "Runtime": "python3.12"},
                       "Metadata": {"aws:asset:path": "asset.abc",
                                    "aws:asset:property": "Code"}},
        "Machine": {"Type": "AWS::StepFunctions::StateMachine", "Properties": {
            "StateMachineName": "orders-flow",
            "DefinitionString": {"Fn::Join": ["", [
                '{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"',
                {"Fn::GetAtt": ["Fn9270CBC0", "Arn"]}, '","End":true}}}']]}}}}}
    _write(tmp_path, {"asset.abc/index.py": HANDLER,
                      "cdk.out.template.json": json.dumps(template, indent=1)})
    app = load_app(str(tmp_path / "cdk.out.template.json"))
    assert check_app(app)[1] == []
    assert app.name == "orders-flow"
    assert app.code == {"functions/Fn9270CBC0": str(tmp_path / "asset.abc")}


def test_definition_substitutions_in_a_json_definition_may_be_unquoted(
        tmp_path: Path) -> None:
    _write(tmp_path, {"fn/app.py": HANDLER, "sm.asl.json": """{
  "StartAt": "W",
  "States": {
    "W": {"Type": "Wait", "Seconds": ${Pause}, "Next": "A"},
    "A": {"Type": "Task", "Resource": "${FnArn}", "End": true}
  }
}""", "template.yaml": """\
Resources:
  M:
    Type: AWS::Serverless::StateMachine
    Properties:
      DefinitionUri: sm.asl.json
      DefinitionSubstitutions:
        Pause: 0
        FnArn: !GetAtt Fn.Arn
  Fn:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: fn/, Handler: app.handler, Runtime: python3.11}
"""})
    app = load_app(str(tmp_path / "template.yaml"))
    assert check_app(app)[1] == []
    assert json.loads(app.workflow_text)["States"]["W"]["Seconds"] == 0


def test_a_lambda_arn_written_with_sub_maps_to_the_function(tmp_path: Path) -> None:
    _write(tmp_path, {"fn/app.py": HANDLER, "template.yaml": """\
Resources:
  M:
    Type: AWS::Serverless::StateMachine
    Properties:
      Definition:
        StartAt: A
        States:
          A:
            Type: Task
            Resource: !Sub arn:aws:lambda:${AWS::Region}:${AWS::AccountId}:function:${Fn}
            End: true
  Fn:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: fn/, Handler: app.handler, Runtime: python3.11}
"""})
    assert check_app(load_app(str(tmp_path / "template.yaml")))[1] == []


def test_an_app_folder_may_hold_its_workflow_in_yaml(tmp_path: Path) -> None:
    _write(tmp_path, {"functions/echo.py": HANDLER, "workflow.asl.yaml": """\
StartAt: Echo
States:
  Echo:
    Type: Task
    Resource: echo
    Next: Ech
"""})
    app = load_app(str(tmp_path))
    problem = next(p for p in check_app(app)[1] if p.pointer == "/States/Echo/Next")
    assert (problem.file, problem.line) == ("workflow.asl.yaml", 6)
    assert "did you mean 'Echo'?" in problem.message


def test_the_templates_other_state_machines_are_carried_for_start_execution(
        tmp_path: Path) -> None:
    _write(tmp_path, {"fn/app.py": HANDLER, "template.yaml": """\
Resources:
  Main:
    Type: AWS::Serverless::StateMachine
    Properties:
      Definition:
        StartAt: Start
        States:
          Start:
            Type: Task
            Resource: arn:aws:states:::states:startExecution.sync:2
            Parameters: {StateMachineArn: !Ref Child, Input.$: $}
            End: true
  Child:
    Type: AWS::StepFunctions::StateMachine
    Properties:
      StateMachineName: child-flow
      Definition:
        StartAt: A
        States:
          A: {Type: Task, Resource: !GetAtt Fn.Arn, End: true}
  Broken:
    Type: AWS::StepFunctions::StateMachine
    Properties:
      Definition:
        StartAt: A
        States:
          A: {Type: Task, Resource: !GetAtt Missing.Arn, End: true}
  Fn:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: fn/, Handler: app.handler, Runtime: python3.11}
"""})
    app = load_app(str(tmp_path / "template.yaml"), ProjectOptions(state_machine="Main"))
    assert json.loads(app.workflow_text)["States"]["Start"]["Parameters"][
        "StateMachineArn"] == "arn:aws:states:us-east-1:123456789012:stateMachine:child-flow"
    assert app.state_machines == {"child-flow": {"StartAt": "A", "States": {"A": {
        "Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:Fn",
        "End": True}}}}
    warning, = app.warnings
    assert (warning.file, warning.pointer) == ("template.yaml", "/Resources/Broken")
    assert "state machine Broken is left out of the action" in warning.message
    assert "Fn::GetAtt Missing.Arn: no resource 'Missing'" in warning.message
