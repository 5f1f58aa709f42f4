"""Reading a SAM / CloudFormation template: its parameters, conditions and resources,
the state machine chosen, its definition with the substitutions made, and its functions.

Every value that cannot be resolved is a :class:`Problem` in the template (or the
definition file) with its JSON pointer and line; reading goes on, so all of them are
listed. Syntax errors and a template without a state machine stop the reading: nothing
else can be said then.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from faastlane.errors import AppError
from faastlane.validation.problem import Problem, child, did_you_mean

from . import documents
from .documents import Document, DocumentError
from .functions import TemplateFunction, read_function
from .intrinsics import Resolver, Unresolved
from .parameters import (
    ProjectOptions,
    parameter_problem,
    parameter_value,
    parse_overrides,
    partition,
    pseudo_parameters,
    region,
)
from .resources import FUNCTION_TYPES, LOCAL_TYPES, STATE_MACHINE_TYPES, Names, Resource

SAM_TRANSFORM = "AWS::Serverless-2016-10-31"
# A definition's ${Name} placeholders, which DefinitionSubstitutions replace.
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_.:-]+)\}")


@dataclass(frozen=True)
class Located:
    """A file of the project and its parsed document, to place problems in it."""

    file: str  # relative to the template's folder, as problems show it
    document: Document
    prefix: str = ""  # where the located data sits in the document

    def place(self, pointer: str, message: str, secondary: bool = False) -> Problem:
        """A problem at ``pointer`` (relative to ``prefix``), with its line."""
        where = self.prefix + pointer
        return Problem(where, message, self.file, self.document.line(where), secondary)

    def within(self, pointer: str) -> Located:
        return Located(self.file, self.document, self.prefix + pointer)


@dataclass(frozen=True)
class LocalResource:
    """A table, topic, queue or bucket that a local run creates if it is missing."""

    logical_id: str
    type: str
    name: str
    properties: dict[str, Any]  # resolved


@dataclass
class Project:
    """The template, read for one of its state machines."""

    root: str  # the template's folder
    template: Located
    stack_name: str
    state_machine: str  # its logical id
    name: str
    definition: Any = None  # the resolved definition, None if it could not be read
    definition_at: Located | None = None  # where the definition's pointers are
    unresolved: set[str] = field(default_factory=set)  # pointers of ${...} left
    functions: dict[str, TemplateFunction] = field(default_factory=dict)
    unusable: dict[str, Problem] = field(default_factory=dict)  # by local name
    local_resources: list[LocalResource] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)  # Metadata.Faastlane
    # The template's other state machines (states:startExecution runs them in-process):
    # local name -> (logical id, definition or None, the problems reading it).
    others: dict[str, tuple[str, Any, list[Problem]]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def is_template(path: str) -> bool:
    """Whether ``path`` names a template file (an app is a folder)."""
    return os.path.isfile(path)


class _Reader:
    """One reading of a template; problems accumulate in ``self.problems``."""

    def __init__(self, path: str, options: ProjectOptions) -> None:
        self.path = os.path.abspath(path)
        self.root = os.path.dirname(self.path)
        shown = os.path.basename(self.path)
        try:
            document = documents.read(self.path)
        except OSError as exc:
            raise AppError(f"cannot read {path}: {exc.strerror}") from None
        except DocumentError as exc:
            raise _Fatal(Problem("", str(exc), shown, exc.line)) from None
        self.at = Located(shown, document)
        self.problems: list[Problem] = [self.at.place(p, "duplicate key: CloudFormation "
                                                        "refuses repeated keys")
                                        for p in document.duplicates]
        self.options = options
        data = document.data
        if not isinstance(data, dict) or not isinstance(data.get("Resources"), dict):
            hint = (": this is a state machine definition; give the folder holding it as "
                    "workflow.json (an app folder), or the template that names it"
                    if isinstance(data, dict) and "States" in data else "")
            raise _Fatal(self.at.place("", "not a SAM or CloudFormation template: it has no "
                                           f"Resources{hint}"))
        self.data = data
        self.stack = options.stack_name or os.path.basename(self.root) or "stack"
        self.region = region()
        self.names: Names  # set in read()

    def problem(self, where: str, message: str) -> None:
        self.problems.append(self.at.place(where, message))

    def section(self, *path: str) -> dict[str, Any]:
        """A mapping of the template (``Parameters``, ``Globals/Function``, ...), or {}."""
        found: Any = self.data
        for key in path:
            found = found.get(key) if isinstance(found, dict) else None
        if found is None:
            return {}
        if not isinstance(found, dict):
            self.problem(child("", *path), f"{'.'.join(path)} must be a mapping")
            return {}
        return found

    def resolve(self, value: Any, where: str, default: Any = None) -> Any:
        """``value`` resolved, or ``default`` with the problem recorded."""
        try:
            return self.resolver.resolve(value, where)
        except Unresolved as exc:
            self.problem(exc.where, str(exc))
            return default

    # -- the template's sections ----------------------------------------------------------

    def parameters(self) -> dict[str, Any]:
        values = pseudo_parameters(self.stack)
        declared = self.section("Parameters")
        overrides = parse_overrides(self.options.parameter_overrides)
        for name in overrides:
            if name not in declared:
                raise AppError(f"--parameter-overrides names {name!r}, which the template "
                               f"does not declare{did_you_mean(name, declared)}")
        for name, spec in declared.items():
            where = child("/Parameters", name)
            spec = spec if isinstance(spec, dict) else {}
            if name in overrides:
                text: Any = overrides[name]
            elif str(spec.get("Type", "")).startswith("AWS::SSM::Parameter::"):
                self.problem(where, f"parameter {name} is read from SSM Parameter Store, "
                                    "which a local run does not reach: give its value with "
                                    f"--parameter-overrides {name}=VALUE")
                continue
            elif "Default" in spec:
                text = spec["Default"]
            else:
                self.problem(where, f"parameter {name} has no Default: give it with "
                                   f"--parameter-overrides {name}=VALUE")
                continue
            value = parameter_value(spec, text)
            why = parameter_problem(spec, value)
            if why:
                self.problem(where, f"parameter {name}: {why}")
            values[name] = value
        return values

    def resources(self) -> dict[str, Resource]:
        """The resources whose Condition holds, SAM's Globals.Function applied."""
        out: dict[str, Resource] = {}
        globals_ = self.section("Globals", "Function")
        for logical_id, raw in self.data["Resources"].items():
            where = child("/Resources", logical_id)
            if not isinstance(raw, dict) or not isinstance(raw.get("Type"), str):
                self.problem(where, "a resource needs a Type")
                continue
            if "Condition" in raw:
                try:
                    if not self.resolver.condition(raw["Condition"], child(where, "Condition")):
                        continue
                except Unresolved as exc:
                    self.problem(exc.where, str(exc))
                    continue
            properties = raw.get("Properties") or {}
            inherited: frozenset[str] = frozenset()
            if not isinstance(properties, dict):
                self.problem(child(where, "Properties"), "Properties must be a mapping")
                properties = {}
            if raw["Type"] == "AWS::Serverless::Function":
                inherited = frozenset(globals_) - frozenset(properties)
                properties = _with_globals(globals_, properties)
            out[logical_id] = Resource(logical_id, raw["Type"], properties, where, inherited)
        return out

    def _logical_ids(self) -> Collection[str]:
        names = getattr(self, "names", None)  # None while the parameters are read
        return () if names is None else names.resources

    def read(self) -> Project:
        self.resolver = Resolver({}, self._ref, self._get_att, self.section("Conditions"),
                                 self.section("Mappings"), self._logical_ids)
        self.resolver.parameters.update(self.parameters())
        self.names = Names({}, self.stack, self.region, partition(self.region),
                           lambda value, where: self.resolver.resolve(value, where))
        self.names.resources.update(self.resources())
        machine = self.choose_state_machine()
        resource = self.names.resources[machine]
        project = Project(self.root, self.at, self.stack, machine, machine)
        name = self._guarded(lambda: self.names.name(machine), resource.where)
        project.name = name or machine
        self.definition(resource, project)
        for other in self.names.resources.values():
            if other.type in STATE_MACHINE_TYPES and other.logical_id != machine:
                self.other_machine(other, project)
        metadata = self.section("Resources", machine, "Metadata").get("Faastlane")
        if isinstance(metadata, dict):
            project.settings = metadata
        elif metadata is not None:
            self.problem(child("/Resources", machine, "Metadata", "Faastlane"),
                         "Metadata.Faastlane must be a mapping of settings (untrusted, ...)")
        for function in self.names.resources.values():
            if function.type in FUNCTION_TYPES:
                self.function(function, project)
        for local in self.names.resources.values():
            if local.type in LOCAL_TYPES:
                properties = self.resolve(local.properties, child(local.where, "Properties"), {})
                local_name = self._guarded(partial(self.names.name, local.logical_id),
                                           local.where)
                if local_name:
                    project.local_resources.append(
                        LocalResource(local.logical_id, local.type, local_name, properties))
        project.problems = self.problems + project.problems
        return project

    def _guarded(self, get: Callable[[], Any], where: str) -> Any:
        try:
            return get()
        except Unresolved as exc:
            self.problem(exc.where, str(exc))
            return None

    def _ref(self, name: str, where: str) -> Any:
        return self.names.ref(name, where)

    def _get_att(self, name: str, attribute: str, where: str) -> Any:
        return self.names.get_att(name, attribute, where)

    def choose_state_machine(self) -> str:
        machines = [i for i, r in self.names.resources.items() if r.type in STATE_MACHINE_TYPES]
        wanted = self.options.state_machine
        if wanted is not None:
            if wanted not in machines:
                listed = ", ".join(machines) or "none"
                raise AppError(f"--state-machine {wanted}: no such state machine in "
                               f"{self.at.file}{did_you_mean(wanted, machines)} "
                               f"(it has: {listed})")
            return wanted
        if not machines:
            raise _Fatal(self.at.place("/Resources", "the template has no state machine "
                                       f"({' or '.join(STATE_MACHINE_TYPES)})"))
        if len(machines) > 1:
            raise AppError(f"{self.at.file} has {len(machines)} state machines: "
                           f"{', '.join(machines)}; choose one with --state-machine ID")
        return machines[0]

    def other_machine(self, resource: Resource, project: Project) -> None:
        """Another state machine's definition, its problems kept apart: they are not the
        chosen machine's (it may never start that one)."""
        saved, self.problems = self.problems, []
        read = Project(self.root, self.at, self.stack, resource.logical_id,
                       resource.logical_id)
        try:
            name = self._guarded(partial(self.names.name, resource.logical_id),
                                 resource.where)
            self.definition(resource, read)
        finally:
            found, self.problems = self.problems + read.problems, saved
        project.others[name or resource.logical_id] = (resource.logical_id, read.definition,
                                                       found)

    # -- the definition ----------------------------------------------------------------

    def definition(self, resource: Resource, project: Project) -> None:
        """The state machine's definition, its substitutions made; each ${Name} left is a
        problem where it is."""
        where = child(resource.where, "Properties")
        substitutions, failed = self.substitutions(resource.properties, where)
        read = self.read_definition(resource.properties, where, substitutions, project)
        if read is None:
            return
        definition, located = read
        project.definition, project.definition_at = definition, located
        declared = [*substitutions, *failed]
        for pointer, name in _placeholders(definition, ""):
            project.unresolved.add(located.prefix + pointer)
            if name in failed:
                continue  # its substitution's own problem says why
            listed = ", ".join(sorted(declared)) or "none"
            project.problems.append(located.place(
                pointer, f"${{{name}}} is not in the state machine's DefinitionSubstitutions "
                         f"(it has: {listed}){did_you_mean(name, declared)}"))

    def substitutions(self, props: dict[str, Any],
                      where: str) -> tuple[dict[str, str], set[str]]:
        """DefinitionSubstitutions resolved to text, and the names that could not be."""
        substitutions: dict[str, str] = {}
        failed: set[str] = set()
        raw = props.get("DefinitionSubstitutions") or {}
        if not isinstance(raw, dict):
            self.problem(child(where, "DefinitionSubstitutions"),
                         "DefinitionSubstitutions must be a mapping")
            return substitutions, failed
        for key, value in raw.items():
            at = child(where, "DefinitionSubstitutions", key)
            resolved = self.resolve(value, at)
            if resolved is None:
                failed.add(key)
            elif isinstance(resolved, (dict, list)):
                self.problem(at, f"substitution {key} must be a string, number or boolean")
                failed.add(key)
            else:
                substitutions[key] = (json.dumps(resolved) if isinstance(resolved, bool)
                                      else str(resolved))
        return substitutions, failed

    def read_definition(self, props: dict[str, Any], where: str,
                        substitutions: dict[str, str],
                        project: Project) -> tuple[Any, Located] | None:
        """The definition from whichever property holds it, and where it was read."""
        given = [k for k in ("Definition", "DefinitionUri", "DefinitionString",
                             "DefinitionS3Location") if k in props]
        if len(given) != 1:
            self.problem(where, "a state machine needs exactly one of Definition, "
                                f"DefinitionUri, DefinitionString (it has {len(given) or 'none'})")
            return None
        key = given[0]
        at = child(where, key)
        if key == "Definition":
            definition = self.resolve(props[key], at)
            if definition is None:
                return None
            return _substitute_strings(definition, substitutions), self.at.within(at)
        if key == "DefinitionString":
            text = self.resolve(props[key], at)
            if not isinstance(text, str):
                if text is not None:
                    self.problem(at, "DefinitionString must be a string")
                return None
            try:
                definition = documents.parse(_substitute_text(text, substitutions),
                                             json_only=True).data
            except DocumentError as exc:
                self.problem(at, f"DefinitionString: {exc}")
                return None
            return definition, self.at.within(at)
        if key == "DefinitionUri" and isinstance(props[key], str):
            return self.definition_file(props[key], at, substitutions, project)
        self.problem(at, f"{key} in S3 is not supported: name a local file "
                         "(DefinitionUri: statemachine/NAME.asl.json) or write the "
                         "Definition inline")
        return None

    def definition_file(self, uri: str, at: str, substitutions: dict[str, str],
                        project: Project) -> tuple[Any, Located] | None:
        """A DefinitionUri's file: JSON substituted as text, as CloudFormation does (so an
        unquoted ${N} works), YAML in its strings."""
        path = os.path.normpath(os.path.join(self.root, uri))
        shown = os.path.relpath(path, self.root)
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            self.problem(at, f"DefinitionUri {uri}: cannot read {shown}: {exc.strerror}")
            return None
        try:
            if path.endswith(".json"):
                document = documents.parse(_substitute_text(text, substitutions), True)
            else:
                document = documents.parse(text)
                document.data = _substitute_strings(document.data, substitutions)
        except DocumentError as exc:
            project.problems.append(Problem("", str(exc), shown, exc.line))
            return None
        located = Located(shown, document)
        project.problems += [located.place(p, "duplicate key") for p in document.duplicates]
        return document.data, located

    # -- functions ---------------------------------------------------------------------

    def function(self, resource: Resource, project: Project) -> None:
        try:
            name = self.names.name(resource.logical_id)
        except Unresolved as exc:
            self.problem(exc.where, str(exc))
            return
        metadata = self.section("Resources", resource.logical_id, "Metadata")
        function, problem = read_function(self, resource, name, metadata)
        if function is not None:
            project.functions[name] = function
        else:
            assert problem is not None  # read_function gives one or the other
            project.unusable[name] = problem


class _Fatal(Exception):
    """Nothing more can be read: the problem that says why."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def _with_globals(globals_: dict[str, Any], properties: dict[str, Any]) -> dict[str, Any]:
    """SAM's merge: the function's own values win; Environment.Variables are merged."""
    merged = {**globals_, **properties}
    mine, shared = properties.get("Environment"), globals_.get("Environment")
    if isinstance(mine, dict) and isinstance(shared, dict):
        variables = {**(shared.get("Variables") or {}), **(mine.get("Variables") or {})}
        merged["Environment"] = {**shared, **mine, "Variables": variables}
    return merged


def _substitute_text(text: str, substitutions: dict[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        return substitutions.get(match.group(1), match.group(0))
    return _PLACEHOLDER.sub(replace, text)


def _substitute_strings(value: Any, substitutions: dict[str, str]) -> Any:
    if isinstance(value, str):
        return _substitute_text(value, substitutions)
    if isinstance(value, list):
        return [_substitute_strings(item, substitutions) for item in value]
    if isinstance(value, dict):
        return {_substitute_text(k, substitutions): _substitute_strings(v, substitutions)
                for k, v in value.items()}
    return value


def _placeholders(value: Any, where: str) -> list[tuple[str, str]]:
    """Each ``${Name}`` left in the definition's strings, with its pointer."""
    if isinstance(value, str):
        return [(where, name) for name in _PLACEHOLDER.findall(value)]
    if isinstance(value, list):
        return [found for i, item in enumerate(value) for found in _placeholders(item,
                                                                                child(where, i))]
    if isinstance(value, dict):
        return [found for k, item in value.items() for found in _placeholders(item,
                                                                              child(where, k))]
    return []


def read_template(path: str, options: ProjectOptions | None = None) -> Project:
    """Read the template at ``path`` for one state machine. Raises AppError for what makes
    the command itself wrong (several state machines and none chosen, an unknown
    override); a template that cannot be read at all gives a Project without a
    definition, its problem listed."""
    options = options or ProjectOptions()
    try:
        reader = _Reader(path, options)
    except _Fatal as exc:  # not even parsed
        root = os.path.dirname(os.path.abspath(path))
        stack = options.stack_name or os.path.basename(root) or "stack"
        at = Located(os.path.basename(path), Document(None))
        return Project(root, at, stack, "", stack, problems=[exc.problem])
    try:
        return reader.read()
    except _Fatal as exc:
        return Project(reader.root, reader.at, reader.stack, "", reader.stack,
                       problems=reader.problems + [exc.problem])
