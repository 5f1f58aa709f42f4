"""Function results as JSON values: checked and detached in one pass.

Lambda serialises a handler's return value to JSON; a value it cannot serialise fails the
invocation with ``Runtime.MarshalError``. Faastlane passes state by reference instead of
serialising it, so it checks the same rule structurally and, in the same walk, copies the
containers: the orchestrator then owns the state it hands on, and a function that later
mutates an object it returned (a module-level cache, say) cannot change another
function's input. Strings and numbers are immutable and shared, so the cost is one visit
per container element, independent of how many bytes the strings hold.
"""

from __future__ import annotations

import decimal
import json
from typing import Any


class NotJSONSerializable(TypeError):
    """A value that JSON cannot represent; ``where`` is a JSONPath to it."""

    def __init__(self, value: Any, where: str) -> None:
        self.message = f"Object of type {type(value).__name__} is not JSON serializable"
        super().__init__(f"{self.message} (at {where})")
        self.where = where


class _Rejected(Exception):
    """What :func:`_copy` raises; :func:`detach` then finds where the value was."""

    def __init__(self, value: Any) -> None:
        self.value = value


_SCALARS = (str, bool, int, float)


def _key(key: Any) -> str:
    # json.dumps turns these key types into strings; anything else is an error.
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, (int, float)):
        return repr(key) if isinstance(key, float) else str(key)
    raise _Rejected(key)


def decimal_number(value: decimal.Decimal) -> int | float:
    """A Decimal as awslambdaric's encoder writes it: an int when integral, else a float."""
    return int(value) if value == value.to_integral_value() else float(value)


def lambda_default(value: Any) -> Any:
    """``json.dumps``'s ``default`` with awslambdaric's rules: a Decimal is a number,
    anything else outside JSON's types is not serializable."""
    if isinstance(value, decimal.Decimal):
        return decimal_number(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def detach(value: Any) -> Any:
    """A copy of ``value`` made of dict/list/str/int/float/bool/None, or raise.

    Tuples become lists and ``Decimal`` becomes int or float, as the Lambda Python
    runtime's encoder does. Every hand-off copies its event with this, so the copying
    walk builds no JSONPath per element (that made it ~1.5x slower); one is found only
    for a value that fails.
    """
    try:
        return _copy(value)
    except _Rejected as rejected:
        culprit = rejected.value
    raise NotJSONSerializable(culprit, _where(value, "$") or "$")  # outside: no __context__


def _copy(value: Any) -> Any:
    if value is None or isinstance(value, _SCALARS):
        return value
    if isinstance(value, dict):
        return {k if type(k) is str else _key(k): _copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_copy(v) for v in value]
    if isinstance(value, decimal.Decimal):
        return decimal_number(value)
    raise _Rejected(value)


def _where(node: Any, path: str) -> str | None:
    """The JSONPath of the first value :func:`_copy` rejects in ``node`` (of the object
    holding it, for a key), visiting in the same order; None if there is none."""
    if node is None or isinstance(node, (*_SCALARS, decimal.Decimal)):
        return None
    if isinstance(node, dict):
        for k, v in node.items():
            if not (k is None or isinstance(k, _SCALARS)):
                return path
            found = _where(v, f"{path}.{k}")
            if found is not None:
                return found
        return None
    if isinstance(node, (list, tuple)):
        for i, v in enumerate(node):
            found = _where(v, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    return path


try:  # the cpython-mpk runtime copies containers in C; elsewhere detach does it
    from _faastlane import copy_json as _copy_containers

    _copy_containers({})  # an extension-module build of _faastlane cannot
except (ImportError, RuntimeError):
    _copy_containers = None


def copy_event(value: Any) -> Any:
    """A function's own copy of its event: its containers copied, its immutable leaves
    shared, as :func:`detach` makes it (``_faastlane.copy_json`` does the same in C for
    plain JSON values, ~3x faster; anything else goes through ``detach``)."""
    if _copy_containers is not None:
        try:
            return _copy_containers(value)
        except TypeError:
            pass
    return detach(value)


# Values quoted in error causes, as AWS quotes them.

# One encoder for all calls: json.dumps builds a new one whenever options are given.
_COMPACT_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def compact_json(value: Any) -> str:
    """JSON text without spaces, as AWS quotes values in causes."""
    return _COMPACT_ENCODER.encode(value)


def json_type(value: Any) -> str:
    """The JSON type name of a value, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
