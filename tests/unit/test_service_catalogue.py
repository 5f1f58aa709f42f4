"""Which service integrations a Task may name: the catalogue the validator and the
runtime share, and what compose asks of it (does this action need boto3?)."""

from __future__ import annotations

import pytest

from faastlane.runtime.asl.integrations import (
    UnsupportedIntegration,
    is_integration,
    parse,
    snake_case,
)
from faastlane.runtime.asl.model import machine_from_asl
from faastlane.runtime.asl.resources import UnsupportedResource, task_target
from faastlane.runtime.services import services_used, uses_service_integrations


@pytest.mark.parametrize("resource, service, operation, label", [
    ("arn:aws:states:::dynamodb:getItem", "dynamodb", "get_item", "dynamodb:getItem"),
    ("arn:aws:states:::dynamodb:putItem", "dynamodb", "put_item", "dynamodb:putItem"),
    ("arn:aws:states:::dynamodb:updateItem", "dynamodb", "update_item", "dynamodb:updateItem"),
    ("arn:aws:states:::dynamodb:deleteItem", "dynamodb", "delete_item", "dynamodb:deleteItem"),
    ("arn:aws:states:::sns:publish", "sns", "publish", "sns:publish"),
    ("arn:aws:states:::sqs:sendMessage", "sqs", "send_message", "sqs:sendMessage"),
    ("arn:aws:states:::events:putEvents", "events", "put_events", "events:putEvents"),
    ("arn:aws:states:::states:startExecution.sync:2", "stepfunctions", "start_execution",
     "states:startExecution.sync:2"),
    ("arn:aws:states:::aws-sdk:s3:getObject", "s3", "get_object", "aws-sdk:s3:getObject"),
    ("arn:aws:states:::aws-sdk:sfn:describeExecution", "stepfunctions", "describe_execution",
     "aws-sdk:sfn:describeExecution"),
    ("arn:aws:states:::aws-sdk:eventbridge:putEvents", "events", "put_events",
     "aws-sdk:eventbridge:putEvents"),
    ("arn:aws-cn:states:::aws-sdk:cloudwatchlogs:createLogGroup", "logs", "create_log_group",
     "aws-sdk:cloudwatchlogs:createLogGroup"),
])
def test_supported_integrations_map_onto_boto3(resource: str, service: str, operation: str,
                                               label: str) -> None:
    integration = parse(resource)
    assert (integration.boto3_service, integration.operation, integration.label) == (
        service, operation, label)
    target = task_target(resource, None)
    assert (target.function, target.integration) == (None, resource)


@pytest.mark.parametrize("resource, words", [
    ("arn:aws:states:::sqs:sendMessage.waitForTaskToken", "callback pattern"),
    ("arn:aws:states:::aws-sdk:s3:getObject.waitForTaskToken", "callback pattern"),
    ("arn:aws:states:::dynamodb:scan", "aws-sdk:dynamodb:scan"),
    ("arn:aws:states:::batch:submitJob.sync", "aws-sdk:batch:submitJob"),
    ("arn:aws:states:::sns:publish.sync", "no .sync pattern"),
    ("arn:aws:states:::aws-sdk:S3:GetObject", "camelCase"),
])
def test_what_cannot_run_is_said_with_the_way_out(resource: str, words: str) -> None:
    with pytest.raises(UnsupportedIntegration, match=words.replace(".", r"\.")):
        parse(resource)
    with pytest.raises(UnsupportedResource, match=words.replace(".", r"\.")):
        task_target(resource, {})


def test_activities_and_lambda_arns_are_not_integrations() -> None:
    assert not is_integration("arn:aws:states:us-east-1:123456789012:activity:review")
    assert not is_integration("arn:aws:lambda:us-east-1:123456789012:function:f")
    assert is_integration("arn:aws:states:::dynamodb:putItem")


@pytest.mark.parametrize("action, operation", [
    ("putItem", "put_item"), ("getObjectAcl", "get_object_acl"),
    ("describeDBInstances", "describe_db_instances"), ("listSecrets", "list_secrets"),
])
def test_actions_become_boto3_methods(action: str, operation: str) -> None:
    assert snake_case(action) == operation


def _definition(*resources: str) -> dict:
    inner = {"StartAt": "T0", "States": {
        f"T{i}": {"Type": "Task", "Resource": r, "Parameters": {},
                  **({"Next": f"T{i + 1}"} if i + 1 < len(resources) else {"End": True})}
        for i, r in enumerate(resources)}}
    return {"StartAt": "P", "States": {
        "P": {"Type": "Parallel", "Branches": [inner], "Next": "F"},
        "F": {"Type": "Task", "Resource": "resize", "End": True}}}


def test_compose_learns_which_services_an_action_needs() -> None:
    definition = _definition("arn:aws:states:::dynamodb:putItem",
                             "arn:aws:states:::aws-sdk:s3:getObject",
                             "arn:aws:states:::states:startExecution.sync",
                             "arn:aws:states:::lambda:invoke")
    assert services_used(definition) == {"dynamodb", "s3"}
    assert uses_service_integrations(definition)
    # startExecution runs in-process, lambda:invoke calls a function: no boto3 needed.
    assert not uses_service_integrations(_definition(
        "arn:aws:states:::states:startExecution", "arn:aws:states:::lambda:invoke"))


def test_the_model_keeps_the_integration_and_names_no_function() -> None:
    machine = machine_from_asl(_definition("arn:aws:states:::sns:publish"))
    task = machine.states["P"].branches[0].states["T0"]
    assert (task.function, task.integration) == (None, "arn:aws:states:::sns:publish")
