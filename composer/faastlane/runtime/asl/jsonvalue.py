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

    def __init__(self, value: Any, where: str, message: str | None = None) -> None:
        self.message = message or (f"Object of type {type(value).__name__} is not JSON "
                                   "serializable")
        super().__init__(f"{self.message} (at {where})")
        self.where = where


# json.dumps's words for a container that holds itself (awslambdaric reports them).
CIRCULAR = "Circular reference detected"


class _Rejected(Exception):
    """What the copying walks raise; :func:`detach` then finds where the value was."""

    def __init__(self, value: Any, message: str | None = None) -> None:
        self.value = value
        self.message = message


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

    Any depth: the recursive walk is the fast one (a comprehension per container), and
    only a value nested deeper than the Python stack allows -- or holding itself, which
    never ends -- is copied again by the iterative walk, which also finds cycles.
    """
    try:
        try:
            return _copy(value)
        except RecursionError:
            return _copy_deep(value)
    except _Rejected as rejected:
        culprit, message = rejected.value, rejected.message
    # Outside the handlers: no __context__.
    raise NotJSONSerializable(culprit, _where(value) or "$", message)


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


def _copy_deep(value: Any) -> Any:
    """:func:`_copy` without recursion, in the same order (so it rejects the same value).

    Each container is copied shallowly into its holder's slot; its slots, still holding
    the originals, are then filled in turn. An ``int`` on the stack is the id of a
    container whose slots are all done: it leaves the path, as json.dumps's markers do.
    """
    root = [value]
    stack: list[Any] = [(root, 0)]
    on_path: set[int] = set()
    while stack:
        item = stack.pop()
        if type(item) is int:
            on_path.remove(item)
            continue
        holder, slot = item
        node = holder[slot]
        if node is None or isinstance(node, _SCALARS):
            continue
        if isinstance(node, dict):
            copy: Any = {k if type(k) is str else _key(k): v for k, v in node.items()}
            slots: Any = reversed(list(copy))
        elif isinstance(node, (list, tuple)):
            copy = list(node)
            slots = range(len(copy) - 1, -1, -1)
        elif isinstance(node, decimal.Decimal):
            holder[slot] = decimal_number(node)
            continue
        else:
            raise _Rejected(node)
        if id(node) in on_path:
            raise _Rejected(node, CIRCULAR)
        holder[slot] = copy
        on_path.add(id(node))
        stack.append(id(node))
        stack.extend([(copy, s) for s in slots])
    return root[0]


_BAD_KEY = object()


def _where(value: Any) -> str | None:
    """The JSONPath of the first value the copying walks reject in ``value`` (of the
    object holding it, for a key; of the container met again, for a cycle), visiting in
    their order; None if there is none. Iterative, as :func:`_copy_deep`."""
    stack: list[tuple[Any, str] | int] = [(value, "$")]  # ids mark leaving a container
    on_path: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, int):
            on_path.remove(item)
            continue
        node, path = item
        if node is _BAD_KEY:
            return path
        if node is None or isinstance(node, (*_SCALARS, decimal.Decimal)):
            continue
        if isinstance(node, dict):
            # A key is checked just before its value, as the dict comprehension does.
            children = [(v, f"{path}.{k}") if k is None or isinstance(k, _SCALARS)
                        else (_BAD_KEY, path) for k, v in node.items()]
        elif isinstance(node, (list, tuple)):
            children = [(v, f"{path}[{i}]") for i, v in enumerate(node)]
        else:
            return path
        if id(node) in on_path:
            return path
        on_path.add(id(node))
        stack.append(id(node))
        stack.extend(reversed(children))
    return None


_NO_NULL = object()


def integral_floats_as_ints(value: Any, null: Any = _NO_NULL) -> Any:
    """A copy of a JSON value with its integral floats as ints (1.0 and 1 are one JSON
    number) and, when given, ``null`` (another library's null object) as None.
    Iterative: the value may be as deep as json reads."""
    root = [value]
    stack: list[Any] = [root]  # copies whose slots still hold the originals
    while stack:
        node = stack.pop()
        # Assigning to existing keys while iterating is safe: the dict's size stays.
        for slot, item in (node.items() if type(node) is dict else enumerate(node)):
            if isinstance(item, float):
                if item.is_integer():
                    node[slot] = int(item)
            elif item is null:
                node[slot] = None
            elif isinstance(item, list):
                node[slot] = copied_list = list(item)
                stack.append(copied_list)
            elif isinstance(item, dict):
                node[slot] = copied_dict = dict(item)
                stack.append(copied_dict)
    return root[0]


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
        except (TypeError, RecursionError):  # not plain JSON, or deeper than C's limit
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
