"""Parse ``workflow.json`` strictly: JSON syntax errors and duplicate keys are problems.

``json.loads`` silently keeps the last of two equal keys; Step Functions rejects such a
definition, and a silently dropped state or field is the worst kind of surprise, so
duplicates are detected here and reported with the pointer of the repeated key.
"""

from __future__ import annotations

import json
from typing import Any

from .problem import Problem, child, sort_key


class _Object(dict[str, Any]):
    """A parsed JSON object that remembers which of its keys appeared more than once."""

    duplicates: list[str]


def _make_object(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object()
    obj.duplicates = []
    for key, value in pairs:
        if key in obj and key not in obj.duplicates:
            obj.duplicates.append(key)
        obj[key] = value
    return obj


def _plain(value: Any, where: str, problems: list[Problem]) -> Any:
    """Turn parsed ``_Object`` values into plain dicts, reporting duplicate keys."""
    if isinstance(value, _Object):
        for key in value.duplicates:
            problems.append(
                Problem(
                    child(where, key), f"duplicate key {key!r}: JSON object keys must be unique"
                )
            )
        return {key: _plain(item, child(where, key), problems) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item, child(where, index), problems) for index, item in enumerate(value)]
    return value


def load_definition(text: str) -> tuple[Any, list[Problem]]:
    """Parse a workflow definition.

    Returns the parsed document (``None`` when the text is not JSON) and the problems
    found while parsing: a syntax error (pointer ``""``, line and column in the message),
    non-standard constants (``NaN``, ``Infinity``) and duplicate object keys.
    """
    constants: list[str] = []

    def reject_constant(name: str) -> float:
        constants.append(name)
        return float("nan")

    try:
        raw = json.loads(text, object_pairs_hook=_make_object, parse_constant=reject_constant)
    except json.JSONDecodeError as error:
        return None, [
            Problem("", f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}")
        ]
    problems = [Problem("", f"{name} is not valid JSON") for name in dict.fromkeys(constants)]
    document = _plain(raw, "", problems)
    return document, sorted(problems, key=sort_key)
