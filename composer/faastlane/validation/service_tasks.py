"""Validation of Task states that call an AWS service integration.

A known integration validates; an unknown one, the callback pattern
(``.waitForTaskToken``) and a field an optimised integration does not pass on are
problems at their JSON pointers, as Step Functions refuses them when the state machine
is created. An ``aws-sdk`` integration is checked against boto3's service models when
botocore is installed (it ships with boto3): the service and its action must exist.
"""

from __future__ import annotations

from functools import cache, lru_cache
from typing import Any

from faastlane.runtime.asl.integrations import (
    Integration,
    UnsupportedIntegration,
    parse,
    snake_case,
    unsupported_fields,
)

from .problem import Problem, child, did_you_mean


@lru_cache(maxsize=1)
def _botocore_session() -> Any:
    try:
        import botocore.session
    except ImportError:  # aws-sdk actions are then only checked when called
        return None
    return botocore.session.get_session()


@cache
def _operations(service: str) -> frozenset[str] | None:
    """The snake_case actions of a boto3 service, None if botocore knows no such one."""
    session = _botocore_session()
    if session is None or service not in session.get_available_services():
        return None
    return frozenset(snake_case(op) for op in
                     session.get_service_model(service).operation_names)


def _sdk_problem(integration: Integration) -> str | None:
    """What is wrong with an AWS SDK integration (None: nothing, or botocore absent),
    without the resource: its callers say which."""
    if _botocore_session() is None:
        return None
    operations = _operations(integration.boto3_service)
    if operations is None:
        return (f"the AWS SDK has no service {integration.service!r} (name it as the AWS "
                "SDK for Java v2 does, e.g. s3, dynamodb, sfn, eventbridge)")
    if integration.operation not in operations:
        hint = did_you_mean(integration.action, sorted(_camel(op) for op in operations))
        return f"{integration.service} has no action {integration.action!r}{hint}"
    return None


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _checked_advice(refusal: UnsupportedIntegration) -> str:
    """The refusal's words, its AWS SDK suggestion kept only if that action exists
    (a suggestion must lead to something that validates)."""
    if refusal.instead is None:
        return str(refusal)
    problem = _sdk_problem(parse(refusal.instead))
    if problem is None:
        return str(refusal)
    return (f"{refusal.reason}; nor is there an AWS SDK action for it ({problem}): a "
            "function's code can make the call (a Lambda Task)")


def integration_problems(resource: str, node: dict[str, Any], where: str,
                         payload_key: str, for_faastlane: bool) -> list[Problem]:
    """Every problem of a Task whose Resource is a service integration. With
    ``for_faastlane`` (an app's workflow, not a bare definition), also what is valid ASL
    but that Faastlane cannot run (other optimised integrations, .waitForTaskToken)."""
    at = child(where, "Resource")
    try:
        integration = parse(resource)
    except UnsupportedIntegration as exc:
        return [Problem(at, _checked_advice(exc))] if for_faastlane else []
    if integration.sdk:
        problem = _sdk_problem(integration)
        return [] if problem is None else [Problem(at, f"{resource!r}: {problem}")]
    label = f"{integration.service}:{integration.action}"
    return [Problem(child(where, payload_key, key),
                    f"the field {key.removesuffix('.$')!r} is not supported by Step "
                    f"Functions for {label}")
            for key in unsupported_fields(integration, node.get(payload_key))]
