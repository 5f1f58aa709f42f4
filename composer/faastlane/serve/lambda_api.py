"""The Lambda Invoke API (``POST /2015-03-31/functions/{FunctionName}/invocations``), as
``sam local start-lambda`` serves it: boto3's ``invoke`` and ``aws lambda invoke
--endpoint-url`` work unchanged. The function's name is the workflow's name (a full ARN
or ``NAME:$LATEST`` names it too).

- ``RequestResponse`` (the default): 200 with the output; a failed execution is 200 with
  ``X-Amz-Function-Error: Unhandled`` and ``{"errorMessage", "errorType", ...}``.
- ``Event``: 202 and an empty body, the execution runs after the answer.
- ``DryRun``: 204.
- An unknown function: 404 ``ResourceNotFoundException``; a body that is not JSON: 400
  ``InvalidRequestContentException`` (the error name in ``x-amzn-ErrorType``).
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
import uuid
from dataclasses import dataclass, field
from typing import Any

from .workflow import ChildDied, WarmWorkflow

PATH = re.compile(r"/2015-03-31/functions/(?P<name>[^/]+)/invocations\Z")
REGION, ACCOUNT = "us-east-1", "000000000000"
ARN = re.compile(r"arn:aws[\w-]*:lambda:[\w-]+:\d{12}:function:(?P<name>[^:]+)(:.+)?\Z")


@dataclass
class Answer:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def _json(status: int, value: object, **headers: str) -> Answer:
    return Answer(status, json.dumps(value).encode(), headers)


def _error(status: int, kind: str, message: str) -> Answer:
    return _json(status, {"Type": "User", "Message": message}, **{"x-amzn-ErrorType": kind})


def function_name(raw: str) -> str:
    """The bare function name of ``NAME``, ``NAME:QUALIFIER`` or an ARN."""
    name = urllib.parse.unquote(raw)
    found = ARN.match(name)
    if found:
        return found["name"]
    return name.split(":", 1)[0]


def invoke(workflow: WarmWorkflow, raw_name: str, invocation_type: str, body: bytes) -> Answer:
    name = function_name(raw_name)
    if name != workflow.name:
        return _error(404, "ResourceNotFoundException",
                      f"Function not found: arn:aws:lambda:{REGION}:{ACCOUNT}:function:"
                      f"{name}")
    try:
        event = json.loads(body) if body.strip() else {}
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return _error(400, "InvalidRequestContentException",
                      f"Could not parse request body into json: {exc}")
    request_id = str(uuid.uuid4())
    value = {"api": "lambda", "event": event, "request_id": request_id,
             "function": workflow.name}
    headers = {"x-amzn-RequestId": request_id, "X-Amz-Executed-Version": "$LATEST"}
    if invocation_type == "DryRun":
        return Answer(204, b"", headers)
    if invocation_type == "Event":
        threading.Thread(target=_quietly, args=(workflow, value), daemon=True).start()
        return Answer(202, b"", headers)
    if invocation_type not in ("", "RequestResponse"):
        return _error(400, "InvalidParameterValueException",
                      f"Unsupported invocation type {invocation_type!r}")
    try:
        answer = workflow.call(value)
    except ChildDied as exc:
        return _json(200, {"errorMessage": str(exc), "errorType": "Runtime.ExitError",
                           "requestId": request_id},
                     **headers, **{"X-Amz-Function-Error": "Unhandled"})
    if "result" in answer:
        return _json(200, answer["result"], **headers)
    error = answer["error"]
    if not isinstance(error, dict):  # the launcher caught something the entry raised
        error = {"errorMessage": str(error), "errorType": "Runtime.Error",
                 "requestId": request_id, "stackTrace": []}
    return _json(200, error, **headers, **{"X-Amz-Function-Error": "Unhandled"})


def _quietly(workflow: WarmWorkflow, value: dict[str, Any]) -> None:
    try:
        workflow.call(value)
    except ChildDied:
        pass  # Lambda reports an asynchronous failure nowhere the caller sees
