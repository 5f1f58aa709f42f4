"""Template parameters: defaults, ``--parameter-overrides`` as SAM takes them, and the
pseudo parameters (``AWS::Region``, ``AWS::StackName``, ...) with local defaults."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from faastlane.errors import FaastlaneError

# moto's and the documentation's account; the region of the environment, else us-east-1.
LOCAL_ACCOUNT = "123456789012"
DEFAULT_REGION = "us-east-1"
# AWS::NoValue removes the property that holds it; this marker stands for it until then.
NO_VALUE = object()

_LONG_FORM = re.compile(r"ParameterKey=(?P<key>[^,]*),ParameterValue=(?P<value>.*)\Z", re.S)


@dataclass(frozen=True)
class ProjectOptions:
    """What a command line says about a template (ignored for an app folder)."""

    parameter_overrides: tuple[str, ...] = ()
    state_machine: str | None = None  # logical id, when the template has several
    stack_name: str | None = None  # default: the template's folder name


def parse_overrides(values: Sequence[str]) -> dict[str, str]:
    """``Key=Value Key2=Value2`` and ``ParameterKey=K,ParameterValue=V``, as ``sam`` takes
    them: several arguments, or one argument holding several (quoted values kept whole)."""
    found: dict[str, str] = {}
    for value in values:
        for item in shlex.split(value):
            match = _LONG_FORM.match(item)
            if match:
                key, text = match.group("key"), match.group("value")
            elif "=" in item:
                key, _, text = item.partition("=")
            else:
                raise FaastlaneError(f"--parameter-overrides: {item!r} is not Key=Value or "
                                     "ParameterKey=Key,ParameterValue=Value")
            if not key:
                raise FaastlaneError(f"--parameter-overrides: {item!r} names no parameter")
            found[key] = text
    return found


def region() -> str:
    """The region functions and local resources use: as boto3 finds it, else us-east-1."""
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") \
        or DEFAULT_REGION


def partition(region_name: str) -> str:
    if region_name.startswith("cn-"):
        return "aws-cn"
    return "aws-us-gov" if region_name.startswith("us-gov-") else "aws"


def pseudo_parameters(stack_name: str) -> dict[str, Any]:
    """The pseudo parameters' values for a local stack."""
    name = region()
    part = partition(name)
    return {
        "AWS::Region": name,
        "AWS::AccountId": LOCAL_ACCOUNT,
        "AWS::StackName": stack_name,
        "AWS::StackId": f"arn:{part}:cloudformation:{name}:{LOCAL_ACCOUNT}:stack/"
                        f"{stack_name}/00000000-0000-0000-0000-000000000000",
        "AWS::Partition": part,
        "AWS::URLSuffix": "amazonaws.com.cn" if part == "aws-cn" else "amazonaws.com",
        "AWS::NotificationARNs": [],
        "AWS::NoValue": NO_VALUE,
    }


def parameter_value(declared: dict[str, Any], text: Any) -> Any:
    """A parameter's value as ``Ref`` gives it: a list for the list types, else a string
    (CloudFormation passes numbers as strings too)."""
    kind = str(declared.get("Type", "String"))
    if isinstance(text, list):
        return [str(item) for item in text]
    text = "true" if text is True else "false" if text is False else str(text)
    if kind == "CommaDelimitedList" or kind.startswith("List<"):
        return [item.strip() for item in text.split(",")] if text else []
    return text


def parameter_problem(declared: dict[str, Any], value: Any) -> str | None:
    """What CloudFormation would refuse in a parameter's value, or None."""
    if isinstance(value, list):
        return None
    allowed = declared.get("AllowedValues")
    if isinstance(allowed, list) and value not in [str(a) for a in allowed]:
        return f"{value!r} is not one of its AllowedValues {allowed}"
    pattern = declared.get("AllowedPattern")
    if isinstance(pattern, str) and re.fullmatch(pattern, value) is None:
        return f"{value!r} does not match its AllowedPattern {pattern!r}"
    if declared.get("Type") == "Number":
        try:
            float(value)
        except ValueError:
            return f"{value!r} is not a Number"
    return None
