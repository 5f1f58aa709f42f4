"""What a template's resources are called locally, and what ``Ref`` and ``Fn::GetAtt`` of
each give, as CloudFormation documents it per resource type.

Physical names follow CloudFormation's ``STACK-LogicalId-SUFFIX`` pattern (lower case for
buckets), with a suffix derived from the stack and the logical id instead of a random
one, so that a second ``faastlane run`` of the same stack finds what the first created;
a name the template sets (``TableName``, ``TopicName``, ...) is used as it is.
Functions and state machines run inside the action, so their local name is the
template's (``FunctionName``, ``Name``) or else their logical id: a Task naming
``!GetAtt StockCheckerFunction.Arn`` calls the function ``StockCheckerFunction``.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .intrinsics import Unresolved
from .parameters import LOCAL_ACCOUNT

FUNCTION_TYPES = ("AWS::Serverless::Function", "AWS::Lambda::Function")
STATE_MACHINE_TYPES = ("AWS::Serverless::StateMachine", "AWS::StepFunctions::StateMachine")
TABLE_TYPES = ("AWS::Serverless::SimpleTable", "AWS::DynamoDB::Table")
TOPIC, QUEUE, BUCKET = "AWS::SNS::Topic", "AWS::SQS::Queue", "AWS::S3::Bucket"
SUBSCRIPTION = "AWS::SNS::Subscription"
# The resources `faastlane run` creates on a loopback endpoint, in this order (a
# subscription needs its queue and topic).
LOCAL_TYPES = (*TABLE_TYPES, QUEUE, TOPIC, BUCKET, SUBSCRIPTION)

# Type -> (the property naming it, the longest name AWS accepts).
_NAME_PROPERTIES = {
    "AWS::Serverless::SimpleTable": ("TableName", 255),
    "AWS::DynamoDB::Table": ("TableName", 255),
    TOPIC: ("TopicName", 256), QUEUE: ("QueueName", 80), BUCKET: ("BucketName", 63),
    "AWS::Serverless::Function": ("FunctionName", 64),
    "AWS::Lambda::Function": ("FunctionName", 64),
    "AWS::Serverless::StateMachine": ("Name", 80),
    "AWS::StepFunctions::StateMachine": ("StateMachineName", 80),
    "AWS::IAM::Role": ("RoleName", 64), "AWS::Events::EventBus": ("Name", 256),
}


@dataclass(frozen=True)
class Resource:
    """One entry of the template's ``Resources`` (properties as written, unresolved)."""

    logical_id: str
    type: str
    properties: dict[str, Any]
    where: str  # its JSON pointer: /Resources/ID
    inherited: frozenset[str] = frozenset()  # properties from SAM's Globals

    def at(self, key: str) -> str:
        """Where a property is written: in its Properties, or in Globals."""
        if key in self.inherited:
            return f"/Globals/Function/{key}"
        return f"{self.where}/Properties/{key}"


def generated_name(stack: str, logical_id: str, limit: int = 255, lower: bool = False) -> str:
    """``STACK-LogicalId-SUFFIX`` within ``limit`` characters, the suffix (13 characters,
    as CloudFormation's) derived from the stack and the logical id."""
    digest = hashlib.sha256(f"{stack}/{logical_id}".encode()).digest()
    suffix = base64.b32encode(digest).decode("ascii")[:13]
    head = f"{stack}-{logical_id}"[: max(1, limit - len(suffix) - 1)]
    name = f"{head}-{suffix}"
    return name.lower() if lower else name


class Names:
    """The physical names, ``Ref`` values and attributes of a template's resources."""

    def __init__(self, resources: dict[str, Resource], stack: str, region: str,
                 partition: str, resolve: Callable[[Any, str], Any]) -> None:
        self.resources = resources
        self.stack, self.region, self.partition = stack, region, partition
        self._resolve = resolve  # the template's resolver, for names the template sets
        self._names: dict[str, str] = {}

    def name(self, logical_id: str) -> str:
        """The resource's physical name (KeyError if there is no such resource)."""
        if logical_id in self._names:
            return self._names[logical_id]
        resource = self.resources[logical_id]
        key, limit = _NAME_PROPERTIES.get(resource.type, ("", 255))
        written = resource.properties.get(key) if key else None
        if written is not None:
            name = self._resolve(written, f"{resource.where}/Properties/{key}")
            if not isinstance(name, str):
                raise Unresolved(f"{key} must be a string", f"{resource.where}/Properties/{key}")
            if resource.type == QUEUE and resource.properties.get("FifoQueue") is True \
                    and not name.endswith(".fifo"):
                name += ".fifo"
        elif resource.type in FUNCTION_TYPES or resource.type in STATE_MACHINE_TYPES:
            name = logical_id  # runs inside the action: see the module's docstring
        else:
            name = generated_name(self.stack, logical_id, limit, lower=resource.type == BUCKET)
            if resource.type in (QUEUE, TOPIC) and resource.properties.get(
                    "FifoQueue" if resource.type == QUEUE else "FifoTopic") is True:
                name = name[: limit - 5] + ".fifo"
        self._names[logical_id] = name
        return name

    def _arn(self, service: str, rest: str, region: bool = True, account: bool = True) -> str:
        return (f"arn:{self.partition}:{service}:{self.region if region else ''}:"
                f"{LOCAL_ACCOUNT if account else ''}:{rest}")

    def queue_url(self, name: str) -> str:
        return f"https://sqs.{self.region}.amazonaws.com/{LOCAL_ACCOUNT}/{name}"

    def ref(self, logical_id: str, where: str) -> Any:
        """``Ref``: a name, an ARN or a URL, by type (KeyError: no such resource)."""
        kind = self.resources[logical_id].type
        name = self.name(logical_id)
        if kind == TOPIC:
            return self._arn("sns", name)
        if kind == QUEUE:
            return self.queue_url(name)
        if kind in STATE_MACHINE_TYPES:
            return self._arn("states", f"stateMachine:{name}")
        return name

    def get_att(self, logical_id: str, attribute: str, where: str) -> Any:
        """``Fn::GetAtt``: the attributes the modelled types document."""
        kind = self.resources[logical_id].type
        name = self.name(logical_id)
        attributes: dict[str, Callable[[], Any]] = {}
        if kind in TABLE_TYPES:
            arn = self._arn("dynamodb", f"table/{name}")
            attributes = {"Arn": lambda: arn,
                          "StreamArn": lambda: f"{arn}/stream/1970-01-01T00:00:00.000"}
        elif kind == TOPIC:
            attributes = {"TopicArn": lambda: self._arn("sns", name), "TopicName": lambda: name}
        elif kind == QUEUE:
            attributes = {"Arn": lambda: self._arn("sqs", name), "QueueName": lambda: name,
                          "QueueUrl": lambda: self.queue_url(name)}
        elif kind == BUCKET:
            attributes = {
                "Arn": lambda: self._arn("s3", name, region=False, account=False),
                "DomainName": lambda: f"{name}.s3.amazonaws.com",
                "RegionalDomainName": lambda: f"{name}.s3.{self.region}.amazonaws.com",
                "WebsiteURL": lambda: f"http://{name}.s3-website-{self.region}.amazonaws.com"}
        elif kind in FUNCTION_TYPES:
            attributes = {"Arn": lambda: self._arn("lambda", f"function:{name}")}
        elif kind in STATE_MACHINE_TYPES:
            attributes = {"Arn": lambda: self._arn("states", f"stateMachine:{name}"),
                          "Name": lambda: name}
        elif kind == "AWS::IAM::Role":
            attributes = {"Arn": lambda: self._arn("iam", f"role/{name}", region=False),
                          "RoleId": lambda: "AROA" + name.upper()[:17]}
        elif kind == "AWS::Events::EventBus":
            attributes = {"Arn": lambda: self._arn("events", f"event-bus/{name}"),
                          "Name": lambda: name}
        if attribute not in attributes:
            known = f" (it has {', '.join(sorted(attributes))})" if attributes else \
                f": {kind} is not modelled locally"
            raise Unresolved(f"Fn::GetAtt {logical_id}.{attribute} cannot be resolved{known}",
                             where)
        return attributes[attribute]()
