"""Which AWS service integrations a Task may name, and what each one accepts.

A Task whose ``Resource`` is ``arn:<partition>:states:::<service>:<action>[.<pattern>]``
calls an AWS API instead of a function (Step Functions developer guide, "Integrating
services with Step Functions"). Faastlane's Orchestrator makes these calls itself:

- the *optimised* integrations users use most: DynamoDB ``getItem``, ``putItem``,
  ``updateItem``, ``deleteItem``; SNS ``publish``; SQS ``sendMessage``; EventBridge
  ``putEvents``; and ``states:startExecution`` (``.sync``, ``.sync:2``) of another state
  machine of the same workflow, run in-process;
- the generic ``aws-sdk:<service>:<action>`` integration, any API boto3 knows, its
  service named as the AWS SDK for Java v2 names it and its action in camelCase.

The callback pattern (``.waitForTaskToken``) is refused: nothing here could send the
task token back. Pure: the validator and the runtime share it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

SYNC = "sync"
SYNC2 = "sync:2"
WAIT_FOR_TASK_TOKEN = "waitForTaskToken"
START_EXECUTION = "startExecution"

# Region and account are empty: arn:aws:states:REGION:ACCOUNT:activity:NAME is an activity.
_INTEGRATION = re.compile(r"^arn:aws[a-zA-Z-]*:states:::(?P<path>.+)$")
_SDK = re.compile(r"^aws-sdk:(?P<service>[a-z0-9]+):(?P<action>[a-z][A-Za-z0-9]*)"
                  r"(?:\.(?P<pattern>.+))?$")
_OPTIMISED = re.compile(r"^(?P<service>[a-z0-9-]+):(?P<action>[a-zA-Z0-9]+)"
                        r"(?:\.(?P<pattern>.+))?$")

# The fields Step Functions passes on for each optimised integration (the developer
# guide's page of each service; LocalStack's _SUPPORTED_API_PARAM_BINDINGS).
_DYNAMODB_WRITE = ("Key", "TableName", "ConditionalOperator", "ConditionExpression",
                   "Expected", "ExpressionAttributeNames", "ExpressionAttributeValues",
                   "ReturnConsumedCapacity", "ReturnItemCollectionMetrics", "ReturnValues")
OPTIMISED: dict[str, dict[str, frozenset[str]]] = {
    "dynamodb": {
        "getItem": frozenset({"Key", "TableName", "AttributesToGet", "ConsistentRead",
                              "ExpressionAttributeNames", "ProjectionExpression",
                              "ReturnConsumedCapacity"}),
        "putItem": frozenset({"Item", *_DYNAMODB_WRITE} - {"Key"}),
        "updateItem": frozenset({*_DYNAMODB_WRITE, "AttributeUpdates", "UpdateExpression"}),
        "deleteItem": frozenset(_DYNAMODB_WRITE),
    },
    "sns": {"publish": frozenset({"Message", "MessageAttributes", "MessageStructure",
                                  "MessageDeduplicationId", "MessageGroupId", "PhoneNumber",
                                  "Subject", "TargetArn", "TopicArn"})},
    "sqs": {"sendMessage": frozenset({"DelaySeconds", "MessageAttributes", "MessageBody",
                                      "MessageDeduplicationId", "MessageGroupId",
                                      "QueueUrl"})},
    "events": {"putEvents": frozenset({"Entries"})},
    "states": {START_EXECUTION: frozenset({"Input", "Name", "StateMachineArn"})},
}
# Integration patterns besides request-response, per optimised action.
_PATTERNS: dict[tuple[str, str], frozenset[str]] = {
    ("states", START_EXECUTION): frozenset({SYNC, SYNC2}),
}

# aws-sdk service names (the AWS SDK for Java v2's) that boto3 calls differently.
_BOTO3_NAMES = {
    "sfn": "stepfunctions",
    "eventbridge": "events",
    "cloudwatchlogs": "logs",
    "cognitoidentityprovider": "cognito-idp",
    "cognitoidentity": "cognito-identity",
    "costexplorer": "ce",
    "databasemigration": "dms",
    "elasticloadbalancingv2": "elbv2",
    "elasticloadbalancing": "elb",
    "elasticsearch": "es",
    "applicationautoscaling": "application-autoscaling",
    "sfnv2": "stepfunctions",
}


class UnsupportedIntegration(ValueError):
    """A service integration Faastlane cannot run, said so that a user can fix it.
    ``instead``: the AWS SDK integration the message suggests, if any, after ``reason``
    (the validator checks that it exists before it lets the suggestion stand)."""

    def __init__(self, reason: str, instead: str | None = None) -> None:
        super().__init__(reason if instead is None else f"{reason}; call it with {instead}")
        self.reason = reason
        self.instead = instead


# Optimised integrations that are no AWS SDK action (an HTTP request of Step Functions'
# own): no aws-sdk form to suggest.
_NOT_SDK = {("apigateway", "invoke"): "an HTTP request to an API Gateway endpoint",
            ("http", "invoke"): "an HTTP request to an HTTPS endpoint",
            ("eks", "call"): "a call of a Kubernetes API"}


@dataclass(frozen=True)
class Integration:
    """One service integration a Task names."""

    resource: str
    service: str  # as the ARN names it: "dynamodb", "states"; for aws-sdk, "s3", "sfn"
    action: str  # the API action in camelCase: "putItem"
    pattern: str | None = None  # None: request-response; SYNC or SYNC2
    sdk: bool = False  # arn:aws:states:::aws-sdk:...

    @property
    def boto3_service(self) -> str:
        """The name boto3 gives the service's client."""
        if not self.sdk:
            return "stepfunctions" if self.service == "states" else self.service
        return _BOTO3_NAMES.get(self.service, self.service)

    @property
    def operation(self) -> str:
        """The boto3 method: the action in snake_case (``putItem`` -> ``put_item``)."""
        return snake_case(self.action)

    @property
    def in_process(self) -> bool:
        """Run by this Orchestrator itself, without AWS (another of its state machines)."""
        return not self.sdk and self.service == "states"

    @property
    def label(self) -> str:
        """``dynamodb:putItem``, ``aws-sdk:s3:getObject``, ``states:startExecution.sync``."""
        head = f"aws-sdk:{self.service}" if self.sdk else self.service
        return f"{head}:{self.action}" + (f".{self.pattern}" if self.pattern else "")


def snake_case(name: str) -> str:
    """``putItem`` -> ``put_item``, ``getObjectACL`` -> ``get_object_acl`` (botocore's
    own rule: xform_name)."""
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


def is_integration(resource: str) -> bool:
    """Whether ``resource`` names a Step Functions service integration (any service,
    supported or not; lambda:invoke is one too)."""
    return bool(_INTEGRATION.match(resource))


def parse(resource: str) -> Integration:
    """The integration ``resource`` names; UnsupportedIntegration when Faastlane cannot
    run it (lambda:invoke is resolved elsewhere: ``asl.resources``)."""
    match = _INTEGRATION.match(resource)
    if not match:
        raise UnsupportedIntegration(f"{resource!r} is not a service integration ARN")
    path = match.group("path")
    sdk = _SDK.match(path)
    if path.startswith("aws-sdk:") and not sdk:
        raise UnsupportedIntegration(
            f"{resource!r}: an AWS SDK integration is arn:aws:states:::aws-sdk:SERVICE:"
            "action, the service in lower case and the action in camelCase "
            "(e.g. arn:aws:states:::aws-sdk:s3:getObject)")
    found = sdk or _OPTIMISED.match(path)
    if not found:
        raise UnsupportedIntegration(f"{resource!r} is not a service integration ARN")
    service, action, pattern = found.group("service", "action", "pattern")
    if pattern == WAIT_FOR_TASK_TOKEN:
        said = (f"{resource!r}: the callback pattern (.waitForTaskToken) is not "
                "supported: nothing in a Faastlane action can send the task token back")
        try:  # suggested only where Faastlane runs it
            parse(resource.removesuffix("." + WAIT_FOR_TASK_TOKEN))
        except UnsupportedIntegration as plain:
            raise UnsupportedIntegration(f"{said}; nor its request-response form: "
                                         f"{plain}", plain.instead) from None
        raise UnsupportedIntegration(f"{said}; use the request-response form (without "
                                     ".waitForTaskToken)")
    if sdk:
        if pattern is not None:
            raise UnsupportedIntegration(
                f"{resource!r}: AWS SDK integrations have no .{pattern} pattern")
        return Integration(resource, service, action, None, sdk=True)
    actions = OPTIMISED.get(service)
    instead = f"arn:aws:states:::aws-sdk:{service}:{action}"
    if actions is None:
        known = ", ".join(sorted(OPTIMISED))
        said = (f"{resource!r}: Faastlane runs the optimised integrations of {known} and "
                "lambda:invoke")
        what = _NOT_SDK.get((service, action))
        if what is not None:
            raise UnsupportedIntegration(f"{said}; {service}:{action} is {what}, which "
                                         "a function's code can make (a Lambda Task)")
        raise UnsupportedIntegration(said, instead)
    if action not in actions:
        raise UnsupportedIntegration(
            f"{resource!r}: the optimised {service} integration has "
            f"{', '.join(actions)}", instead)
    if pattern is not None and pattern not in _PATTERNS.get((service, action), ()):
        raise UnsupportedIntegration(
            f"{resource!r}: {service}:{action} has no .{pattern} pattern "
            f"(Step Functions runs it request-response)")
    return Integration(resource, service, action, pattern)


def unsupported_fields(integration: Integration, payload: Any) -> Iterator[str]:
    """The fields of an optimised integration's Parameters (or Arguments) that Step
    Functions does not pass on: it refuses such a definition ("The field 'X' is not
    supported by Step Functions")."""
    if integration.sdk or not isinstance(payload, dict):
        return
    allowed = OPTIMISED[integration.service][integration.action]
    for key in payload:
        if key.removesuffix(".$") not in allowed:
            yield key


def _tasks(machine: Any) -> Iterator[dict[str, Any]]:
    if not isinstance(machine, dict) or not isinstance(machine.get("States"), dict):
        return
    for state in machine["States"].values():
        if not isinstance(state, dict):
            continue
        if state.get("Type") == "Task":
            yield state
        for branch in state.get("Branches") or ():
            yield from _tasks(branch)
        for key in ("ItemProcessor", "Iterator"):
            yield from _tasks(state.get(key))


def integrations_used(definition: Any) -> list[Integration]:
    """Every supported service integration a definition's Tasks name (nested machines
    included), lambda:invoke aside."""
    found = []
    for task in _tasks(definition):
        resource = task.get("Resource")
        if not isinstance(resource, str) or not is_integration(resource):
            continue
        try:
            found.append(parse(resource))
        except UnsupportedIntegration:
            continue  # lambda:invoke, or a problem the validator reports
    return found


def services_used(definition: Any) -> frozenset[str]:
    """The boto3 clients a definition's service integrations need (startExecution of a
    state machine of the same workflow runs in-process and needs none)."""
    return frozenset(i.boto3_service for i in integrations_used(definition)
                     if not i.in_process)


def uses_service_integrations(definition: Any) -> bool:
    """Whether running this definition needs boto3 (and so an action that ships it, on a
    platform whose Python runtime lacks it)."""
    return bool(services_used(definition))
