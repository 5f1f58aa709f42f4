"""The checker's toolbox: collecting problems and the checks every part of ASL shares.

Field sets and types, paths, payload templates (``.$`` keys), JSONata strings,
variables (``Assign``) and transitions. The state-specific checks build on
:class:`Checker` (``choice_rules``, ``error_handling``, ``map_state``, ``validate``).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import Any

from faastlane.runtime.asl import intrinsics
from faastlane.runtime.asl.jsonpath import PathSyntaxError, check_path, check_reference_path

from . import fields as F
from . import jsonata_syntax as jsonata
from .problem import Problem, child, closest, did_you_mean

# Any ARN (Task resources of AWS integrations, Map ItemReader/ResultWriter resources).
ARN = re.compile(r"^arn:aws[a-zA-Z-]*:(?P<service>[a-z0-9-]+):[^:]*:[^:]*:.+$")


def is_int(value: Any) -> bool:
    """A JSON integer (``true`` is not one, though Python thinks so)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A JSON number."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def json_type(value: Any) -> str:
    """How a JSON value's type reads in a message ("an array", "null", ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if is_number(value):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def other_language(language: str) -> str:
    """JSONata for JSONPath and the reverse."""
    return F.JSONATA if language == F.JSONPATH else F.JSONPATH


class Checker:
    """Collects problems; one instance walks one definition."""

    def __init__(self, functions: Collection[str] | None) -> None:
        self.functions = None if functions is None else frozenset(functions)
        self.problems: list[Problem] = []
        self.top_language = F.JSONPATH
        # State name -> pointer of the ``States`` object that defines it (whole document).
        self.owner: dict[str, str] = {}
        # A transition naming no state, but close to one: its pointer -> (the index of
        # its problem, the state it probably meant). Reachability folds the states left
        # unreachable only by that misspelling into that problem.
        self.misspelt: dict[str, tuple[int, str]] = {}

    def report(self, where: str, message: str, *, secondary: bool = False) -> None:
        self.problems.append(Problem(where, message, secondary=secondary))

    def check_fields(
        self, node: dict[str, Any], where: str, spec: F.StateFields, language: str, what: str
    ) -> None:
        """Report every field ``spec`` does not allow under ``language``."""
        allowed = spec.allowed(language)
        other = spec.allowed(other_language(language))
        for key in node:
            if key in allowed:
                continue
            if key in other:
                self.report(
                    child(where, key),
                    f"{key} is a {other_language(language)} field and this {what} uses {language}",
                )
            else:
                hint = did_you_mean(key, allowed)
                self.report(child(where, key), f"unknown field {key!r} in {what}{hint}")

    def check_plain_fields(
        self, node: dict[str, Any], where: str, allowed: Iterable[str], what: str
    ) -> None:
        """Report fields outside ``allowed`` (for parts that have no language variants)."""
        allowed = frozenset(allowed)
        for key in node:
            if key not in allowed:
                hint = did_you_mean(key, allowed)
                self.report(
                    child(where, key),
                    f"unknown field {key!r} in {what}{hint}"
                    f" (allowed: {', '.join(sorted(allowed))})",
                )

    def expect_object(self, value: Any, where: str, what: str) -> bool:
        if isinstance(value, dict):
            return True
        self.report(where, f"{what} must be a JSON object, not {json_type(value)}")
        return False

    def check_string(self, node: dict[str, Any], key: str, where: str, language: str = "") -> None:
        """An optional string field (which may hold a JSONata expression in JSONata)."""
        if key not in node:
            return
        value = node[key]
        if not isinstance(value, str):
            self.report(child(where, key), f"{key} must be a string, not {json_type(value)}")
        elif language == F.JSONATA:
            self.jsonata_string(value, child(where, key))

    def check_number(
        self,
        node: dict[str, Any],
        key: str,
        where: str,
        *,
        integer: bool = True,
        minimum: float | None = None,
        maximum: float | None = None,
        language: str = F.JSONPATH,
    ) -> None:
        """An optional numeric field; in JSONata it may also be a ``{% %}`` expression."""
        if key not in node:
            return
        value, at = node[key], child(where, key)
        if language == F.JSONATA and isinstance(value, str) and jsonata.is_expression(value):
            self.jsonata_string(value, at)
            return
        kind = "an integer" if integer else "a number"
        if not (is_int(value) if integer else is_number(value)):
            alternative = " or a JSONata expression" if language == F.JSONATA else ""
            self.report(at, f"{key} must be {kind}{alternative}, not {json_type(value)}")
        elif minimum is not None and value < minimum:
            self.report(at, f"{key} must be at least {minimum}, not {value}")
        elif maximum is not None and value > maximum:
            self.report(at, f"{key} must be at most {maximum}, not {value}")

    def exclusive(self, node: dict[str, Any], where: str, *keys: str) -> list[str]:
        """Report all but the first of ``keys`` present in ``node``; return those present."""
        present = [key for key in keys if key in node]
        for key in present[1:]:
            self.report(
                child(where, key), f"{key} and {present[0]} are mutually exclusive: use only one"
            )
        return present

    def path(
        self,
        value: Any,
        where: str,
        *,
        reference: bool = False,
        nullable: bool = False,
        intrinsic: bool = False,
    ) -> None:
        """A JSONPath-mode path field (or a ``.$`` value when ``intrinsic`` is allowed)."""
        kind = "reference path" if reference else "path"
        if value is None:
            if not nullable:
                self.report(where, f"must be a {kind}, not null")
            return
        if not isinstance(value, str):
            self.report(where, f"must be a {kind} string, not {json_type(value)}")
            return
        if intrinsic and intrinsics.is_intrinsic(value):
            try:
                intrinsics.check(value)
            except intrinsics.IntrinsicSyntaxError as error:
                self.report(where, f"invalid intrinsic function {value!r}: {error}")
            return
        try:
            (check_reference_path if reference else check_path)(value)
        except PathSyntaxError as error:
            what = "a path or an intrinsic function" if intrinsic else f"a valid {kind}"
            self.report(where, f"{value!r} is not {what}: {error}")

    def result_path(self, node: dict[str, Any], where: str) -> None:
        """``ResultPath``: a reference path into the state's input, or null."""
        if "ResultPath" not in node:
            return
        value, at = node["ResultPath"], child(where, "ResultPath")
        if isinstance(value, str) and not (value == "$" or value.startswith(("$.", "$["))):
            # Variables ($name) and the context object ($$) are read-only.
            self.report(at, f"ResultPath {value!r} must start with '$' (the state's input)")
            return
        self.path(value, at, reference=True, nullable=True)

    def template(self, value: Any, where: str) -> None:
        """A JSONPath payload template: ``.$`` keys hold paths or intrinsic functions."""
        if isinstance(value, list):
            for index, item in enumerate(value):
                self.template(item, child(where, index))
            return
        if not isinstance(value, dict):
            return
        for key, item in value.items():
            at = child(where, key)
            if not key.endswith(".$"):
                self.template(item, at)
                continue
            if key[:-2] in value:
                self.report(at, f"{key!r} and {key[:-2]!r} would both set the field {key[:-2]!r}")
            if not isinstance(item, str):
                self.report(
                    at,
                    f"a field ending in '.$' must hold a path or an intrinsic function string,"
                    f" not {json_type(item)}",
                )
            else:
                self.path(item, at, intrinsic=True)

    def jsonata_string(self, text: str, where: str) -> None:
        """A string value in a JSONata state: check ``{% %}`` expressions."""
        if jsonata.is_expression(text):
            try:
                jsonata.check_expression(text)
            except jsonata.JSONataSyntaxError as error:
                self.report(where, f"invalid JSONata expression: {error}")
        elif jsonata.is_half_wrapped(text):
            self.report(where, "a JSONata expression must start with '{%' and end with '%}'")

    def jsonata_value(self, value: Any, where: str) -> None:
        """Any JSON value of a JSONata field: every string in it may be an expression."""
        if isinstance(value, str):
            self.jsonata_string(value, where)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                self.jsonata_value(item, child(where, index))
        elif isinstance(value, dict):
            for key, item in value.items():
                self.jsonata_value(item, child(where, key))

    def payload(
        self,
        node: dict[str, Any],
        key: str,
        where: str,
        language: str,
        *,
        must_be_object: bool = False,
    ) -> None:
        """A payload field: ``Parameters``, ``ResultSelector``, ``Arguments``, ..."""
        if key not in node:
            return
        value, at = node[key], child(where, key)
        if language == F.JSONATA:
            if must_be_object and not (
                isinstance(value, dict) or (isinstance(value, str) and jsonata.is_expression(value))
            ):
                self.report(at, f"{key} must be a JSON object or a JSONata expression")
                return
            self.jsonata_value(value, at)
            return
        if must_be_object and not self.expect_object(value, at, key):
            return
        self.template(value, at)

    def assign(self, node: dict[str, Any], where: str, language: str) -> None:
        """``Assign``: variable names to values (templates in JSONPath, JSONata otherwise)."""
        if "Assign" not in node:
            return
        value, at = node["Assign"], child(where, "Assign")
        if not self.expect_object(value, at, "Assign"):
            return
        for key in value:
            name = key[:-2] if language == F.JSONPATH and key.endswith(".$") else key
            if name == "states":
                self.report(child(at, key), "'states' is a reserved variable name")
            elif not name:
                self.report(child(at, key), "a variable name cannot be empty")
        if language == F.JSONATA:
            self.jsonata_value(value, at)
        else:
            self.template(value, at)

    def target(self, value: Any, where: str, names: frozenset[str]) -> None:
        """A transition (``Next``, ``Default``): the name of a state of the same machine."""
        if not isinstance(value, str):
            self.report(where, f"must be a state name string, not {json_type(value)}")
        elif value not in names:
            if value in self.owner:
                self.report(
                    where,
                    f"{value!r} is defined at {self.owner[value]}, outside this state's"
                    " (sub-)machine: transitions stay within one States object",
                )
            else:
                meant = closest(value, names)
                if meant is not None:
                    self.misspelt[where] = (len(self.problems), meant)
                self.report(
                    where,
                    f"no state named {value!r} in this state machine{did_you_mean(value, names)}",
                )

    def machine(self, node: Any, where: str, allowed: frozenset[str], what: str) -> None:
        """Validate a (sub-)machine; implemented by the validator."""
        raise NotImplementedError
