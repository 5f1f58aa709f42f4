"""Choice states and their rules (JSONPath: Variable + one comparator, And/Or/Not;
JSONata: Condition)."""

from __future__ import annotations

from typing import Any

from faastlane.runtime.asl.choice import COMPARATORS, parse_timestamp

from . import fields as F
from . import jsonata_syntax as jsonata
from .checker import Checker, is_number
from .problem import child, did_you_mean

_KIND_WORDS = {
    "string": "a string",
    "numeric": "a number",
    "boolean": "a boolean",
    "timestamp": "an RFC 3339 timestamp string",
    "path": "a reference path string",
}


class ChoiceChecks(Checker):
    """Checks for the Choice state."""

    def state_choice(
        self, node: dict[str, Any], where: str, language: str, names: frozenset[str]
    ) -> None:
        """Choice: a non-empty Choices array of rules, and an optional Default."""
        if "Default" in node:
            self.target(node["Default"], child(where, "Default"), names)
        if "Choices" not in node:
            self.report(where, "a Choice state needs Choices")
            return
        rules, at = node["Choices"], child(where, "Choices")
        if not isinstance(rules, list) or not rules:
            self.report(at, "Choices must be a non-empty array of Choice rules")
            return
        for index, rule in enumerate(rules):
            self.choice_rule(rule, child(at, index), language, names)

    def choice_rule(
        self, rule: Any, where: str, language: str, names: frozenset[str] | None
    ) -> None:
        """One Choice rule; ``names`` is None for rules nested in And/Or/Not."""
        what = "a Choice rule" if names is not None else "a nested Choice rule"
        if not self.expect_object(rule, where, "a Choice rule"):
            return
        if names is not None:
            if "Next" in rule:
                self.target(rule["Next"], child(where, "Next"), names)
            else:
                self.report(where, "a top-level Choice rule needs Next")
            self.assign(rule, where, language)
        else:
            for key in ("Next", "Assign"):
                if key in rule:
                    self.report(
                        child(where, key), f"{key} is only allowed in top-level Choice rules"
                    )
        self.check_string(rule, "Comment", where)
        if language == F.JSONATA:
            self.check_fields(rule, where, F.CHOICE_RULE, language, what)
            if "Condition" not in rule:
                self.report(where, "a JSONata Choice rule needs a Condition")
            elif not isinstance(rule["Condition"], (str, bool)):
                self.report(
                    child(where, "Condition"), "Condition must be a JSONata expression or a boolean"
                )
            elif isinstance(rule["Condition"], str):
                if not jsonata.is_expression(rule["Condition"]):
                    self.report(
                        child(where, "Condition"),
                        "Condition must be a '{% ... %}' JSONata expression",
                    )
                self.jsonata_string(rule["Condition"], child(where, "Condition"))
            if "Output" in rule:
                self.jsonata_value(rule["Output"], child(where, "Output"))
            return
        self.jsonpath_rule(rule, where, what)

    def jsonpath_rule(self, rule: dict[str, Any], where: str, what: str) -> None:
        """A JSONPath rule: And/Or/Not, or a Variable with exactly one comparator."""
        structural = {"Next", "Comment", "Assign", "Variable", "And", "Or", "Not"}
        for key in rule:
            if key not in structural and key not in COMPARATORS:
                message = (
                    f"{key} is a JSONata field and this {what} uses JSONPath"
                    if key in F.CHOICE_RULE.jsonata
                    else f"unknown field {key!r} in {what}"
                    f"{did_you_mean(key, structural | set(COMPARATORS))}"
                )
                self.report(child(where, key), message)
        operators = [key for key in ("And", "Or", "Not") if key in rule]
        comparators = [key for key in rule if key in COMPARATORS]
        if operators:
            for key in operators[1:] + comparators + (["Variable"] if "Variable" in rule else []):
                self.report(
                    child(where, key), f"{key} cannot be combined with {operators[0]} in one rule"
                )
            self.boolean_rule(rule, operators[0], where)
            return
        if "Variable" not in rule:
            self.report(where, f"{what} needs Variable and a comparison, or And, Or or Not")
        else:
            self.path(rule["Variable"], child(where, "Variable"), reference=True)
        if not comparators:
            if "Variable" in rule:
                self.report(
                    where, f"{what} needs exactly one comparison operator (e.g. StringEquals)"
                )
            return
        for key in comparators[1:]:
            self.report(
                child(where, key),
                f"{key}: a Choice rule has exactly one comparison operator "
                f"({comparators[0]} is already used)",
            )
        self.operand(comparators[0], rule[comparators[0]], child(where, comparators[0]))

    def boolean_rule(self, rule: dict[str, Any], operator: str, where: str) -> None:
        value, at = rule[operator], child(where, operator)
        if operator == "Not":
            self.choice_rule(value, at, F.JSONPATH, None)
            return
        if not isinstance(value, list) or not value:
            self.report(at, f"{operator} must be a non-empty array of Choice rules")
            return
        for index, nested in enumerate(value):
            self.choice_rule(nested, child(at, index), F.JSONPATH, None)

    def operand(self, operator: str, value: Any, where: str) -> None:
        """The operand of a comparator has the type the comparator compares."""
        kind = COMPARATORS[operator]
        if kind == "path":
            self.path(value, where, reference=True)
            return
        valid = {
            "string": isinstance(value, str),
            "numeric": is_number(value),
            "boolean": isinstance(value, bool),
            "timestamp": isinstance(value, str) and parse_timestamp(value) is not None,
        }.get(kind, True)
        if not valid:
            self.report(
                where, f"{operator} compares against {_KIND_WORDS.get(kind, kind)}, not {value!r}"
            )
