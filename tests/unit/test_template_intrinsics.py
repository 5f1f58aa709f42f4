"""Every intrinsic function, parameter and pseudo parameter the template reader resolves,
read from real template files (a Pass state's Result holds the value under test)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from faastlane.app.project.intrinsics import Resolver
from faastlane.app.project.parameters import ProjectOptions, parse_overrides
from faastlane.app.project.resources import generated_name
from faastlane.app.project.template import Project, read_template
from faastlane.errors import AppError

HEAD = """\
Transform: AWS::Serverless-2016-10-31
Parameters:
  Stage:
    Type: String
    Default: dev
    AllowedValues: [dev, prod]
  Size:
    Type: Number
    Default: 3
  Zones:
    Type: CommaDelimitedList
    Default: "a,b,c"
Conditions:
  IsProd: !Equals [!Ref Stage, prod]
  IsDev: !Not [!Condition IsProd]
  Both: !And [!Condition IsDev, !Equals [!Ref Size, "3"]]
  Either: !Or [!Condition IsProd, !Equals [x, y]]
Mappings:
  Sizes:
    dev: {Memory: 256}
    prod: {Memory: 1024}
"""


def _template(tmp_path: Path, value: str, resources: str = "",
              options: ProjectOptions | None = None) -> Project:
    text = HEAD + f"""\
Resources:
  Machine:
    Type: AWS::Serverless::StateMachine
    Properties:
      Definition:
        StartAt: P
        States:
          P:
            Type: Pass
            Result: {value}
            End: true
{resources}"""
    path = tmp_path / "stack-folder" / "template.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return read_template(str(path), options)


def _value(tmp_path: Path, value: str, resources: str = "",
           options: ProjectOptions | None = None) -> Any:
    project = _template(tmp_path, value, resources, options)
    assert project.problems == []
    return project.definition["States"]["P"]["Result"]


@pytest.mark.parametrize("value, expected", [
    ("!Ref Stage", "dev"),
    ("!Ref Size", "3"),  # numbers are passed as strings, as CloudFormation does
    ("!Ref Zones", ["a", "b", "c"]),
    ("!Ref AWS::Region", "us-east-1"),
    ("!Ref AWS::AccountId", "123456789012"),
    ("!Ref AWS::Partition", "aws"),
    ("!Ref AWS::StackName", "stack-folder"),  # the template's folder by default
    ("!Sub 'arn:${AWS::Partition}:s3:::${Stage}-bucket'", "arn:aws:s3:::dev-bucket"),
    ("!Sub ['${Name}-${Stage}', {Name: !Join ['', [x, y]]}]", "xy-dev"),
    ("!Join [':', [a, !Ref Stage, '1']]", "a:dev:1"),
    ("!Select [1, !Ref Zones]", "b"),
    ("!Select ['2', !Split ['/', 'x/y/z']]", "z"),
    ("!If [IsProd, big, small]", "small"),
    ("!If [Both, one, other]", "one"),
    ("!If [Either, one, other]", "other"),
    ("!FindInMap [Sizes, !Ref Stage, Memory]", 256),
    ("!FindInMap [Sizes, test, Memory, {DefaultValue: 128}]", 128),
    ("!Base64 hello", base64.b64encode(b"hello").decode()),
    ("!GetAZs ''", ["us-east-1a", "us-east-1b", "us-east-1c"]),
    ("{'Fn::ToJsonString': {a: [1]}}", '{"a":[1]}'),
    ("{'Fn::Length': [1, 2, 3]}", 3),
    ("{Keep: 1, Drop: !Ref AWS::NoValue}", {"Keep": 1}),
    ("[1, !If [IsProd, 2, !Ref AWS::NoValue]]", [1]),
])
def test_intrinsic(tmp_path: Path, value: str, expected: Any) -> None:
    assert _value(tmp_path, value) == expected


RESOURCES = """\
  Fn:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: code/, Handler: app.handler}
  Named:
    Type: AWS::Lambda::Function
    Properties: {FunctionName: my-function, Code: code/, Handler: app.handler}
  Table:
    Type: AWS::Serverless::SimpleTable
  NamedTable:
    Type: AWS::DynamoDB::Table
    Properties: {TableName: !Sub "${Stage}-orders"}
  Topic:
    Type: AWS::SNS::Topic
  Queue:
    Type: AWS::SQS::Queue
    Properties: {FifoQueue: true}
  Bucket:
    Type: AWS::S3::Bucket
"""


@pytest.mark.parametrize("value, expected", [
    ("!GetAtt Fn.Arn", "arn:aws:lambda:us-east-1:123456789012:function:Fn"),
    ("!Ref Named", "my-function"),
    ("!Sub '${Named.Arn}'", "arn:aws:lambda:us-east-1:123456789012:function:my-function"),
    ("!Ref Machine", "arn:aws:states:us-east-1:123456789012:stateMachine:Machine"),
    ("!Ref Table", generated_name("stack-folder", "Table")),
    ("!Ref NamedTable", "dev-orders"),
    ("!GetAtt NamedTable.Arn", "arn:aws:dynamodb:us-east-1:123456789012:table/dev-orders"),
    ("!Ref Topic", "arn:aws:sns:us-east-1:123456789012:"
                   + generated_name("stack-folder", "Topic", 256)),
    ("!GetAtt Topic.TopicName", generated_name("stack-folder", "Topic", 256)),
    ("!GetAtt Queue.QueueName", generated_name("stack-folder", "Queue", 80)[:75] + ".fifo"),
    ("!Ref Bucket", generated_name("stack-folder", "Bucket", 63, lower=True)),
    ("!GetAtt Bucket.Arn", "arn:aws:s3:::" + generated_name("stack-folder", "Bucket", 63,
                                                           lower=True)),
])
def test_resources_ref_and_attributes(tmp_path: Path, value: str, expected: Any) -> None:
    (tmp_path / "stack-folder" / "code").mkdir(parents=True)
    (tmp_path / "stack-folder" / "code" / "app.py").write_text("def handler(e, c):\n  pass\n")
    assert _value(tmp_path, value, RESOURCES) == expected


def test_sub_writes_an_escaped_placeholder_as_text() -> None:
    resolver = Resolver({"Stage": "dev"}, _no_resource, _no_resource, {}, {})
    assert resolver.resolve({"Fn::Sub": "${!Stage} is ${Stage}"}, "") == "${Stage} is dev"


def _no_resource(*args: str) -> Any:
    raise KeyError(args[0])


def test_generated_names_are_stable_per_stack_and_differ_between_stacks() -> None:
    first = generated_name("shop", "Orders")
    assert first == generated_name("shop", "Orders")
    assert first.startswith("shop-Orders-") and len(first.rsplit("-", 1)[1]) == 13
    assert generated_name("shop-2", "Orders") != first
    assert len(generated_name("s" * 100, "Queue", 80)) == 80


def test_the_stack_name_option_names_the_stack(tmp_path: Path) -> None:
    assert _value(tmp_path, "!Ref AWS::StackName",
                  options=ProjectOptions(stack_name="prod-stack")) == "prod-stack"


def test_the_region_comes_from_the_environment(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert _value(tmp_path, "!Sub '${AWS::Region}'") == "eu-west-1"


@pytest.mark.parametrize("overrides", [
    ("Stage=prod", "Size=5"),
    ("Stage=prod Size=5",),
    ("ParameterKey=Stage,ParameterValue=prod", "ParameterKey=Size,ParameterValue=5"),
])
def test_parameter_overrides_in_every_form_sam_takes(tmp_path: Path,
                                                      overrides: tuple[str, ...]) -> None:
    options = ProjectOptions(parameter_overrides=overrides)
    assert _value(tmp_path, "!Sub '${Stage}-${Size}'", options=options) == "prod-5"


def test_quoted_override_values_keep_their_spaces() -> None:
    assert parse_overrides(['Greeting="hello world" Name=x']) == {
        "Greeting": "hello world", "Name": "x"}


def test_an_override_of_an_undeclared_parameter_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AppError, match="'Stag', which the template does not declare; "
                                       "did you mean 'Stage'"):
        _template(tmp_path, "1", options=ProjectOptions(parameter_overrides=("Stag=x",)))


def test_json_templates_use_the_long_forms(tmp_path: Path) -> None:
    template = {
        "Parameters": {"Stage": {"Type": "String", "Default": "dev"}},
        "Resources": {"Machine": {"Type": "AWS::StepFunctions::StateMachine", "Properties": {
            "DefinitionString": {"Fn::Sub": json.dumps({
                "StartAt": "P", "States": {"P": {"Type": "Pass", "Result": "${Stage}",
                                                 "End": True}}})}}}}}
    path = tmp_path / "template.json"
    path.write_text(json.dumps(template, indent=2))
    project = read_template(str(path))
    assert project.problems == []
    assert project.definition["States"]["P"]["Result"] == "dev"
