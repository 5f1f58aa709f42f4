"""Validate an ASL definition: every problem, each with a JSON pointer.

The validator never stops at the first problem. It walks the whole document once,
checking, per the Amazon States Language specification and the Step Functions
developer guide:

- the top level (``StartAt``, ``States``, ``Comment``, ``Version``, ``TimeoutSeconds``,
  ``QueryLanguage``) and each (sub-)machine of a Parallel branch or Map processor;
- each state's ``Type`` and the fields that type allows in its query language (an
  unknown field is an error, as in Step Functions), with their JSON types and ranges;
- transitions: ``Next``/``End``, Choice rules and ``Default``, ``Catch``; that they name a
  state of the same (sub-)machine, that every state is reachable, that a terminal
  state exists, and that state names are unique across the whole definition;
- every path, payload template (``.$`` keys), intrinsic function and JSONata expression.

Paths and intrinsic functions are parsed by the runtime's own parsers, so validation and
execution can never disagree on what is valid.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import Any

from faastlane.asl import fields as F
from faastlane.asl import jsonata
from faastlane.asl.problem import Problem, child, sort_key
from faastlane.runtime import intrinsics
from faastlane.runtime.choice import COMPARATORS, parse_timestamp
from faastlane.runtime.paths import PathSyntaxError, check_path, check_reference_path
from faastlane.runtime.resources import LAMBDA_INVOKE, UnsupportedResource, task_target

# Limits from the Step Functions developer guide ("Quotas" and the state pages).
MAX_STATE_NAME = 80
MAX_SECONDS = 99_999_999
MAX_DELAY_SECONDS = 31_622_400
MAX_MAP_LABEL = 40
STATES_ALL = "States.ALL"

# A Lambda function ARN, as Step Functions checks it when the definition is created.
_LAMBDA_ARN = re.compile(
    r"^arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]*:\d*:function:[A-Za-z0-9_-]{1,64}"
    r"(:(\$LATEST|[A-Za-z0-9_-]{1,128}))?$"
)
_ARN = re.compile(r"^arn:aws[a-zA-Z-]*:(?P<service>[a-z0-9-]+):[^:]*:[^:]*:.+$")
# A bare function name (Faastlane's short form for a Lambda function of the app).
_FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}(:(\$LATEST|[A-Za-z0-9_-]{1,128}))?$")
# A CloudFormation/SAM DefinitionSubstitutions placeholder, replaced before deployment.
_PLACEHOLDER = re.compile(r"^\$\{[A-Za-z0-9_.:-]+\}$")

_KIND_WORDS = {
    "string": "a string",
    "numeric": "a number",
    "boolean": "a boolean",
    "timestamp": "an RFC 3339 timestamp string",
    "path": "a reference path string",
}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if _is_number(value):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _other(language: str) -> str:
    return F.JSONATA if language == F.JSONPATH else F.JSONPATH


class _Validator:
    """Walks a definition once and collects every problem it finds."""

    def __init__(self, functions: Collection[str] | None) -> None:
        self.functions = None if functions is None else frozenset(functions)
        self.problems: list[Problem] = []
        self.top_language = F.JSONPATH
        # State name -> pointer of the ``States`` object that defines it (whole document).
        self.owner: dict[str, str] = {}

    def report(self, where: str, message: str) -> None:
        self.problems.append(Problem(where, message))

    # ----------------------------------------------------------------- generic checks

    def check_fields(
        self, node: dict[str, Any], where: str, spec: F.StateFields, language: str, what: str
    ) -> None:
        """Report every field ``spec`` does not allow under ``language``."""
        allowed = spec.allowed(language)
        other = spec.allowed(_other(language))
        for key in node:
            if key in allowed:
                continue
            if key in other:
                self.report(
                    child(where, key),
                    f"{key} is a {_other(language)} field and this {what} uses {language}",
                )
            else:
                self.report(child(where, key), f"unknown field {key!r} in {what}")

    def check_plain_fields(
        self, node: dict[str, Any], where: str, allowed: Iterable[str], what: str
    ) -> None:
        """Report fields outside ``allowed`` (for parts that have no language variants)."""
        allowed = frozenset(allowed)
        for key in node:
            if key not in allowed:
                self.report(
                    child(where, key),
                    f"unknown field {key!r} in {what} (allowed: {', '.join(sorted(allowed))})",
                )

    def expect_object(self, value: Any, where: str, what: str) -> bool:
        if isinstance(value, dict):
            return True
        self.report(where, f"{what} must be a JSON object, not {_json_type(value)}")
        return False

    def check_string(self, node: dict[str, Any], key: str, where: str, language: str = "") -> None:
        """An optional string field (which may hold a JSONata expression in JSONata)."""
        if key not in node:
            return
        value = node[key]
        if not isinstance(value, str):
            self.report(child(where, key), f"{key} must be a string, not {_json_type(value)}")
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
        if not (_is_int(value) if integer else _is_number(value)):
            alternative = " or a JSONata expression" if language == F.JSONATA else ""
            self.report(at, f"{key} must be {kind}{alternative}, not {_json_type(value)}")
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

    # -------------------------------------------------------- paths and expressions

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
            self.report(where, f"must be a {kind} string, not {_json_type(value)}")
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
            what = f"a path or an intrinsic function" if intrinsic else f"a valid {kind}"
            self.report(where, f"{value!r} is not {what}: {error}")

    def result_path(self, node: dict[str, Any], where: str) -> None:
        """``ResultPath``: a reference path into the state's input, or null."""
        if "ResultPath" not in node:
            return
        value, at = node["ResultPath"], child(where, "ResultPath")
        if isinstance(value, str) and not (
            value == "$" or value.startswith("$.") or value.startswith("$[")
        ):
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
                self.report(
                    at, f"{key!r} and {key[:-2]!r} would both set the field {key[:-2]!r}"
                )
            if not isinstance(item, str):
                self.report(
                    at,
                    f"a field ending in '.$' must hold a path or an intrinsic function string,"
                    f" not {_json_type(item)}",
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
            self.report(
                where, "a JSONata expression must start with '{%' and end with '%}'"
            )

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

    def payload(self, node: dict[str, Any], key: str, where: str, language: str,
                *, must_be_object: bool = False) -> None:
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

    # ------------------------------------------------------------------- machines

    def machine(self, node: Any, where: str, allowed: frozenset[str], what: str) -> None:
        """A state machine: the top level, a Parallel branch or a Map item processor."""
        if not self.expect_object(node, where, what):
            return
        self.check_plain_fields(node, where, allowed, what)
        self.check_string(node, "Comment", where)
        states_at = child(where, "States")
        states = node.get("States")
        if "States" not in node:
            self.report(where, f"{what} needs a States object")
            states = {}
        elif not self.expect_object(states, states_at, "States"):
            states = {}
        elif not states:
            self.report(states_at, "States must define at least one state")
        for name in states:
            self.register(name, child(states_at, name), states_at)

        start = node.get("StartAt")
        if "StartAt" not in node:
            self.report(where, f"{what} needs StartAt (the name of its first state)")
        elif not isinstance(start, str):
            self.report(child(where, "StartAt"), f"StartAt must be a string, not {_json_type(start)}")
        elif start not in states:
            self.report(child(where, "StartAt"), f"StartAt names {start!r}, which is not in States")

        names = frozenset(states)
        for name, state in states.items():
            self.state(state, child(states_at, name), names)
        if states:
            self.reachability(states, states_at, start if start in states else None)

    def register(self, name: str, where: str, states_at: str) -> None:
        """Record a state name; names are unique in the whole definition, nested or not."""
        if not name:
            self.report(where, "a state name cannot be empty")
        elif len(name) > MAX_STATE_NAME:
            self.report(where, f"state name is {len(name)} characters long; at most {MAX_STATE_NAME} are allowed")
        if name in self.owner:
            self.report(
                where,
                f"state name {name!r} is already used at {self.owner[name]}: state names"
                " must be unique in the whole state machine",
            )
        else:
            self.owner[name] = states_at

    def reachability(self, states: dict[str, Any], states_at: str, start: str | None) -> None:
        """Every state reachable from StartAt, and at least one terminal state."""
        terminal = [
            name for name, state in states.items()
            if isinstance(state, dict)
            and (state.get("Type") in ("Succeed", "Fail") or state.get("End") is True)
        ]
        # A state without a valid Type is already reported; whether it was meant to
        # end the machine is unknowable, so do not add a cascade.
        typed = all(isinstance(s, dict) and s.get("Type") in F.STATE_FIELDS for s in states.values())
        if not terminal and typed:
            self.report(states_at, "no terminal state: one state needs End: true, or a Succeed or Fail state")
        if start is None:
            return  # already reported; reachability would only repeat it
        seen = {start}
        todo = [start]
        while todo:
            for target in _transitions(states[todo.pop()]):
                if target in states and target not in seen:
                    seen.add(target)
                    todo.append(target)
        for name in states:
            if name not in seen:
                self.report(child(states_at, name), f"state {name!r} is unreachable from StartAt")

    def target(self, value: Any, where: str, names: frozenset[str]) -> None:
        """A transition (``Next``, ``Default``): the name of a state of the same machine."""
        if not isinstance(value, str):
            self.report(where, f"must be a state name string, not {_json_type(value)}")
        elif value not in names:
            if value in self.owner:
                self.report(
                    where,
                    f"{value!r} is defined at {self.owner[value]}, outside this state's"
                    " (sub-)machine: transitions stay within one States object",
                )
            else:
                self.report(where, f"no state named {value!r} in this state machine")

    # --------------------------------------------------------------------- states

    def state(self, node: Any, where: str, names: frozenset[str]) -> None:
        """One state: its type, fields, transitions and type-specific rules."""
        if not self.expect_object(node, where, "a state"):
            return
        kind = node.get("Type")
        if "Type" not in node:
            self.report(where, "a state needs a Type")
            return
        if kind not in F.STATE_FIELDS:
            self.report(
                child(where, "Type"),
                f"unknown state Type {kind!r} (one of: {', '.join(F.STATE_FIELDS)})",
            )
            return
        language = self.language(node, where)
        self.check_fields(node, where, F.STATE_FIELDS[kind], language, f"a {language} {kind} state")
        self.check_string(node, "Comment", where)
        if kind in F.FLOW_STATES:
            self.flow(node, where, names)
        if language == F.JSONPATH:
            for key in ("InputPath", "OutputPath"):
                if key in node:
                    self.path(node[key], child(where, key), nullable=True)
            self.result_path(node, where)
            self.payload(node, "Parameters", where, language)
            self.payload(node, "ResultSelector", where, language, must_be_object=True)
        else:
            if "Output" in node:
                self.jsonata_value(node["Output"], child(where, "Output"))
            self.payload(node, "Arguments", where, language, must_be_object=True)
        self.assign(node, where, language)
        if "Retry" in node:
            self.retry(node["Retry"], child(where, "Retry"))
        if "Catch" in node:
            self.catch(node["Catch"], child(where, "Catch"), language, names)
        getattr(self, f"state_{kind.lower()}")(node, where, language, names)

    def language(self, node: dict[str, Any], where: str) -> str:
        """The state's query language: its own QueryLanguage or the top level's."""
        if "QueryLanguage" not in node:
            return self.top_language
        value, at = node["QueryLanguage"], child(where, "QueryLanguage")
        if value not in F.QUERY_LANGUAGES:
            self.report(at, f"QueryLanguage must be JSONPath or JSONata, not {value!r}")
            return self.top_language
        if value == F.JSONPATH and self.top_language == F.JSONATA:
            # "If JSONata is specified at the top level, JSONPath cannot be used in the
            # state machine definition" (Step Functions, QueryLanguage).
            self.report(at, "a state cannot use JSONPath when the top-level QueryLanguage is JSONata")
        return str(value)

    def flow(self, node: dict[str, Any], where: str, names: frozenset[str]) -> None:
        """``Next`` or ``End: true``, exactly one."""
        end = node.get("End")
        if "End" in node and not isinstance(end, bool):
            self.report(child(where, "End"), f"End must be true, not {_json_type(end)}")
        if "Next" in node:
            self.target(node["Next"], child(where, "Next"), names)
            if end is True:
                self.report(where, "a state cannot have both Next and End: true")
        elif end is not True:
            self.report(where, f"a {node['Type']} state needs Next or End: true")

    def state_pass(self, node: dict[str, Any], where: str, language: str, names: frozenset[str]) -> None:
        """Pass: everything is checked by the common fields."""

    def state_succeed(self, node: dict[str, Any], where: str, language: str, names: frozenset[str]) -> None:
        """Succeed: everything is checked by the common fields."""

    def state_fail(self, node: dict[str, Any], where: str, language: str, names: frozenset[str]) -> None:
        """Fail: Error/ErrorPath and Cause/CausePath, one of each pair at most."""
        for static, dynamic in (("Error", "ErrorPath"), ("Cause", "CausePath")):
            self.exclusive(node, where, static, dynamic)
            self.check_string(node, static, where, language)
            if dynamic in node:
                self.path(node[dynamic], child(where, dynamic), reference=True, intrinsic=True)

    def state_wait(self, node: dict[str, Any], where: str, language: str, names: frozenset[str]) -> None:
        """Wait: exactly one of Seconds, SecondsPath, Timestamp, TimestampPath."""
        keys = ("Seconds", "Timestamp") if language == F.JSONATA else (
            "Seconds", "SecondsPath", "Timestamp", "TimestampPath")
        if not self.exclusive(node, where, *keys):
            self.report(where, f"a Wait state needs one of {', '.join(keys)}")
        self.check_number(node, "Seconds", where, minimum=0, maximum=MAX_SECONDS, language=language)
        if "Timestamp" in node:
            value, at = node["Timestamp"], child(where, "Timestamp")
            if language == F.JSONATA and isinstance(value, str) and jsonata.is_expression(value):
                self.jsonata_string(value, at)
            elif not isinstance(value, str) or not parse_timestamp(value) is not None:
                self.report(at, f"Timestamp must be an RFC 3339 timestamp such as"
                                f" '2016-03-14T01:59:00Z', not {value!r}")
        for key in ("SecondsPath", "TimestampPath"):
            if key in node:
                self.path(node[key], child(where, key), reference=True)

    def state_task(self, node: dict[str, Any], where: str, language: str, names: frozenset[str]) -> None:
        """Task: Resource, timeouts and heartbeats, Credentials."""
        if "Resource" not in node:
            self.report(where, "a Task state needs a Resource")
        else:
            self.resource(node, where, language)
        for key in ("TimeoutSeconds", "HeartbeatSeconds"):
            self.exclusive(node, where, key, key + "Path")
            self.check_number(node, key, where, minimum=1, maximum=MAX_SECONDS, language=language)
            if key + "Path" in node:
                self.path(node[key + "Path"], child(where, key + "Path"), reference=True)
        timeout, heartbeat = node.get("TimeoutSeconds"), node.get("HeartbeatSeconds")
        if _is_int(timeout) and _is_int(heartbeat) and heartbeat >= timeout:
            self.report(child(where, "HeartbeatSeconds"),
                        f"HeartbeatSeconds ({heartbeat}) must be smaller than TimeoutSeconds ({timeout})")
        self.payload(node, "Credentials", where, language, must_be_object=True)

    def resource(self, node: dict[str, Any], where: str, language: str) -> None:
        """A Task's Resource: well formed, and with functions given, backed by code."""
        resource, at = node["Resource"], child(where, "Resource")
        if not isinstance(resource, str):
            self.report(at, f"Resource must be a string, not {_json_type(resource)}")
            return
        arn = _ARN.match(resource)
        if arn and arn.group("service") == "lambda" and not _LAMBDA_ARN.match(resource):
            self.report(at, f"{resource!r} is not a valid Lambda function ARN")
            return
        if not (arn or _FUNCTION_NAME.match(resource) or _PLACEHOLDER.match(resource)):
            self.report(at, f"Resource {resource!r} is neither an ARN nor a function name")
            return
        if self.functions is None:
            return
        payload_key = "Arguments" if language == F.JSONATA else "Parameters"
        payload = node.get(payload_key)
        name_at = child(where, payload_key, "FunctionName")
        if (
            resource == LAMBDA_INVOKE
            and language == F.JSONATA
            and isinstance(payload, dict)
            and isinstance(payload.get("FunctionName"), str)
            and jsonata.is_expression(payload["FunctionName"])
        ):
            return  # chosen at run time
        try:
            target = task_target(resource, payload)
        except UnsupportedResource as error:
            self.report(at, str(error))
            return
        if target.function is None or target.function in self.functions:
            return
        provided = ", ".join(sorted(self.functions)) or "none"
        self.report(
            name_at if target.invoke_shape else at,
            f"no function code for {target.function!r}: add functions/{target.function}.py"
            f" or functions/{target.function}/ (the app provides: {provided})",
        )

    def state_parallel(self, node: dict[str, Any], where: str, language: str, names: frozenset[str]) -> None:
        """Parallel: Branches, each a complete sub-machine."""
        if "Branches" not in node:
            self.report(where, "a Parallel state needs Branches")
            return
        branches, at = node["Branches"], child(where, "Branches")
        if not isinstance(branches, list) or not branches:
            self.report(at, "Branches must be a non-empty array of state machines")
            return
        for index, branch in enumerate(branches):
            self.machine(branch, child(at, index), F.BRANCH, "a Parallel branch")

    def state_map(self, node: dict[str, Any], where: str, language: str, names: frozenset[str]) -> None:
        """Map: the item processor, where items come from and how many run at once."""
        processors = self.exclusive(node, where, "ItemProcessor", "Iterator")
        if not processors:
            self.report(where, "a Map state needs an ItemProcessor (or the older Iterator)")
        for key in processors:
            self.item_processor(node[key], child(where, key), key)
        self.exclusive(node, where, "ItemSelector", "Parameters")
        if "ItemSelector" in node:
            self.payload(node, "ItemSelector", where, language, must_be_object=True)
        if "ItemsPath" in node:
            self.path(node["ItemsPath"], child(where, "ItemsPath"), reference=True)
        if "Items" in node:
            items, at = node["Items"], child(where, "Items")
            if isinstance(items, list) or (isinstance(items, str) and jsonata.is_expression(items)):
                self.jsonata_value(items, at)
            else:
                self.report(at, "Items must be a JSON array or a JSONata expression")
        for key, integer, maximum in (
            ("MaxConcurrency", True, None),
            ("ToleratedFailurePercentage", False, 100),
            ("ToleratedFailureCount", True, None),
        ):
            self.exclusive(node, where, key, key + "Path")
            self.check_number(node, key, where, integer=integer, minimum=0, maximum=maximum,
                              language=language)
            if key + "Path" in node:
                self.path(node[key + "Path"], child(where, key + "Path"), reference=True)
        if "Label" in node:
            label = node["Label"]
            if not isinstance(label, str) or len(label) > MAX_MAP_LABEL:
                self.report(child(where, "Label"), f"Label must be a string of at most {MAX_MAP_LABEL} characters")
        if "ItemReader" in node:
            self.item_reader(node["ItemReader"], child(where, "ItemReader"), language)
        if "ItemBatcher" in node:
            self.item_batcher(node["ItemBatcher"], child(where, "ItemBatcher"), language)
        if "ResultWriter" in node:
            self.result_writer(node["ResultWriter"], child(where, "ResultWriter"), language)

    def item_processor(self, node: Any, where: str, key: str) -> None:
        allowed = F.ITEM_PROCESSOR if key == "ItemProcessor" else F.BRANCH
        self.machine(node, where, allowed, f"a Map {key}")
        if not isinstance(node, dict) or "ProcessorConfig" not in node:
            return
        config, at = node["ProcessorConfig"], child(where, "ProcessorConfig")
        if not self.expect_object(config, at, "ProcessorConfig"):
            return
        self.check_plain_fields(config, at, F.PROCESSOR_CONFIG, "ProcessorConfig")
        mode = config.get("Mode", "INLINE")
        if mode not in ("INLINE", "DISTRIBUTED"):
            self.report(child(at, "Mode"), f"Mode must be INLINE or DISTRIBUTED, not {mode!r}")
        if "ExecutionType" in config and config["ExecutionType"] not in ("STANDARD", "EXPRESS"):
            self.report(child(at, "ExecutionType"), "ExecutionType must be STANDARD or EXPRESS")
        if mode == "DISTRIBUTED" and "ExecutionType" not in config:
            self.report(at, "a DISTRIBUTED Map needs an ExecutionType (STANDARD or EXPRESS)")

    def item_reader(self, node: Any, where: str, language: str) -> None:
        if not self.expect_object(node, where, "ItemReader"):
            return
        self.check_fields(node, where, F.ITEM_READER, language, "ItemReader")
        if "Resource" not in node:
            self.report(where, "an ItemReader needs a Resource")
        elif not isinstance(node["Resource"], str) or not _ARN.match(node["Resource"]):
            self.report(child(where, "Resource"), "the ItemReader Resource must be an ARN string")
        self.payload(node, "Parameters", where, language, must_be_object=True)
        self.payload(node, "Arguments", where, language, must_be_object=True)
        if "ReaderConfig" in node:
            config, at = node["ReaderConfig"], child(where, "ReaderConfig")
            if self.expect_object(config, at, "ReaderConfig"):
                self.check_fields(config, at, F.READER_CONFIG, language, "ReaderConfig")
                self.exclusive(config, at, "MaxItems", "MaxItemsPath")
                self.check_number(config, "MaxItems", at, minimum=0, maximum=100_000_000,
                                  language=language)
                if "MaxItemsPath" in config:
                    self.path(config["MaxItemsPath"], child(at, "MaxItemsPath"), reference=True)

    def item_batcher(self, node: Any, where: str, language: str) -> None:
        if not self.expect_object(node, where, "ItemBatcher"):
            return
        self.check_fields(node, where, F.ITEM_BATCHER, language, "ItemBatcher")
        limits = [key for key in ("MaxItemsPerBatch", "MaxInputBytesPerBatch")
                  if key in node or key + "Path" in node]
        if not limits:
            self.report(where, "an ItemBatcher needs MaxItemsPerBatch or MaxInputBytesPerBatch")
        for key, maximum in (("MaxItemsPerBatch", None), ("MaxInputBytesPerBatch", 262_144)):
            self.exclusive(node, where, key, key + "Path")
            self.check_number(node, key, where, minimum=1, maximum=maximum, language=language)
            if key + "Path" in node:
                self.path(node[key + "Path"], child(where, key + "Path"), reference=True)
        if "BatchInput" in node:
            self.payload(node, "BatchInput", where, language, must_be_object=True)

    def result_writer(self, node: Any, where: str, language: str) -> None:
        if not self.expect_object(node, where, "ResultWriter"):
            return
        self.check_fields(node, where, F.RESULT_WRITER, language, "ResultWriter")
        if "Resource" in node and (not isinstance(node["Resource"], str)
                                   or not _ARN.match(node["Resource"])):
            self.report(child(where, "Resource"), "the ResultWriter Resource must be an ARN string")
        self.payload(node, "Parameters", where, language, must_be_object=True)
        self.payload(node, "Arguments", where, language, must_be_object=True)

    # ------------------------------------------------------------- Choice rules

    def state_choice(self, node: dict[str, Any], where: str, language: str, names: frozenset[str]) -> None:
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

    def choice_rule(self, rule: Any, where: str, language: str, names: frozenset[str] | None) -> None:
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
                    self.report(child(where, key), f"{key} is only allowed in top-level Choice rules")
        self.check_string(rule, "Comment", where)
        if language == F.JSONATA:
            self.check_fields(rule, where, F.CHOICE_RULE, language, what)
            if "Condition" not in rule:
                self.report(where, "a JSONata Choice rule needs a Condition")
            elif not isinstance(rule["Condition"], (str, bool)):
                self.report(child(where, "Condition"), "Condition must be a JSONata expression or a boolean")
            elif isinstance(rule["Condition"], str):
                if not jsonata.is_expression(rule["Condition"]):
                    self.report(child(where, "Condition"), "Condition must be a '{% ... %}' JSONata expression")
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
                    if key in F.CHOICE_RULE.jsonata else f"unknown field {key!r} in {what}"
                )
                self.report(child(where, key), message)
        operators = [key for key in ("And", "Or", "Not") if key in rule]
        comparators = [key for key in rule if key in COMPARATORS]
        if operators:
            for key in operators[1:] + comparators + (["Variable"] if "Variable" in rule else []):
                self.report(child(where, key), f"{key} cannot be combined with {operators[0]} in one rule")
            self.boolean_rule(rule, operators[0], where)
            return
        if "Variable" not in rule:
            self.report(where, f"{what} needs Variable and a comparison, or And, Or or Not")
        else:
            self.path(rule["Variable"], child(where, "Variable"), reference=True)
        if not comparators:
            if "Variable" in rule:
                self.report(where, f"{what} needs exactly one comparison operator (e.g. StringEquals)")
            return
        for key in comparators[1:]:
            self.report(child(where, key), f"{key}: a Choice rule has exactly one comparison operator ({comparators[0]} is already used)")
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
            "numeric": _is_number(value),
            "boolean": isinstance(value, bool),
            "timestamp": isinstance(value, str) and parse_timestamp(value) is not None,
        }.get(kind, True)
        if not valid:
            self.report(where, f"{operator} compares against {_KIND_WORDS.get(kind, kind)}, not {value!r}")

    # ------------------------------------------------------------ Retry and Catch

    def error_equals(self, node: dict[str, Any], where: str, last: bool) -> None:
        if "ErrorEquals" not in node:
            self.report(where, "ErrorEquals is required")
            return
        names, at = node["ErrorEquals"], child(where, "ErrorEquals")
        if not isinstance(names, list) or not names:
            self.report(at, "ErrorEquals must be a non-empty array of error names")
            return
        for index, name in enumerate(names):
            if not isinstance(name, str):
                self.report(child(at, index), f"an error name must be a string, not {_json_type(name)}")
        if STATES_ALL in names:
            if len(names) > 1:
                self.report(at, "States.ALL must appear alone in ErrorEquals")
            if not last:
                self.report(at, "a retrier or catcher with States.ALL must be the last one")

    def retry(self, retriers: Any, where: str) -> None:
        if not isinstance(retriers, list):
            self.report(where, f"Retry must be an array of retriers, not {_json_type(retriers)}")
            return
        for index, retrier in enumerate(retriers):
            at = child(where, index)
            if not self.expect_object(retrier, at, "a retrier"):
                continue
            self.check_plain_fields(retrier, at, F.RETRIER, "a retrier")
            self.check_string(retrier, "Comment", at)
            self.error_equals(retrier, at, last=index == len(retriers) - 1)
            self.check_number(retrier, "IntervalSeconds", at, minimum=1, maximum=MAX_SECONDS)
            self.check_number(retrier, "MaxAttempts", at, minimum=0, maximum=MAX_SECONDS)
            self.check_number(retrier, "BackoffRate", at, integer=False, minimum=1.0)
            self.check_number(retrier, "MaxDelaySeconds", at, minimum=1, maximum=MAX_DELAY_SECONDS)
            if "JitterStrategy" in retrier and retrier["JitterStrategy"] not in ("FULL", "NONE"):
                self.report(child(at, "JitterStrategy"), "JitterStrategy must be FULL or NONE")

    def catch(self, catchers: Any, where: str, language: str, names: frozenset[str]) -> None:
        if not isinstance(catchers, list):
            self.report(where, f"Catch must be an array of catchers, not {_json_type(catchers)}")
            return
        for index, catcher in enumerate(catchers):
            at = child(where, index)
            if not self.expect_object(catcher, at, "a catcher"):
                continue
            self.check_fields(catcher, at, F.CATCHER, language, f"a {language} catcher")
            self.check_string(catcher, "Comment", at)
            self.error_equals(catcher, at, last=index == len(catchers) - 1)
            if "Next" in catcher:
                self.target(catcher["Next"], child(at, "Next"), names)
            else:
                self.report(at, "a catcher needs Next")
            if language == F.JSONPATH:
                self.result_path(catcher, at)
            elif "Output" in catcher:
                self.jsonata_value(catcher["Output"], child(at, "Output"))
            self.assign(catcher, at, language)

    # ------------------------------------------------------------------- top level

    def definition(self, node: Any) -> None:
        if not isinstance(node, dict):
            self.report("", f"a state machine definition must be a JSON object, not {_json_type(node)}")
            return
        language = node.get("QueryLanguage", F.JSONPATH)
        if language in F.QUERY_LANGUAGES:
            self.top_language = language
        else:
            self.report("/QueryLanguage", f"QueryLanguage must be JSONPath or JSONata, not {language!r}")
        if "Version" in node and node["Version"] != "1.0":
            self.report("/Version", f"Version must be \"1.0\", not {node['Version']!r}")
        self.check_number(node, "TimeoutSeconds", "", minimum=1, maximum=MAX_SECONDS)
        self.machine(node, "", F.TOP_LEVEL, "a state machine")


def _transitions(state: Any) -> list[str]:
    """Names a state can move to, whatever else is wrong with it (for reachability)."""
    if not isinstance(state, dict):
        return []
    targets = [state.get("Next"), state.get("Default")]
    for key in ("Choices", "Catch"):
        items = state.get(key)
        if isinstance(items, list):
            targets += [item.get("Next") for item in items if isinstance(item, dict)]
    return [target for target in targets if isinstance(target, str)]


def validate(definition: Any, functions: Collection[str] | None = None) -> list[Problem]:
    """Every problem in an ASL ``definition``, sorted by JSON pointer.

    ``functions`` names the functions the app provides; when given, every Task whose
    Resource names a Lambda function must name one of them. ``None`` skips that check
    (the definition is validated structurally only).
    """
    validator = _Validator(functions)
    validator.definition(definition)
    return sorted(set(validator.problems), key=sort_key)
