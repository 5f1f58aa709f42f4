"""Which function a Task state's ``Resource`` names.

Step Functions accepts three spellings for a Lambda task, and so do we:

- a bare function name: ``"ValidateOrder"``;
- a Lambda function ARN: ``arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER]``;
- the optimised integration ``arn:aws:states:::lambda:invoke`` with the function in
  ``Parameters.FunctionName`` (a name, ``NAME:QUALIFIER``, a partial ARN
  ``ACCOUNT:function:NAME`` or a full ARN). Its result has the Lambda ``Invoke`` shape
  (``Payload``, ``StatusCode``, ...), not the bare payload.

Any other ``arn:aws:states:::SERVICE:ACTION`` is a service integration, which the
Orchestrator runs itself (``services/``); ``integrations`` says which ones it can.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .integrations import UnsupportedIntegration, is_integration, parse

LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"

_FUNCTION_ARN = re.compile(
    r"^arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:\d{12}:function:(?P<name>[A-Za-z0-9_-]+)"
    r"(?::(?P<qualifier>[A-Za-z0-9$_-]+))?$"
)
_PARTIAL_ARN = re.compile(r"^\d{12}:function:(?P<name>[A-Za-z0-9_-]+)(?::[A-Za-z0-9$_-]+)?$")
_NAME = re.compile(r"^(?P<name>[A-Za-z0-9_-]+)(?::[A-Za-z0-9$_-]+)?$")


@dataclass(frozen=True)
class TaskTarget:
    """The function a Task calls and how its result is shaped."""

    function: str | None  # None when it is only known at run time (``FunctionName.$``)
    invoke_shape: bool  # True for arn:aws:states:::lambda:invoke
    integration: str | None = None  # a service integration's Resource: no function


class UnsupportedResource(ValueError):
    """A Resource that names no function Faastlane can run."""


def function_name_of(reference: str) -> str:
    """The function name in a name, ``NAME:QUALIFIER``, partial or full Lambda ARN."""
    for pattern in (_FUNCTION_ARN, _PARTIAL_ARN, _NAME):
        match = pattern.match(reference)
        if match:
            return match.group("name")
    raise UnsupportedResource(f"{reference!r} is not a Lambda function name or ARN")


def task_target(resource: str, parameters: Any) -> TaskTarget:
    """Resolve a Task's ``Resource`` (and ``Parameters`` for ``lambda:invoke``)."""
    if resource == LAMBDA_INVOKE or resource.startswith(LAMBDA_INVOKE + "."):
        if resource != LAMBDA_INVOKE:
            raise UnsupportedResource(
                f"{resource!r}: only the request-response form of lambda:invoke is supported"
            )
        if not isinstance(parameters, dict):
            raise UnsupportedResource(f"{resource!r} needs Parameters.FunctionName")
        if "FunctionName" in parameters:
            name = parameters["FunctionName"]
            if not isinstance(name, str):
                raise UnsupportedResource("Parameters.FunctionName must be a string")
            return TaskTarget(function_name_of(name), invoke_shape=True)
        if "FunctionName.$" in parameters:
            return TaskTarget(None, invoke_shape=True)
        raise UnsupportedResource(f"{resource!r} needs Parameters.FunctionName")
    if is_integration(resource):
        try:
            parse(resource)
        except UnsupportedIntegration as exc:
            raise UnsupportedResource(str(exc)) from None
        return TaskTarget(None, invoke_shape=False, integration=resource)
    if resource.startswith("arn:") and not _FUNCTION_ARN.match(resource):
        raise UnsupportedResource(
            f"{resource!r} is not a Lambda function: Faastlane runs Python functions and "
            "service integrations (arn:aws:states:::...) only"
        )
    return TaskTarget(function_name_of(resource), invoke_shape=False)
