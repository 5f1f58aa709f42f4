"""The result of one workflow execution and how two results are compared.

A succeeded execution is its output JSON; a failed one is ``{"Error", "Cause"}`` as
Step Functions' ``DescribeExecution`` reports it. Outputs must be equal as JSON values.
Errors must have the same name; causes must be equal, except where a cause carries data
that differs from run to run by nature: when both causes are Lambda error documents
(``{"errorMessage", "errorType", "requestId", "stackTrace"}``, the document a Lambda task
reports as its Cause), the request id is fresh per invocation and the stack trace names
files and lines of whichever host ran the code, so those two are compared by type only,
and the message and type exactly. Step Functions' own runtime errors start "An error
occurred while executing the state 'S' (entered at the event id #N)."; N numbers events
of the execution history, whose order depends on how Parallel branches and Map
iterations interleave, so the number is masked while the rest must match.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_LAMBDA_ERROR_KEYS = frozenset({"errorMessage", "errorType", "requestId", "stackTrace"})
_EVENT_ID = re.compile(r"\(entered at the event id #\d+\)")


@dataclass(frozen=True)
class Outcome:
    """A finished execution: ``output`` if it succeeded, else ``error`` and ``cause``."""

    succeeded: bool
    output: Any = None
    error: str | None = None
    cause: str | None = None
    # False when only the error name is known: the documentation fixes no cause text.
    cause_known: bool = True

    @classmethod
    def success(cls, output: Any) -> Outcome:
        return cls(True, output=output)

    @classmethod
    def failure(cls, error: str | None, cause: str | None, cause_known: bool = True) -> Outcome:
        return cls(False, error=error, cause=cause, cause_known=cause_known)

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> Outcome:
        """An expectation as written in a case's ``expected.json``.

        Without a ``cause`` key only the error name is expected: used where the
        documentation names the error but fixes no cause text.
        """
        if "output" in document:
            return cls.success(document["output"])
        return cls.failure(document["error"], document.get("cause"), "cause" in document)

    def describe(self) -> str:
        if self.succeeded:
            return f"output {json.dumps(self.output, sort_keys=True)}"
        return f"error {self.error!r} cause {self.cause!r}"


def lambda_error_document(cause: str | None) -> dict[str, Any] | None:
    """The parsed Lambda error document in ``cause``, or None if it is not one."""
    if cause is None:
        return None
    try:
        document = json.loads(cause)
    except ValueError:
        return None
    if isinstance(document, dict) and set(document) == _LAMBDA_ERROR_KEYS:
        return document
    return None


def _causes_differ(expected: str | None, actual: str | None) -> str | None:
    expected_doc = lambda_error_document(expected)
    actual_doc = lambda_error_document(actual)
    if expected_doc is None or actual_doc is None:
        if _mask_event_id(expected) == _mask_event_id(actual):
            return None
        return f"cause {actual!r} != {expected!r}"
    for key in ("errorType", "errorMessage"):
        if expected_doc[key] != actual_doc[key]:
            return f"cause.{key} {actual_doc[key]!r} != {expected_doc[key]!r}"
    if not isinstance(actual_doc["requestId"], str) or not actual_doc["requestId"]:
        return f"cause.requestId {actual_doc['requestId']!r} is not a request id"
    trace = actual_doc["stackTrace"]
    if not isinstance(trace, list) or not all(isinstance(line, str) for line in trace):
        return f"cause.stackTrace {trace!r} is not a list of strings"
    return None


def _mask_event_id(cause: str | None) -> str | None:
    return None if cause is None else _EVENT_ID.sub("(entered at the event id #N)", cause)


def difference(expected: Outcome, actual: Outcome) -> str | None:
    """Why ``actual`` does not conform to ``expected``; None when it does."""
    if expected.succeeded != actual.succeeded:
        return f"expected {expected.describe()}, got {actual.describe()}"
    if expected.succeeded:
        if expected.output != actual.output or _json_types(expected.output) != _json_types(
            actual.output
        ):
            return f"output {json.dumps(actual.output)} != {json.dumps(expected.output)}"
        return None
    if expected.error != actual.error:
        return f"error {actual.error!r} != {expected.error!r} (cause {actual.cause!r})"
    if not expected.cause_known:
        return None
    return _causes_differ(expected.cause, actual.cause)


def _json_types(value: Any) -> Any:
    # 1 == 1.0 == True in Python, but ASL keeps integers, floats and booleans apart.
    if isinstance(value, dict):
        return {key: _json_types(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_types(item) for item in value]
    return type(value).__name__
