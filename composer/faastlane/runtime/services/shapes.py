"""A service call's parameters and response, between Step Functions' JSON and boto3.

Step Functions takes every API's parameters in PascalCase, whatever the API's own
casing (``aws-sdk:sfn:startExecution`` takes ``StateMachineArn``; boto3, as the API,
``stateMachineArn``); it turns a JSON value given for a string member into its JSON text
and one given for a binary member (S3's ``Body``) into the bytes of that text. Its
responses have PascalCase keys, no ``ResponseMetadata``, a streamed body read as text
(S3 ``getObject``'s ``Body``: LocalStack's recorded test_s3_get_object) and timestamps
as text (``aws-sdk``) or epoch milliseconds (optimised integrations).

Both directions walk the operation's botocore shapes, so only structure members are
renamed: the keys of maps (a DynamoDB item's attribute names) are data and stay as
they are. The shapes are duck-typed (``type_name``, ``members``, ``member``,
``value``): botocore is imported by :mod:`.clients` only.
"""

from __future__ import annotations

import base64
import datetime
import json
from typing import Any

STRUCTURE, LIST, MAP, STRING, BLOB, TIMESTAMP = (
    "structure", "list", "map", "string", "blob", "timestamp")


def _json_text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def request(parameters: Any, shape: Any) -> Any:
    """Parameters as boto3 takes them for an operation whose input shape is ``shape``."""
    if shape is None:
        return parameters
    kind = shape.type_name
    if kind == STRUCTURE and isinstance(parameters, dict):
        by_folded = {name.lower(): name for name in shape.members}
        out = {}
        for key, value in parameters.items():
            name = by_folded.get(key.lower(), key)  # unknown: boto3 names it in its error
            member = shape.members.get(name)
            out[name] = request(value, member) if member is not None else value
        return out
    if kind == LIST and isinstance(parameters, list):
        return [request(item, shape.member) for item in parameters]
    if kind == MAP and isinstance(parameters, dict):
        return {key: request(value, shape.value) for key, value in parameters.items()}
    if kind == STRING and parameters is not None and not isinstance(parameters, str):
        return _json_text(parameters)
    if kind == BLOB and not isinstance(parameters, (bytes, bytearray)):
        text = parameters if isinstance(parameters, str) else _json_text(parameters)
        return text.encode("utf-8")
    return parameters


def pascal_case(name: str) -> str:
    """``executionArn`` -> ``ExecutionArn``; ``ETag`` stays ``ETag``."""
    return name[:1].upper() + name[1:]


def response(value: Any, shape: Any, epoch_millis: bool = False) -> Any:
    """A boto3 response (or part of one) as Step Functions returns it."""
    if isinstance(value, dict):
        kind = None if shape is None else shape.type_name
        if kind == MAP:
            return {k: response(v, shape.value, epoch_millis) for k, v in value.items()}
        members = shape.members if kind == STRUCTURE else {}
        out = {}
        for key, item in value.items():
            if key == "ResponseMetadata":
                continue
            member = members.get(key)
            out[pascal_case(key) if member is not None else key] = response(
                item, member, epoch_millis)
        return out
    if isinstance(value, list):
        member = shape.member if shape is not None and shape.type_name == LIST else None
        return [response(item, member, epoch_millis) for item in value]
    if hasattr(value, "read"):  # a streamed body (botocore's StreamingBody)
        return value.read().decode("utf-8", errors="replace")
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, datetime.datetime):
        return timestamp(value, epoch_millis)
    return value


def timestamp(value: datetime.datetime, epoch_millis: bool) -> int | str:
    """An instant as the Java SDKs behind Step Functions write it: v1 (optimised
    integrations) as epoch milliseconds, v2 (aws-sdk) as ISO-8601 text in UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.UTC)
    if epoch_millis:
        return int(value.timestamp() * 1000)
    text = value.astimezone(datetime.UTC).isoformat()
    return text.replace("+00:00", "Z")
