"""The validator on Task states that call AWS services: a known integration validates,
in JSONPath and in JSONata; what cannot run is a problem at its JSON pointer."""

from __future__ import annotations

import re
from typing import Any

import pytest

from faastlane.validation import validate


def _task(resource: str, **fields: Any) -> dict[str, Any]:
    return {"StartAt": "Call", "States": {
        "Call": {"Type": "Task", "Resource": resource, "End": True, **fields}}}


def _problems(definition: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p.pointer, p.message) for p in validate(definition, functions=set())]


@pytest.mark.parametrize("resource, parameters", [
    ("arn:aws:states:::dynamodb:putItem",
     {"TableName": "orders", "Item": {"id": {"S.$": "$.id"}},
      "ConditionExpression": "attribute_not_exists(id)"}),
    ("arn:aws:states:::dynamodb:getItem", {"TableName": "orders", "Key": {"id": {"S": "1"}}}),
    ("arn:aws:states:::dynamodb:updateItem",
     {"TableName": "t", "Key": {}, "UpdateExpression": "SET n = :n",
      "ExpressionAttributeValues": {":n": {"N": "1"}}, "ReturnValues": "ALL_NEW"}),
    ("arn:aws:states:::dynamodb:deleteItem", {"TableName": "t", "Key": {}}),
    ("arn:aws:states:::sns:publish", {"TopicArn": "arn:aws:sns:us-east-1:1:t", "Message.$": "$"}),
    ("arn:aws:states:::sqs:sendMessage", {"QueueUrl": "q", "MessageBody.$": "$"}),
    ("arn:aws:states:::events:putEvents", {"Entries": [{"Source": "s", "Detail.$": "$"}]}),
    ("arn:aws:states:::states:startExecution.sync",
     {"StateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:Child",
      "Input.$": "$"}),
    ("arn:aws:states:::aws-sdk:s3:putObject", {"Bucket": "b", "Key": "k", "Body.$": "$"}),
    ("arn:aws:states:::aws-sdk:sfn:describeExecution", {"ExecutionArn": "arn"}),
])
def test_known_integrations_validate(resource: str, parameters: dict[str, Any]) -> None:
    assert _problems(_task(resource, Parameters=parameters)) == []


def test_a_jsonata_integration_validates_with_arguments() -> None:
    definition = _task("arn:aws:states:::dynamodb:putItem", QueryLanguage="JSONata",
                       Arguments={"TableName": "orders",
                                  "Item": {"id": {"S": "{% $states.input.id %}"}}},
                       Output="{% $states.result.SdkHttpMetadata.HttpStatusCode %}")
    assert _problems(definition) == []


def test_wait_for_task_token_is_refused_at_the_resource() -> None:
    [(pointer, message)] = _problems(_task(
        "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
        Parameters={"QueueUrl": "q", "MessageBody": {"token.$": "$$.Task.Token"}}))
    assert pointer == "/States/Call/Resource"
    assert ".waitForTaskToken" in message and "request-response" in message


def test_an_unknown_optimised_action_points_to_the_sdk_integration() -> None:
    [(pointer, message)] = _problems(_task("arn:aws:states:::dynamodb:query",
                                           Parameters={}))
    assert pointer == "/States/Call/Resource"
    assert "arn:aws:states:::aws-sdk:dynamodb:query" in message


def test_a_field_the_optimised_integration_does_not_take_is_pointed_at() -> None:
    problems = _problems(_task("arn:aws:states:::sns:publish",
                               Parameters={"TopicArn": "t", "Message": "m", "Body.$": "$"}))
    assert problems == [("/States/Call/Parameters/Body.$",
                         "the field 'Body' is not supported by Step Functions for "
                         "sns:publish")]


def test_jsonata_arguments_are_checked_too() -> None:
    problems = _problems(_task("arn:aws:states:::sqs:sendMessage", QueryLanguage="JSONata",
                               Arguments={"QueueUrl": "q", "Body": "{% $states.input %}"}))
    assert [p for p, _ in problems] == ["/States/Call/Arguments/Body"]


def test_an_sdk_action_boto3_does_not_know_is_refused_with_a_suggestion() -> None:
    [(pointer, message)] = _problems(_task("arn:aws:states:::aws-sdk:s3:getObjects",
                                           Parameters={}))
    assert pointer == "/States/Call/Resource"
    assert "s3 has no action 'getObjects'" in message and "'getObject'" in message


def test_an_sdk_service_boto3_does_not_know_is_refused() -> None:
    [(pointer, message)] = _problems(_task("arn:aws:states:::aws-sdk:dynamo:getItem",
                                           Parameters={}))
    assert pointer == "/States/Call/Resource"
    assert "no service 'dynamo'" in message


def test_integrations_inside_parallel_and_map_are_checked() -> None:
    bad = {"Type": "Task", "Resource": "arn:aws:states:::sns:publish.waitForTaskToken",
           "Parameters": {"TopicArn": "t", "Message": "m"}, "End": True}
    definition = {"StartAt": "M", "States": {"M": {
        "Type": "Map", "End": True,
        "ItemProcessor": {"StartAt": "Notify", "States": {"Notify": bad}}}}}
    assert [p for p, _ in _problems(definition)] == [
        "/States/M/ItemProcessor/States/Notify/Resource"]


def _suggested(message: str, resource: str) -> str | None:
    """The Resource a refusal suggests, or None when it suggests no rewrite."""
    found = re.search(r"with (arn:aws:states:::aws-sdk:[\w:.-]+)", message)
    if found:
        return found.group(1)
    if "use the request-response form" in message:
        return resource.removesuffix(".waitForTaskToken")
    return None


@pytest.mark.parametrize("resource", [
    "arn:aws:states:::sns:publish.waitForTaskToken",
    "arn:aws:states:::apigateway:invoke.waitForTaskToken",
    "arn:aws:states:::apigateway:invoke",
    "arn:aws:states:::ecs:runTask.waitForTaskToken",
    "arn:aws:states:::batch:submitJob",
    "arn:aws:states:::glue:fooBar",
    "arn:aws:states:::dynamodb:query",
    "arn:aws:states:::http:invoke",
])
def test_every_suggestion_applied_validates(resource: str) -> None:
    # Followed as a user would: each suggested rewrite is applied; the chain ends in a
    # workflow that validates, or in a refusal that suggests no rewrite.
    for _ in range(3):
        problems = [m for p, m in _problems(_task(resource, Parameters={}))
                    if p == "/States/Call/Resource"]
        if not problems:
            return
        suggestion = _suggested(problems[0], resource)
        if suggestion is None:
            assert "a function's code" in problems[0], problems[0]
            return
        resource = suggestion
    raise AssertionError(f"suggestions went round: {resource}")
