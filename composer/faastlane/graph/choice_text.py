"""Choice rules as short readable conditions: ``$.amount > 100``, ``not ($.x is null)``."""

from __future__ import annotations

import json
from typing import Any

_RELATIONS = {"Equals": "==", "LessThan": "<", "GreaterThan": ">", "LessThanEquals": "<=",
              "GreaterThanEquals": ">="}
_TESTS = {"IsNull": "null", "IsPresent": "present", "IsNumeric": "numeric",
          "IsString": "string", "IsBoolean": "boolean", "IsTimestamp": "timestamp"}
_FAMILIES = ("String", "Numeric", "Timestamp", "Boolean")


def _operand(value: Any) -> str:
    return value if isinstance(value, str) and value.startswith("$") else json.dumps(value)


def _comparison(variable: str, operator: str, value: Any) -> str:
    if operator in _TESTS:
        return f"{variable} is {'' if value else 'not '}{_TESTS[operator]}"
    if operator == "StringMatches":
        return f"{variable} matches {json.dumps(value)}"
    is_path = operator.endswith("Path")
    relation = operator.removesuffix("Path")
    for family in _FAMILIES:
        if relation.startswith(family) and relation[len(family):] in _RELATIONS:
            shown = value if is_path else json.dumps(value)
            return f"{variable} {_RELATIONS[relation[len(family):]]} {shown}"
    return f"{variable} {operator} {_operand(value)}"


def condition(rule: dict[str, Any]) -> str:
    """One Choice rule (JSONPath or JSONata) as an expression, nested rules compact."""
    if "Condition" in rule:  # JSONata: the expression itself, without {% %}
        text = str(rule["Condition"]).strip()
        return text.removeprefix("{%").removesuffix("%}").strip()
    if "And" in rule or "Or" in rule:
        word = "and" if "And" in rule else "or"
        parts = [condition(r) for r in rule.get("And", rule.get("Or", []))]
        return f" {word} ".join(p if " " not in p or len(parts) == 1 else f"({p})"
                                for p in parts)
    if "Not" in rule:
        return f"not ({condition(rule['Not'])})"
    operators = [k for k in rule if k not in ("Variable", "Next", "Comment", "Assign",
                                               "Output")]
    if not operators:
        return "?"
    return _comparison(str(rule.get("Variable", "$")), operators[0], rule[operators[0]])
