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
from typing import Any


class NotJSONSerializable(TypeError):
    """A value that JSON cannot represent; ``where`` is a JSONPath to it."""

    def __init__(self, value: Any, where: str) -> None:
        self.message = f"Object of type {type(value).__name__} is not JSON serializable"
        super().__init__(f"{self.message} (at {where})")
        self.where = where


def _key(key: Any, where: str) -> str:
    # json.dumps turns these key types into strings; anything else is an error.
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, (int, float)):
        return repr(key) if isinstance(key, float) else str(key)
    raise NotJSONSerializable(key, where)


def detach(value: Any, where: str = "$") -> Any:
    """A copy of ``value`` made of dict/list/str/int/float/bool/None, or raise.

    Tuples become lists and ``Decimal`` becomes int or float, as the Lambda Python
    runtime's encoder does.
    """
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, dict):
        return {_key(k, where): detach(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [detach(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    raise NotJSONSerializable(value, where)
