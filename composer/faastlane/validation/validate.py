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
from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace
from typing import Any

from faastlane.runtime.asl.choice import parse_timestamp
from faastlane.runtime.asl.integrations import is_integration
from faastlane.runtime.asl.resources import LAMBDA_INVOKE, UnsupportedResource, task_target

from . import fields as F
from . import jsonata_syntax as jsonata
from .checker import ARN, is_int, json_type
from .choice_rules import ChoiceChecks
from .error_handling import ErrorHandlingChecks
from .map_state import MapChecks
from .problem import Problem, child, did_you_mean, sort_key
from .service_tasks import integration_problems

# Limits from the Step Functions developer guide ("Quotas" and the state pages).
MAX_STATE_NAME = 80
MAX_SECONDS = 99_999_999

# A Lambda function ARN, as Step Functions checks it when the definition is created.
_LAMBDA_ARN = re.compile(
    r"^arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]*:\d*:function:[A-Za-z0-9_-]{1,64}"
    r"(:(\$LATEST|[A-Za-z0-9_-]{1,128}))?$"
)
# A bare function name (Faastlane's short form for a Lambda function of the app).
_FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}(:(\$LATEST|[A-Za-z0-9_-]{1,128}))?$")
# A CloudFormation/SAM DefinitionSubstitutions placeholder, replaced before deployment.
_PLACEHOLDER = re.compile(r"^\$\{[A-Za-z0-9_.:-]+\}$")


class _Validator(ChoiceChecks, ErrorHandlingChecks, MapChecks):
    """Walks a definition once and collects every problem it finds."""

    def __init__(self, functions: Collection[str] | None,
                 unusable: Mapping[str, Problem] | None = None) -> None:
        super().__init__(functions)
        # Functions whose code is there but cannot be called: a Task naming one reports
        # the function's own problem (in its file), not "add functions/NAME.py".
        self.unusable = dict(unusable or {})

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
            self.report(
                child(where, "StartAt"), f"StartAt must be a string, not {json_type(start)}"
            )
        elif start not in states:
            self.report(
                child(where, "StartAt"),
                f"StartAt names {start!r}, which is not in States{did_you_mean(start, states)}",
            )

        names = frozenset(states)
        for name, state in states.items():
            self.state(state, child(states_at, name), names)
        if states:
            self.reachability(states, states_at,
                              start if isinstance(start, str) and start in states else None)

    def register(self, name: str, where: str, states_at: str) -> None:
        """Record a state name; names are unique in the whole definition, nested or not."""
        if not name:
            self.report(where, "a state name cannot be empty")
        elif len(name) > MAX_STATE_NAME:
            self.report(
                where,
                f"state name is {len(name)} characters long; at most {MAX_STATE_NAME} are allowed",
            )
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
            name
            for name, state in states.items()
            if isinstance(state, dict)
            and (state.get("Type") in ("Succeed", "Fail") or state.get("End") is True)
        ]
        # A state without a valid Type is already reported; whether it was meant to
        # end the machine is unknowable, so do not add a cascade.
        typed = all(
            isinstance(s, dict) and s.get("Type") in F.STATE_FIELDS for s in states.values()
        )
        if not terminal and typed:
            self.report(
                states_at,
                "no terminal state: one state needs End: true, or a Succeed or Fail state",
            )
        if start is None:
            return  # already reported; reachability would only repeat it
        seen = _closure(states, {start}, set())
        # A misspelt transition (a Next close to a state's name) leaves the states only
        # it would lead to unreachable: those are folded into its problem, not listed.
        folded: dict[int, list[str]] = {}
        grown = True
        while grown:
            grown = False
            for name in [name for name in states if name in seen]:
                for at, _ in _transition_fields(states[name], child(states_at, name)):
                    index, meant = self.misspelt.get(at, (None, None))
                    if index is None or meant not in states or meant in seen:
                        continue
                    found = _closure(states, {meant}, seen)
                    seen |= found
                    folded.setdefault(index, []).extend(n for n in states if n in found)
                    grown = True
        for index, lost in folded.items():
            problem = self.problems[index]
            self.problems[index] = replace(
                problem, message=f"{problem.message} (and {_states(lost)} unreachable"
                                 " because of it)")
        for name in states:
            if name not in seen:
                self.report(child(states_at, name), f"state {name!r} is unreachable from StartAt",
                            secondary=True)

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
                f"unknown state Type {kind!r}{did_you_mean(kind, F.STATE_FIELDS)}"
                f" (one of: {', '.join(F.STATE_FIELDS)})",
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
            self.report(
                at, "a state cannot use JSONPath when the top-level QueryLanguage is JSONata"
            )
        return str(value)

    def flow(self, node: dict[str, Any], where: str, names: frozenset[str]) -> None:
        """``Next`` or ``End: true``, exactly one."""
        end = node.get("End")
        if "End" in node and not isinstance(end, bool):
            self.report(child(where, "End"), f"End must be true, not {json_type(end)}")
        if "Next" in node:
            self.target(node["Next"], child(where, "Next"), names)
            if end is True:
                self.report(where, "a state cannot have both Next and End: true")
        elif end is not True:
            self.report(where, f"a {node['Type']} state needs Next or End: true")

    def state_pass(
        self, node: dict[str, Any], where: str, language: str, names: frozenset[str]
    ) -> None:
        """Pass: everything is checked by the common fields."""

    def state_succeed(
        self, node: dict[str, Any], where: str, language: str, names: frozenset[str]
    ) -> None:
        """Succeed: everything is checked by the common fields."""

    def state_fail(
        self, node: dict[str, Any], where: str, language: str, names: frozenset[str]
    ) -> None:
        """Fail: Error/ErrorPath and Cause/CausePath, one of each pair at most."""
        for static, dynamic in (("Error", "ErrorPath"), ("Cause", "CausePath")):
            self.exclusive(node, where, static, dynamic)
            self.check_string(node, static, where, language)
            if dynamic in node:
                self.path(node[dynamic], child(where, dynamic), reference=True, intrinsic=True)

    def state_wait(
        self, node: dict[str, Any], where: str, language: str, names: frozenset[str]
    ) -> None:
        """Wait: exactly one of Seconds, SecondsPath, Timestamp, TimestampPath."""
        keys = (
            ("Seconds", "Timestamp")
            if language == F.JSONATA
            else ("Seconds", "SecondsPath", "Timestamp", "TimestampPath")
        )
        if not self.exclusive(node, where, *keys):
            self.report(where, f"a Wait state needs one of {', '.join(keys)}")
        self.check_number(node, "Seconds", where, minimum=0, maximum=MAX_SECONDS, language=language)
        if "Timestamp" in node:
            value, at = node["Timestamp"], child(where, "Timestamp")
            if language == F.JSONATA and isinstance(value, str) and jsonata.is_expression(value):
                self.jsonata_string(value, at)
            elif not isinstance(value, str) or parse_timestamp(value) is None:
                self.report(
                    at,
                    f"Timestamp must be an RFC 3339 timestamp such as"
                    f" '2016-03-14T01:59:00Z', not {value!r}",
                )
        for key in ("SecondsPath", "TimestampPath"):
            if key in node:
                self.path(node[key], child(where, key), reference=True)

    def state_task(
        self, node: dict[str, Any], where: str, language: str, names: frozenset[str]
    ) -> None:
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
        timeout, heartbeat = node.get("TimeoutSeconds", 0), node.get("HeartbeatSeconds", 0)
        if is_int(timeout) and is_int(heartbeat) and 0 < timeout <= heartbeat:
            self.report(
                child(where, "HeartbeatSeconds"),
                f"HeartbeatSeconds ({heartbeat}) must be smaller than TimeoutSeconds ({timeout})",
            )
        self.payload(node, "Credentials", where, language, must_be_object=True)

    def resource(self, node: dict[str, Any], where: str, language: str) -> None:
        """A Task's Resource: well formed, and with functions given, backed by code."""
        resource, at = node["Resource"], child(where, "Resource")
        if not isinstance(resource, str):
            self.report(at, f"Resource must be a string, not {json_type(resource)}")
            return
        arn = ARN.match(resource)
        if arn and arn.group("service") == "lambda" and not _LAMBDA_ARN.match(resource):
            self.report(at, f"{resource!r} is not a valid Lambda function ARN")
            return
        if not (arn or _FUNCTION_NAME.match(resource) or _PLACEHOLDER.match(resource)):
            self.report(at, f"Resource {resource!r} is neither an ARN nor a function name")
            return
        payload_key = "Arguments" if language == F.JSONATA else "Parameters"
        if is_integration(resource) and resource.split(".")[0] != LAMBDA_INVOKE:
            self.problems.extend(integration_problems(resource, node, where, payload_key,
                                                      self.functions is not None))
            return
        if self.functions is None:
            return
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
        if target.function in self.unusable:
            self.problems.append(self.unusable[target.function])
            return
        provided = ", ".join(sorted(self.functions)) or "none"
        self.report(
            name_at if target.invoke_shape else at,
            f"no function code for {target.function!r}"
            f"{did_you_mean(target.function, self.functions)}:"
            f" add functions/{target.function}.py"
            f" or functions/{target.function}/ (the app provides: {provided})",
        )

    def state_parallel(
        self, node: dict[str, Any], where: str, language: str, names: frozenset[str]
    ) -> None:
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

    def definition(self, node: Any) -> None:
        if not isinstance(node, dict):
            self.report(
                "", f"a state machine definition must be a JSON object, not {json_type(node)}"
            )
            return
        language = node.get("QueryLanguage", F.JSONPATH)
        if language in F.QUERY_LANGUAGES:
            self.top_language = language
        else:
            self.report(
                "/QueryLanguage", f"QueryLanguage must be JSONPath or JSONata, not {language!r}"
            )
        if "Version" in node and node["Version"] != "1.0":
            self.report("/Version", f'Version must be "1.0", not {node["Version"]!r}')
        self.check_number(node, "TimeoutSeconds", "", minimum=1, maximum=MAX_SECONDS)
        self.machine(node, "", F.TOP_LEVEL, "a state machine")


def _transition_fields(state: Any, where: str) -> list[tuple[str, str]]:
    """A state's transitions, whatever else is wrong with it: (pointer, target name)."""
    if not isinstance(state, dict):
        return []
    fields = [(child(where, key), state.get(key)) for key in ("Next", "Default")]
    for key in ("Choices", "Catch"):
        items = state.get(key)
        if isinstance(items, list):
            fields += [(child(where, key, index, "Next"), item.get("Next"))
                       for index, item in enumerate(items) if isinstance(item, dict)]
    return [(at, target) for at, target in fields if isinstance(target, str)]


def _closure(states: dict[str, Any], start: set[str], seen: set[str]) -> set[str]:
    """The states reachable from ``start`` (themselves included) that are not in ``seen``."""
    found = {name for name in start if name in states and name not in seen}
    todo = list(found)
    while todo:
        for _, target in _transition_fields(states[todo.pop()], ""):
            if target in states and target not in seen and target not in found:
                found.add(target)
                todo.append(target)
    return found


def _states(names: Iterable[str]) -> str:
    """"state 'B'", "states 'B', 'C'" or "8 states": what a folded problem mentions."""
    names = list(names)
    if len(names) > 3:
        return f"{len(names)} states"
    return ("state " if len(names) == 1 else "states ") + ", ".join(map(repr, names))


def validate(definition: Any, functions: Collection[str] | None = None,
             unusable: Mapping[str, Problem] | None = None) -> list[Problem]:
    """Every problem in an ASL ``definition``, most important first, then by pointer.

    ``functions`` names the functions the app provides; when given, every Task whose
    Resource names a Lambda function must name one of them. ``None`` skips that check
    (the definition is validated structurally only). ``unusable`` maps the names of
    functions whose code exists but cannot be called to the problem that says why
    (reported if, and only if, a Task names the function).
    """
    validator = _Validator(functions, unusable)
    validator.definition(definition)
    return sorted(set(validator.problems), key=sort_key)
