"""Comparing execution histories with AWS-recorded ones, normalised as LocalStack's
snapshot tests normalise what they record (``localstack-snapshot``'s parsing of JSON text
that holds an object, and ``SfnNoneRecursiveParallelTransformer`` of
localstack/localstack ``localstack-core/localstack/testing/pytest/stepfunctions/utils.py``,
Apache-2.0, ported here as it behaves, including that it drops ParallelStateSucceeded).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

_PARALLEL_ENDS = {"ParallelStateSucceeded", "ParallelStateAborted", "ParallelStateExited",
                  "ParallelStateFailed"}
_NOT_COMPARED = {"timestamp", "roleArn"}  # times, and the role's ARN


def _parsed(value: Any) -> Any:
    """JSON text holding an object becomes the object (as the snapshot library stores it)."""
    if isinstance(value, str) and value.startswith("{"):
        try:
            loaded = json.loads(value)
        except ValueError:
            return value
        return _parsed(loaded) if isinstance(loaded, dict) else value
    if isinstance(value, dict):
        return {k: _parsed(v) for k, v in value.items() if k not in _NOT_COMPARED}
    if isinstance(value, list):
        return [_parsed(v) for v in value]
    return value


def _parallel_normalised(events: list[dict]) -> None:
    """SfnNoneRecursiveParallelTransformer._normalise_events, line for line."""
    start_idx = None
    sublist: list[dict] = []
    in_sublist = False
    for i, event in enumerate(events):
        event_type = event.get("type")
        if event_type in _PARALLEL_ENDS:
            # The events it sorted had their keys in order (the recordings show it:
            # TaskStateEntered, TaskFailed, TaskScheduled by their details' names).
            events[start_idx:i] = sorted(sublist, key=lambda e: json.dumps(e, sort_keys=True))
            in_sublist = False
        elif event_type == "ParallelStateStarted":
            in_sublist = True
            sublist = []
            start_idx = i + 1
        elif in_sublist:
            event["id"] = [0]
            event["previousEventId"] = 0
            sublist.append(event)


def normalised(events: list[dict], parallel: bool = True) -> list[dict]:
    """Events as the recordings hold them: no times or role, JSON objects parsed, the
    events inside a Parallel made order-independent."""
    events = [_parsed(copy.deepcopy(event)) for event in events]
    if parallel:
        _parallel_normalised(events)
    return events


_ACCOUNT = "111111111111"  # the account id the recordings' transformers wrote
_WHOLE_PLACEHOLDERS = {"date", "timestamp"}  # values the recording's transformers replaced


def matches(recorded: Any, ours: Any) -> bool:
    """Whether our normalised value is the recorded one, where a recorded string may hold
    the placeholders LocalStack's transformers wrote (``<uuid:1>``, ``<json-input:1>``,
    ``arn:<partition>:...``): each stands for any text."""
    if isinstance(recorded, dict):
        return (isinstance(ours, dict) and recorded.keys() == ours.keys()
                and all(matches(recorded[k], ours[k]) for k in recorded))
    if isinstance(recorded, list):
        return (isinstance(ours, list) and len(recorded) == len(ours)
                and all(matches(r, o) for r, o in zip(recorded, ours, strict=True)))
    if isinstance(recorded, str) and isinstance(ours, (str, dict, list)):
        if recorded in _WHOLE_PLACEHOLDERS or recorded.startswith("<") and \
                recorded.endswith(">") and recorded.count("<") == 1:
            return True
        if "<" in recorded and isinstance(ours, str):
            pattern = "".join(".*" if part.startswith("<") else
                              re.escape(part).replace(_ACCOUNT, r"\d{12}")
                              for part in re.split(r"(<[^<>]+>)", recorded))
            return re.fullmatch(pattern, ours, re.DOTALL) is not None
    return recorded == ours


def lambda_payloads_dropped(value: Any) -> Any:
    """What a Lambda function answered, down to what the workflow decides on: an error's
    ``errorType`` and ``errorMessage`` (not its stack trace or request id), a
    ``lambda:invoke`` response's status (not its payload, headers or request id)."""
    if isinstance(value, dict):
        if "errorType" in value and "errorMessage" in value:
            return {k: value[k] for k in ("errorType", "errorMessage")}
        if "SdkHttpMetadata" in value:
            return {k: value.get(k) for k in ("StatusCode", "ExecutedVersion")}
        return {k: lambda_payloads_dropped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [lambda_payloads_dropped(v) for v in value]
    return value
