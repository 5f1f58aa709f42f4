"""``faastlane validate | compose | run TEMPLATE`` through the real CLI: a SAM template's
problems listed with their file and line, its functions composed from their CodeUri, and
local runs whose resources are created on a loopback endpoint, or on an embedded local
AWS (moto's server) when no endpoint is set, and never elsewhere without a flag."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

from faastlane.app.project.resources import generated_name

from .apps import ROOT, faastlane
from .local_aws import (
    LocalAws,
    clean_environment,
    fresh_aws,  # noqa: F401  (a pytest fixture)
    local_aws_endpoints,  # noqa: F401  (a pytest fixture)
)

STACK = "orders-stack"
TEMPLATE = """\
Transform: AWS::Serverless-2016-10-31
Parameters:
  Stage:
    Type: String
    Default: dev
Globals:
  Function:
    Runtime: python3.11
    MemorySize: 256
    Environment:
      Variables:
        STAGE: !Ref Stage
Resources:
  OrdersMachine:
    Type: AWS::Serverless::StateMachine
    Properties:
      DefinitionUri: statemachine/orders.asl.yaml
      DefinitionSubstitutions:
        RecordFunctionArn: !GetAtt RecordFunction.Arn
  RecordFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/record/
      Handler: app.lambda_handler
      Timeout: 20
      Environment:
        Variables:
          TABLE: !Ref OrdersTable
  OrdersTable:
    Type: AWS::Serverless::SimpleTable
"""
DEFINITION = """\
StartAt: Record
States:
  Record:
    Type: Task
    Resource: ${RecordFunctionArn}
    End: true
"""
# Writes the order into the template's table through whatever endpoint the run set.
RECORD = """\
import os

import boto3


def lambda_handler(event, context):
    table = os.environ["TABLE"]
    client = boto3.client("dynamodb")
    client.put_item(TableName=table, Item={"id": {"S": event["id"]}})
    return {"table": table, "stage": os.environ["STAGE"],
            "memory": context.memory_limit_in_mb,
            "endpoint": os.environ["AWS_ENDPOINT_URL"],
            "count": client.scan(TableName=table)["Count"]}
"""


def _project(tmp_path: Path, template: str = TEMPLATE, definition: str = DEFINITION,
             record: str = RECORD) -> Path:
    root = tmp_path / STACK
    (root / "statemachine").mkdir(parents=True)
    (root / "functions" / "record").mkdir(parents=True)
    (root / "template.yaml").write_text(template)
    (root / "statemachine" / "orders.asl.yaml").write_text(definition)
    (root / "functions" / "record" / "app.py").write_text(record)
    return root / "template.yaml"


def test_validate_a_template(tmp_path: Path) -> None:
    template = _project(tmp_path)
    done = faastlane("validate", str(template))
    assert done.code == 0, done.stderr
    assert done.stdout.strip() == f"{template} is valid (state machine OrdersMachine)"


def test_validate_lists_every_problem_in_its_file_at_its_line(tmp_path: Path) -> None:
    template = _project(tmp_path, TEMPLATE.replace(
        "RecordFunction.Arn\n", "RecordFunction.Arn\n        Audit: !Ref AuditTable\n"),
        DEFINITION.replace("${RecordFunctionArn}", "${RecordArn}"))
    done = faastlane("validate", str(template))
    assert done.code == 1
    folder = template.parent
    lines = done.stdout.splitlines()
    assert lines[0] == (f"{folder}/statemachine/orders.asl.yaml:5: /States/Record/Resource: "
                        "${RecordArn} is not in the state machine's DefinitionSubstitutions "
                        "(it has: Audit, RecordFunctionArn); did you mean 'RecordFunctionArn'?")
    assert lines[1] == (f"{folder}/template.yaml:20: /Resources/OrdersMachine/Properties/"
                        "DefinitionSubstitutions/Audit/Ref: Ref to 'AuditTable': no parameter "
                        "or resource of that name")
    assert lines[-1] == (f"3 problems: 2 in {folder}/statemachine/orders.asl.yaml, "
                         f"1 in {folder}/template.yaml")
    as_json = faastlane("validate", str(template), "--json")
    assert as_json.code == 1
    first = as_json.json[0]
    assert (first["file"], first["line"]) == ("statemachine/orders.asl.yaml", 5)


def test_a_function_a_task_calls_must_be_python(tmp_path: Path) -> None:
    template = _project(tmp_path, TEMPLATE.replace("python3.11", "ruby3.3"))
    done = faastlane("validate", str(template))
    assert done.code == 1
    assert done.stdout.splitlines()[0] == (
        f"{template.parent}/template.yaml:8: /Globals/Function/Runtime: Runtime ruby3.3: "
        "Faastlane runs Python functions only (python3.x) (in Globals, for RecordFunction)")


def test_compose_copies_each_code_folder_and_writes_the_resolved_workflow(
        tmp_path: Path) -> None:
    template = _project(tmp_path)
    out = tmp_path / "action"
    done = faastlane("compose", str(template), "-o", str(out),
                     "--parameter-overrides", "Stage=prod")
    assert done.code == 0, done.stderr
    assert (out / "functions" / "RecordFunction" / "app.py").read_text() == RECORD
    workflow = json.loads((out / "workflow.json").read_text())
    assert workflow["States"]["Record"]["Resource"] == \
        "arn:aws:lambda:us-east-1:123456789012:function:RecordFunction"
    plan = json.loads((out / "plan.json").read_text())
    assert plan["functions"]["RecordFunction"]["module"] == "functions/RecordFunction/app.py"
    orchestrator = (out / "orchestrator.py").read_text()
    assert "('STAGE', 'prod')" in orchestrator and "memory=256" in orchestrator


def test_run_with_no_endpoint_starts_an_embedded_local_aws_with_the_tables(
        tmp_path: Path) -> None:
    template = _project(tmp_path)
    done = faastlane("run", str(template), "--input", '{"id": "o-1"}',
                     "--parameter-overrides", "ParameterKey=Stage,ParameterValue=test",
                     env=clean_environment())
    assert done.code == 0, done.stderr
    result = done.json
    assert result["table"] == generated_name(STACK, "OrdersTable")
    assert (result["stage"], result["memory"], result["count"]) == ("test", "256", 1)
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", result["endpoint"])
    assert f"local AWS (moto) at {result['endpoint']} for this run" in done.stderr


def test_run_against_a_loopback_endpoint_creates_what_is_missing_once(
        tmp_path: Path, aws: LocalAws) -> None:
    template = _project(tmp_path)
    env = aws.environment()
    for order, count in (("o-1", 1), ("o-2", 2)):  # the second run finds the table
        done = faastlane("run", str(template), "--input", json.dumps({"id": order}), env=env)
        assert done.code == 0, done.stderr
        assert done.json["count"] == count
    table = generated_name(STACK, "OrdersTable")
    assert set(aws.items(table)) == {"o-1", "o-2"}
    assert "local AWS (moto)" not in done.stderr  # the endpoint given was used


NOTIFY = """\
Resources:
  Machine:
    Type: AWS::Serverless::StateMachine
    Properties:
      Definition:
        StartAt: Notify
        States:
          Notify:
            Type: Task
            Resource: !GetAtt NotifyFunction.Arn
            End: true
  NotifyFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/record/
      Handler: app.lambda_handler
      Runtime: python3.11
      Environment:
        Variables: {TOPIC: !Ref Alerts}
  Alerts:
    Type: AWS::SNS::Topic
    Properties:
      Subscription:
        - {Protocol: sqs, Endpoint: !GetAtt Inbox.Arn}
  Inbox:
    Type: AWS::SQS::Queue
  Audit:
    Type: AWS::SQS::Queue
    Properties: {QueueName: orders-audit}
  AuditSubscription:
    Type: AWS::SNS::Subscription
    Properties:
      TopicArn: !Ref Alerts
      Protocol: sqs
      Endpoint: !GetAtt Audit.Arn
"""
PUBLISH = """\
import os

import boto3


def lambda_handler(event, context):
    boto3.client("sns").publish(TopicArn=os.environ["TOPIC"], Message="order placed")
    return {}
"""


def test_topics_queues_and_subscriptions_are_created_in_order(tmp_path: Path,
                                                               aws: LocalAws) -> None:
    template = _project(tmp_path, NOTIFY, record=PUBLISH)
    done = faastlane("run", str(template), env=aws.environment())
    assert done.code == 0, done.stderr
    for queue in (generated_name(STACK, "Inbox", 80), "orders-audit"):
        envelope, = aws.drain_queue(queue)
        assert envelope["Message"] == "order placed"
        assert envelope["TopicArn"].endswith(":" + generated_name(STACK, "Alerts", 256))


def test_the_stack_name_names_the_resources(tmp_path: Path, aws: LocalAws) -> None:
    done = faastlane("run", str(_project(tmp_path)), "--input", '{"id": "x"}',
                     "--stack-name", "other", env=aws.environment())
    assert done.code == 0, done.stderr
    assert done.json["table"] == generated_name("other", "OrdersTable")


def test_nothing_is_created_on_an_endpoint_that_is_not_this_machine(tmp_path: Path) -> None:
    echo = "def lambda_handler(event, context):\n    return event\n"
    template = _project(tmp_path, record=echo)
    env = {**clean_environment(), "AWS_ENDPOINT_URL": "http://192.0.2.1:9",  # TEST-NET-1
           "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    done = faastlane("run", str(template), "--input", '{"id": "x"}', env=env, timeout=120)
    assert done.code == 0, done.stderr
    assert f"not creating OrdersTable ({generated_name(STACK, 'OrdersTable')}) at " \
           "http://192.0.2.1:9: not this machine" in done.stderr


def test_create_resources_is_the_explicit_flag_to_create_elsewhere(tmp_path: Path) -> None:
    template = _project(tmp_path)
    env = {**clean_environment(), "AWS_ENDPOINT_URL": "http://aws.invalid:9",
           "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_MAX_ATTEMPTS": "1"}
    done = faastlane("run", str(template), "--create-resources", env=env, timeout=120)
    assert done.code == 2
    assert done.stderr.startswith(
        f"faastlane: error: cannot create OrdersTable ({generated_name(STACK, 'OrdersTable')})"
        " at http://aws.invalid:9: "), done.stderr
    assert "Traceback" not in done.stderr


def test_several_state_machines_need_one_chosen(tmp_path: Path) -> None:
    second = TEMPLATE.replace("Resources:\n", "Resources:\n  AuditMachine:\n"
                              "    Type: AWS::StepFunctions::StateMachine\n"
                              "    Properties:\n      Definition:\n        StartAt: P\n"
                              "        States: {P: {Type: Pass, End: true}}\n", 1)
    template = _project(tmp_path, second)
    done = faastlane("run", str(template), env=clean_environment())
    assert done.code == 2
    assert done.stderr.strip() == (
        "faastlane: error: template.yaml has 2 state machines: AuditMachine, OrdersMachine; "
        "choose one with --state-machine ID")
    chosen = faastlane("run", str(template), "--state-machine", "AuditMachine",
                       "--input", '{"a": 1}', env=clean_environment())
    assert chosen.code == 0, chosen.stderr
    assert chosen.json == {"a": 1}


PARENT_AND_CHILD = """\
Resources:
  Parent:
    Type: AWS::Serverless::StateMachine
    Properties:
      Definition:
        StartAt: RunChild
        States:
          RunChild:
            Type: Task
            Resource: arn:aws:states:::states:startExecution.sync:2
            Parameters:
              StateMachineArn: !Ref Child
              Input: {id.$: $.id}
            OutputPath: $.Output
            End: true
  Child:
    Type: AWS::StepFunctions::StateMachine
    Properties:
      StateMachineName: order-child
      Definition:
        StartAt: Echo
        States:
          Echo: {Type: Task, Resource: !GetAtt EchoFunction.Arn, End: true}
  EchoFunction:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: functions/record/, Handler: app.lambda_handler, Runtime: python3.11}
"""


def test_a_state_machine_starts_another_of_its_template(tmp_path: Path) -> None:
    echo = "def lambda_handler(event, context):\n    return {'child_saw': event}\n"
    template = _project(tmp_path, PARENT_AND_CHILD, record=echo)
    done = faastlane("run", str(template), "--state-machine", "Parent", "--input",
                     '{"id": "o-9"}', env=clean_environment())
    assert done.code == 0, done.stderr
    assert done.json == {"child_saw": {"id": "o-9"}}


def test_an_app_folder_with_a_yaml_workflow_runs(tmp_path: Path) -> None:
    app = tmp_path / "app"
    (app / "functions").mkdir(parents=True)
    (app / "workflow.asl.yaml").write_text("StartAt: Echo\nStates:\n  Echo:\n"
                                           "    Type: Task\n    Resource: echo\n    End: true\n")
    (app / "functions" / "echo.py").write_text("def handler(event, context):\n"
                                               "    return {'echo': event}\n")
    done = faastlane("run", str(app), "--input", '{"a": 1}')
    assert done.code == 0, done.stderr
    assert done.json == {"echo": {"a": 1}}


def test_a_failing_function_is_shown_in_its_own_code_folder(tmp_path: Path) -> None:
    failing = "def lambda_handler(event, context):\n    raise KeyError('nope')\n"
    template = _project(tmp_path, record=failing)
    done = faastlane("run", str(template), env=clean_environment())
    assert done.code == 1
    assert done.json["Error"] == "KeyError"
    source = template.parent / "functions" / "record" / "app.py"
    assert f'File "{source}", line 2, in lambda_handler' in done.stderr, done.stderr


def test_sigterm_stops_the_run_and_its_embedded_local_aws(tmp_path: Path) -> None:
    slow = "import time\n\ndef lambda_handler(event, context):\n    time.sleep(60)\n"
    template = _project(tmp_path, record=slow)
    process = subprocess.Popen([sys.executable, "-m", "faastlane", "run", str(template)],
                               cwd=ROOT, env=clean_environment(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    line = process.stderr.readline()
    found = re.search(r"at http://127\.0\.0\.1:(\d+) for this run", line)
    assert found, line
    process.send_signal(signal.SIGTERM)
    _, rest = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM, rest
    with socket.socket() as probe:  # the embedded server is gone with the command
        assert probe.connect_ex(("127.0.0.1", int(found.group(1)))) != 0


def test_the_template_options_are_in_every_commands_help() -> None:
    for command in ("validate", "compose", "run", "package", "deploy"):
        done = faastlane(command, "--help")
        assert done.code == 0
        text = " ".join(done.stdout.split())
        assert "SAM / CloudFormation template" in text
        for option in ("--parameter-overrides", "--state-machine", "--stack-name"):
            assert option in text, (command, option)
