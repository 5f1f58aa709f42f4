"""Choice state rules: ``And``/``Or``/``Not`` and ``Variable`` + one comparison operator.

Rules from the Step Functions developer guide ("Choice workflow state") and the Amazon
States Language specification:

- "For each of these operators, the corresponding value must be of the appropriate
  type: string, number, Boolean, or timestamp. Step Functions doesn't attempt to match a
  numeric field to a string value": a Variable of the wrong type makes the comparison
  false, it is not an error.
- String ordering follows Java's ``String.compareTo`` (UTF-16 code units).
- Timestamps "must conform to RFC3339 profile ISO 8601, with further restrictions: an
  uppercase T must separate the date and time portions; an uppercase Z must denote that
  a numeric time zone offset isn't present". They compare as instants.
- ``StringMatches``: ``*`` matches any run of characters; ``\\*`` is a literal asterisk
  and ``\\\\`` a literal backslash.
- A ``...Path`` operator reads its second operand from the state's data (``$$`` from the
  context object).
- A Variable that is not present fails the state with ``States.Runtime`` - except for
  ``IsPresent``, which exists to test exactly that.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from .errors import NO_CHOICE_MATCHED, RUNTIME, StatesError
from .jsonpath import PathNotFound, read

STRING = "string"
NUMERIC = "numeric"
BOOLEAN = "boolean"
TIMESTAMP = "timestamp"
PATH = "path"

_ORDERINGS = {
    "Equals": operator.eq,
    "LessThan": operator.lt,
    "GreaterThan": operator.gt,
    "LessThanEquals": operator.le,
    "GreaterThanEquals": operator.ge,
}
_TYPE_TESTS = ("IsNull", "IsPresent", "IsNumeric", "IsString", "IsBoolean", "IsTimestamp")


def _comparators() -> dict[str, str]:
    table: dict[str, str] = {}
    for family, kind in (("String", STRING), ("Numeric", NUMERIC), ("Timestamp", TIMESTAMP)):
        for relation in _ORDERINGS:
            table[family + relation] = kind
            table[family + relation + "Path"] = PATH
    table["StringMatches"] = STRING  # no Path form exists
    table["BooleanEquals"] = BOOLEAN
    table["BooleanEqualsPath"] = PATH
    for test in _TYPE_TESTS:
        table[test] = BOOLEAN
    return table


COMPARATORS: dict[str, str] = _comparators()
"""Every comparison operator -> the kind of operand it takes (the validator's table)."""


# --------------------------------------------------------------------------------------
# Operand types
# --------------------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _java_string_key(value: str) -> bytes:
    # Big-endian UTF-16 bytes order exactly as Java's compareTo orders code units.
    return value.encode("utf-16-be", "surrogatepass")


_TIMESTAMP = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})"
)


@lru_cache(maxsize=1024)
def parse_timestamp(value: str) -> tuple[datetime, int] | None:
    """An RFC 3339 timestamp as (UTC instant to the second, nanoseconds), or None."""
    match = _TIMESTAMP.fullmatch(value)
    if not match:
        return None
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction, zone = match.group(7) or "", match.group(8)
    try:
        instant = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        return None
    if zone != "Z":
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        if hours > 23 or minutes > 59:
            return None
        offset = timedelta(hours=hours, minutes=minutes)
        instant = instant - offset if zone[0] == "+" else instant + offset
    nanos = int((fraction + "000000000")[:9])
    return instant, nanos


@lru_cache(maxsize=1024)
def _wildcard(pattern: str) -> re.Pattern[str]:
    parts: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern) and pattern[i + 1] in "*\\":
            parts.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        parts.append(".*" if char == "*" else re.escape(char))
        i += 1
    return re.compile("".join(parts), re.DOTALL)


# --------------------------------------------------------------------------------------
# Comparisons: (variable value, operand) -> bool; the wrong type compares false
# --------------------------------------------------------------------------------------


def _string(relation: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def compare(value: Any, operand: Any) -> bool:
        if not isinstance(value, str) or not isinstance(operand, str):
            return False
        return relation(_java_string_key(value), _java_string_key(operand))

    return compare


def _numeric(relation: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def compare(value: Any, operand: Any) -> bool:
        # Python compares 1 == 1.0 (and int with float) exactly, as the spec wants.
        return _is_number(value) and _is_number(operand) and relation(value, operand)

    return compare


def _timestamp(relation: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def compare(value: Any, operand: Any) -> bool:
        if not isinstance(value, str) or not isinstance(operand, str):
            return False
        left, right = parse_timestamp(value), parse_timestamp(operand)
        return left is not None and right is not None and relation(left, right)

    return compare


def _boolean_equals(value: Any, operand: Any) -> bool:
    return isinstance(value, bool) and isinstance(operand, bool) and value is operand


def _string_matches(value: Any, operand: Any) -> bool:
    return isinstance(value, str) and isinstance(operand, str) and bool(
        _wildcard(operand).fullmatch(value)
    )


def _type_test(test: Callable[[Any], bool]) -> Callable[[Any, Any], bool]:
    return lambda value, expected: test(value) is expected


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "BooleanEquals": _boolean_equals,
    "StringMatches": _string_matches,
    "IsNull": _type_test(lambda v: v is None),
    "IsNumeric": _type_test(_is_number),
    "IsString": _type_test(lambda v: isinstance(v, str)),
    "IsBoolean": _type_test(lambda v: isinstance(v, bool)),
    "IsTimestamp": _type_test(lambda v: isinstance(v, str) and parse_timestamp(v) is not None),
}
for _relation_name, _relation in _ORDERINGS.items():
    _COMPARE["String" + _relation_name] = _string(_relation)
    _COMPARE["Numeric" + _relation_name] = _numeric(_relation)
    _COMPARE["Timestamp" + _relation_name] = _timestamp(_relation)


# --------------------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------------------


def evaluate_rule(
    rule: dict[str, Any],
    data: Any,
    context: dict[str, Any],
    variables: Mapping[str, Any] | None = None,
) -> bool:
    """Whether one Choice rule (or nested And/Or/Not rule) matches the state's input.

    ``variables`` are the workflow variables that ``$name`` paths read.
    """
    if "And" in rule:
        return all(evaluate_rule(inner, data, context, variables) for inner in rule["And"])
    if "Or" in rule:
        return any(evaluate_rule(inner, data, context, variables) for inner in rule["Or"])
    if "Not" in rule:
        return not evaluate_rule(rule["Not"], data, context, variables)
    name = _operator_of(rule)
    variable = rule.get("Variable")
    if not isinstance(variable, str):
        raise StatesError(RUNTIME, f"A Choice rule with {name} needs a Variable path")
    operand = rule[name]
    try:
        value = read(data, variable, context, variables)
    except PathNotFound:
        if name == "IsPresent":
            return operand is False
        raise StatesError(
            RUNTIME,
            f"Invalid path '{variable}': The choice state's condition path references "
            "an invalid value.",
        ) from None
    if name == "IsPresent":
        return operand is True
    if name.endswith("Path"):
        name = name[: -len("Path")]
        try:
            operand = read(data, operand, context, variables)
        except PathNotFound:
            raise StatesError(
                RUNTIME,
                f"Invalid path '{rule[name + 'Path']}': The choice state's condition path "
                "references an invalid value.",
            ) from None
    return _COMPARE[name](value, operand)


def _operator_of(rule: dict[str, Any]) -> str:
    found = [key for key in rule if key in COMPARATORS]
    if len(found) != 1:
        what = "no comparison operator" if not found else f"several ({', '.join(found)})"
        raise StatesError(RUNTIME, f"A Choice rule must have exactly one comparison: {what}")
    return found[0]


def choose(
    choices: list[dict[str, Any]],
    default: str | None,
    data: Any,
    context: dict[str, Any],
    variables: Mapping[str, Any] | None = None,
) -> str:
    """The state a Choice state moves to: the first matching rule's Next, else Default.

    "If no Choice Rules match and no Default transition was specified, the interpreter
    raises States.NoChoiceMatched" (Amazon States Language specification).
    """
    for rule in choices:
        if evaluate_rule(rule, data, context, variables):
            return str(rule["Next"])
    if default is not None:
        return default
    raise no_choice_matched(context)


def no_choice_matched(context: dict[str, Any] | None) -> StatesError:
    """The error of a Choice state that no rule matched and that has no Default."""
    state = ((context or {}).get("State") or {}).get("Name")
    where = f" in state '{state}'" if state else ""
    return StatesError(
        NO_CHOICE_MATCHED, f"No Choice rule matched and no Default was specified{where}"
    )
