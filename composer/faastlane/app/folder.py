"""An app folder: a workflow, its functions and optional settings.

```
app/
  workflow.json          ASL
  functions/NAME.py      def handler(event, context)  (or lambda_handler, or main(params))
  functions/NAME/        a package; function.json may name the handler
  faastlane.json         optional: isolation, vcpus, trusted/untrusted/sensitive functions
```

Functions are inspected, never imported, at compose time: their module-level code runs
only inside the action, once per container.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from faastlane.errors import AppError
from faastlane.runtime.engine.functions import LAMBDA, OPENWHISK, FunctionSpec
from faastlane.runtime.options import ISOLATION_MODES
from faastlane.validation.problem import Problem, child, did_you_mean, nearest_line

from .relative_opens import relative_opens

WORKFLOW_FILE = "workflow.json"
# The workflow in YAML (as SAM projects write it), when there is no workflow.json.
YAML_WORKFLOW_FILES = ("workflow.asl.yaml", "workflow.asl.yml")
SETTINGS_FILE = "faastlane.json"
FUNCTIONS_DIR = "functions"
FUNCTION_MANIFEST = "function.json"

# Entry points looked for, in order, and the calling convention each implies.
_ENTRIES = (("handler", LAMBDA), ("lambda_handler", LAMBDA), ("main", OPENWHISK))
# Module files tried in a package function without a function.json.
_PACKAGE_MODULES = ("lambda_function.py", "handler.py", "index.py", "__main__.py",
                    "__init__.py")
_SETTINGS_KEYS = {"name": str, "isolation": str, "vcpus": int, "trusted": list,
                  "untrusted": list, "sensitive": list, "kept_escapes": dict,
                  "inspector_waivers": list,  # checked by faastlane.inspector.waivers
                  "functions": dict}  # per function, as Lambda's configuration
# faastlane.json "functions": {NAME: {...}}, Lambda's limits: a timeout of 1-900 s, memory
# of 128-10240 MB, variable names as Lambda accepts them (letters, digits, "_", starting
# with a letter) and not one of the runtime's reserved ones.
_FUNCTION_KEYS = ("environment", "timeout", "memory")
VARIABLE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
LAMBDA_RESERVED_VARIABLES = frozenset((
    "_HANDLER", "_X_AMZN_TRACE_ID", "AWS_DEFAULT_REGION", "AWS_REGION", "AWS_EXECUTION_ENV",
    "AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
    "AWS_LAMBDA_FUNCTION_VERSION", "AWS_LAMBDA_INITIALIZATION_TYPE",
    "AWS_LAMBDA_LOG_GROUP_NAME", "AWS_LAMBDA_LOG_STREAM_NAME", "AWS_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
    "AWS_LAMBDA_RUNTIME_API", "LAMBDA_TASK_ROOT", "LAMBDA_RUNTIME_DIR"))


@dataclass(frozen=True)
class Settings:
    """faastlane.json: choices the app makes about its own deployment."""

    name: str | None = None
    isolation: str | None = None
    vcpus: int | None = None
    trusted: tuple[str, ...] = ()
    untrusted: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()
    inspector_waivers: tuple[Any, ...] = ()  # files the binary inspector accepts, why
    # isolation mpk: functions whose escapes are kept rather than failed, and why
    # (cpython-mpk/PRIVATE_HEAPS.md section 5).
    kept_escapes: dict[str, str] = field(default_factory=dict)
    # Per function, as Lambda's configuration: {NAME: {"environment", "timeout", "memory"}}.
    functions: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class WorkflowOrigin:
    """Where the workflow was read from when not from workflow.json (a YAML definition,
    a template): the validator's problems, at pointers into the workflow, are shown
    there, with their lines."""

    file: str  # relative to the app's root
    prefix: str = ""  # the workflow's pointer in that file (an inline Definition)
    lines: Mapping[str, int] = field(default_factory=dict)  # pointer in file -> line
    # Pointers whose problems follow from another one (a ${...} no substitution replaced).
    consequences: frozenset[str] = frozenset()

    def place(self, problem: Problem) -> Problem:
        where = self.prefix + problem.pointer
        return Problem(where, problem.message, self.file, nearest_line(self.lines, where),
                       problem.secondary or where in self.consequences)


@dataclass
class App:
    root: str
    name: str
    workflow_text: str | None  # None: it could not be read (its problem is in problems)
    functions: dict[str, FunctionSpec]
    settings: Settings
    problems: list[Problem] = field(default_factory=list)  # in functions/ and faastlane.json
    # Files in functions/ that cannot be called as functions (no handler, a syntax error,
    # a function.json naming a missing handler), with the problem that says why: reported
    # where the workflow or the settings name them (and in problems if always wrong).
    unusable: dict[str, Problem] = field(default_factory=dict)
    # What works on Lambda but not in a composed action, said without refusing the app
    # (relative_opens): each a Problem rendered as a warning.
    warnings: list[Problem] = field(default_factory=list)
    workflow_origin: WorkflowOrigin | None = None  # None: workflow.json
    # Where the functions' code comes from: folder in the action -> source folder.
    # Empty for an app folder, whose functions/ is copied whole.
    code: dict[str, str] = field(default_factory=dict)
    # A template's other state machines, valid, by name: {name: definition}
    # (states:startExecution runs them in the action). Empty for an app folder.
    state_machines: dict[str, Any] = field(default_factory=dict)


def load_folder(path: str) -> App:
    """Read an app folder; problems are collected. (``sources.load_app`` reads a
    template too.)"""
    root = os.path.abspath(path)
    if not os.path.isdir(root):
        raise AppError(f"no app folder at {path}")
    problems: list[Problem] = []
    workflow_text, origin = _read_workflow(root, path, problems)
    settings = _load_settings(root, problems)
    unusable: dict[str, Problem] = {}
    functions = _discover_functions(root, problems, unusable)
    check_setting_names(settings, functions, unusable, problems)
    functions = _configure_functions(functions, settings.functions, problems, unusable)
    name = settings.name or os.path.basename(root.rstrip(os.sep))
    return App(root, name, workflow_text, functions, settings, problems, unusable,
               relative_opens(root, functions), origin)


def _read_workflow(root: str, path: str,
                   problems: list[Problem]) -> tuple[str | None, WorkflowOrigin | None]:
    """workflow.json's text, or workflow.asl.yaml's as JSON (and where its lines are)."""
    try:
        with open(os.path.join(root, WORKFLOW_FILE), encoding="utf-8") as handle:
            return handle.read(), None
    except FileNotFoundError:
        pass
    for yaml_file in YAML_WORKFLOW_FILES:
        if os.path.isfile(os.path.join(root, yaml_file)):
            from faastlane.app.project import documents  # YAML: PyYAML, composer side only

            try:
                document = documents.read(os.path.join(root, yaml_file))
            except documents.DocumentError as exc:
                problems.append(Problem("", str(exc), yaml_file, exc.line))
                return None, None
            problems += [Problem(p, "duplicate key", yaml_file, document.line(p))
                         for p in document.duplicates]
            return (json.dumps(document.data, indent=2) + "\n",
                    WorkflowOrigin(yaml_file, "", document.lines))
    raise AppError(f"{path} has no {WORKFLOW_FILE}: an app folder holds the workflow "
                   f"(ASL) in {WORKFLOW_FILE} (or {YAML_WORKFLOW_FILES[0]}) and its code in "
                   f"{FUNCTIONS_DIR}/") from None


def check_setting_names(settings: Settings, functions: dict[str, FunctionSpec],
                        unusable: dict[str, Problem], problems: list[Problem]) -> None:
    """Every function the settings name (trusted, untrusted, ...) must exist."""
    for names, key in ((settings.trusted, "trusted"), (settings.untrusted, "untrusted"),
                       (settings.sensitive, "sensitive"),
                       (tuple(settings.kept_escapes), "kept_escapes")):
        for index, name in enumerate(names):
            at = child("", key, name if key == "kept_escapes" else index)
            if name in unusable:
                problems.append(unusable[name])  # its file says what is wrong
            elif name not in functions:
                problems.append(Problem(at, f"no function named {name!r}"
                                            f"{did_you_mean(name, functions)}", SETTINGS_FILE))


def _load_settings(root: str, problems: list[Problem]) -> Settings:
    path = os.path.join(root, SETTINGS_FILE)
    if not os.path.exists(path):
        return Settings()
    try:
        with open(path, encoding="utf-8") as handle:
            raw = json.load(handle)
    except json.JSONDecodeError as exc:
        problems.append(Problem("", f"not valid JSON: {exc.msg} (column {exc.colno})",
                                SETTINGS_FILE, exc.lineno))
        return Settings()
    return settings_from(raw, problems)


def settings_from(raw: Any, problems: list[Problem]) -> Settings:
    """faastlane.json's settings from its parsed object; problems at pointers in it."""
    if not isinstance(raw, dict):
        problems.append(Problem("", f"{SETTINGS_FILE} must hold a JSON object", SETTINGS_FILE))
        return Settings()
    values: dict[str, Any] = {}
    for key, value in raw.items():
        expected = _SETTINGS_KEYS.get(key)
        if expected is None:
            problems.append(Problem(child("", key), f"unknown setting {key!r}"
                                    f"{did_you_mean(key, _SETTINGS_KEYS)} "
                                    f"(known: {', '.join(sorted(_SETTINGS_KEYS))})",
                                    SETTINGS_FILE))
        elif not isinstance(value, expected) or isinstance(value, bool):
            problems.append(Problem(child("", key), f"{key} must be a {expected.__name__}",
                                    SETTINGS_FILE))
        elif (refused := _refused_value(key, value)) is not None:
            problems.append(Problem(child("", key), refused, SETTINGS_FILE))
        else:
            values[key] = tuple(value) if isinstance(value, list) else value
    return Settings(**values)


def _refused_value(key: str, value: Any) -> str | None:
    """What is wrong with a setting of the right type (None: nothing), as ``run``
    would refuse it later."""
    if key == "isolation" and value not in ISOLATION_MODES:
        return (f"isolation {value!r} is not a mode{did_you_mean(value, ISOLATION_MODES)} "
                f"(one of {', '.join(ISOLATION_MODES)})")
    if key == "vcpus" and value < 1:
        return f"vcpus must be at least 1, not {value}"
    return None


def _configure_functions(functions: dict[str, FunctionSpec],
                         configured: dict[str, Any], problems: list[Problem],
                         unusable: dict[str, Problem]) -> dict[str, FunctionSpec]:
    """The functions with faastlane.json's ``functions`` settings; each wrong value is a
    problem (its pointer under ``/functions``). A function whose file cannot be used is
    reported there, not as missing here."""
    out = dict(functions)
    for name, config in configured.items():
        where = f"/functions/{name}"
        if name in unusable:
            problems.append(unusable[name])  # its file says what is wrong
            continue
        if name not in functions:
            problems.append(Problem(where, f"no function named {name!r}"
                                            f"{did_you_mean(name, functions)}", SETTINGS_FILE))
            continue
        if not isinstance(config, dict):
            problems.append(Problem(where, f"functions.{name} must be an object "
                                           f"({', '.join(_FUNCTION_KEYS)})", SETTINGS_FILE))
            continue
        changes: dict[str, Any] = {}
        for key, value in config.items():
            problem = function_setting_problem(key, value)
            if problem is not None:
                problems.append(Problem(f"{where}/{key}", f"functions.{name}.{key} {problem}",
                                        SETTINGS_FILE))
            elif key == "environment":
                changes[key] = tuple(sorted(value.items()))
            else:
                changes[key] = value
        out[name] = replace(functions[name], **changes)
    return out


def function_setting_problem(key: str, value: Any) -> str | None:
    """What is wrong with one setting of a function, or None."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if key == "timeout":
        return None if number and 1 <= value <= 900 else \
            "must be a number of seconds from 1 to 900 (Lambda's limits)"
    if key == "memory":
        return None if isinstance(value, int) and not isinstance(value, bool) \
            and 128 <= value <= 10240 else "must be an integer of MB from 128 to 10240"
    if key != "environment":
        return f"is not a setting (known: {', '.join(_FUNCTION_KEYS)})"
    if not isinstance(value, dict):
        return 'must be an object of variables: {"NAME": "value"}'
    for variable, text in value.items():
        if not VARIABLE_NAME.match(variable):
            return (f"names {variable!r}: a variable's name is letters, digits and _, "
                    "starting with a letter")
        if variable in LAMBDA_RESERVED_VARIABLES:
            return f"sets {variable}, which Lambda reserves (the runtime sets it)"
        if not isinstance(text, str):
            return f"sets {variable} to a {type(text).__name__}: values are strings"
    return None


def handler_problem(module_file: str, shown: str, entry: str) -> Problem | None:
    """Why the module ``shown`` cannot be called through ``entry`` (a syntax error, no such
    top-level name: parsed, not imported), or None."""
    try:
        bound = _bindings(_parse(module_file, shown))
    except _Refused as exc:
        return exc.problem
    if bound.binds(entry):
        return None
    return Problem("", f"defines no {entry!r}{did_you_mean(entry, bound.functions)}", shown)


class _Refused(Exception):
    """A function that cannot be called, and the problem that says why."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


@dataclass(frozen=True)
class _Bindings:
    """What a module's top level binds, found without importing it."""

    functions: tuple[str, ...]  # def/async def statements, in order
    others: frozenset[str]  # assignments, classes, ``from m import f``, ``global f``, ...
    modules: frozenset[str]  # ``import m``: bound to a module, never a handler
    dynamic: bool  # it may bind names no parser can see (``globals()[...]``, ``import *``)

    def binds(self, name: str) -> bool:
        """Whether ``name`` may be bound once the module has run (when unsure: yes)."""
        return (self.dynamic or name in self.functions or name in self.others
                or name in self.modules)


# Names whose use lets a module bind top-level names invisibly to a parser.
_DYNAMIC_NAMES = frozenset({"globals", "vars", "locals", "exec", "eval", "setattr",
                            "__import__", "__builtins__"})
_DYNAMIC_ATTRIBUTES = frozenset({"__dict__", "modules"})  # sys.modules[__name__]


def _parse(source_path: str, shown: str) -> ast.Module:
    """The module's syntax tree; a syntax error is a problem at its line."""
    with open(source_path, "rb") as handle:  # as Python reads it (PEP 263 encodings)
        text = handle.read()
    try:
        return ast.parse(text, source_path)
    except SyntaxError as exc:
        raise _Refused(Problem("", f"syntax error: {exc.msg}", shown, exc.lineno)) from None
    except ValueError as exc:  # source code containing null bytes
        raise _Refused(Problem("", f"cannot be parsed: {exc}", shown)) from None


def _bindings(tree: ast.Module) -> _Bindings:
    functions: list[str] = []
    others: set[str] = set()
    modules: set[str] = set()
    dynamic = False

    def top_level(node: ast.AST) -> None:
        # The module's own scope: not into function or class bodies (their names and
        # decorators aside), whose assignments bind local names.
        for item in ast.iter_child_nodes(node):
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.append(item.name)
                continue
            if isinstance(item, ast.ClassDef):
                others.add(item.name)
                continue
            if isinstance(item, ast.Name) and isinstance(item.ctx, ast.Store):
                others.add(item.id)
            elif isinstance(item, ast.Import):
                modules.update((alias.asname or alias.name).split(".")[0]
                               for alias in item.names)
            elif isinstance(item, ast.ImportFrom):
                others.update(alias.asname or alias.name for alias in item.names)
            elif isinstance(item, ast.ExceptHandler) and item.name:
                others.add(item.name)
            elif isinstance(item, (ast.MatchAs, ast.MatchStar)) and item.name:
                others.add(item.name)
            elif isinstance(item, ast.MatchMapping) and item.rest:
                others.add(item.rest)
            if not isinstance(item, ast.Lambda):
                top_level(item)

    top_level(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):  # a function that assigns a module name
            others.update(node.names)
        elif isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            dynamic = True
        elif isinstance(node, ast.Name) and node.id in _DYNAMIC_NAMES:
            dynamic = True
        elif isinstance(node, ast.Attribute) and node.attr in _DYNAMIC_ATTRIBUTES:
            dynamic = True
    if "__getattr__" in functions or "__getattr__" in others:  # PEP 562
        dynamic = True
    return _Bindings(tuple(functions), frozenset(others), frozenset(modules), dynamic)


_NO_HANDLER = "defines no handler(event, context), lambda_handler(event, context) or main(params)"


def _entry_point(source_path: str, shown: str) -> tuple[str, str]:
    """The handler a module defines at top level, without importing it: a ``def`` first
    (``handler = logging.StreamHandler()`` beside ``def lambda_handler`` is not one),
    then a name bound otherwise (``handler = make_handler()``, ``from app import main``)."""
    tree = _parse(source_path, shown)
    bound = _bindings(tree)
    for names in (bound.functions, bound.others):
        found = next(((name, style) for name, style in _ENTRIES if name in names), None)
        if found is not None:
            if names is bound.functions:
                _check_arguments(tree, found[0], found[1], shown)
            return found
    hint = (" (it makes names at run time: put it in a folder with a function.json naming"
            " its handler)" if bound.dynamic else "")
    raise _Refused(Problem("", _NO_HANDLER + hint, shown))


_PLATFORM_CALLS = {LAMBDA: ("Lambda", "(event, context)", 2),
                   OPENWHISK: ("OpenWhisk", "(params)", 1)}


def _check_arguments(tree: ast.Module, entry: str, style: str, shown: str) -> None:
    """Refuse a handler its platform cannot call: Lambda passes two positional
    arguments, OpenWhisk one (the last top-level ``def`` of that name is the one bound)."""
    defs = [node for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry]
    if not defs:
        return  # defined in a nested block: not checked
    node = defs[-1]
    platform, call, given = _PLATFORM_CALLS[style]
    arguments = node.args
    positional = len(arguments.posonlyargs) + len(arguments.args)
    required = positional - len(arguments.defaults)
    kw_required = [a.arg for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults,
                                         strict=True) if d is None]
    problem = None
    if isinstance(node, ast.AsyncFunctionDef):
        problem = f"is 'async def': {platform}'s Python runtime calls it and does not await it"
    elif required > given or (positional < given and arguments.vararg is None):
        problem = (f"takes {required if required > given else positional} positional "
                   f"argument{'s' if max(required, positional) != 1 else ''}; {platform} "
                   f"calls it with {given}: {entry}{call}")
    elif kw_required:
        problem = (f"needs keyword-only argument{'s' if len(kw_required) > 1 else ''} "
                   f"{', '.join(kw_required)}, which {platform} never passes")
    if problem is not None:
        # No line in the Problem: a helper module nothing names stays unreported.
        raise _Refused(Problem("", f"{entry}() at line {node.lineno} {problem}", shown))


def _discover_functions(root: str, problems: list[Problem],
                        unusable: dict[str, Problem]) -> dict[str, FunctionSpec]:
    directory = os.path.join(root, FUNCTIONS_DIR)
    functions: dict[str, FunctionSpec] = {}
    if not os.path.isdir(directory):
        return functions
    for entry in sorted(os.listdir(directory)):
        if entry.startswith((".", "_")):
            continue
        path = os.path.join(directory, entry)
        name = entry[:-3] if entry.endswith(".py") else entry
        try:
            if entry.endswith(".py") and os.path.isfile(path):
                spec = _module_function(name, path)
            elif os.path.isdir(path):
                spec = _package_function(entry, path)
            else:
                continue
        except _Refused as exc:
            # Reported where a Task (or a setting) names the function -- instead of
            # "add functions/NAME.py": the file is there. Broken code and a declared
            # function (function.json) are reported anyway; a file without a handler
            # that nothing names is a helper module.
            unusable[name] = exc.problem
            if exc.problem.line is not None or exc.problem.file.endswith(FUNCTION_MANIFEST):
                problems.append(exc.problem)
            continue
        functions[spec.name] = spec
    return functions


def _module_function(name: str, path: str) -> FunctionSpec:
    shown = f"{FUNCTIONS_DIR}/{name}.py"
    found = _entry_point(path, shown)
    return FunctionSpec(name, shown, found[0], found[1], FUNCTIONS_DIR)


def _package_function(name: str, path: str) -> FunctionSpec:
    search_path = f"{FUNCTIONS_DIR}/{name}"
    manifest = os.path.join(path, FUNCTION_MANIFEST)
    if os.path.exists(manifest):
        return _declared_function(name, path, f"{search_path}/{FUNCTION_MANIFEST}")
    for candidate in _PACKAGE_MODULES:
        module_file = os.path.join(path, candidate)
        if os.path.isfile(module_file):
            try:
                found = _entry_point(module_file, f"{search_path}/{candidate}")
            except _Refused as exc:
                if exc.problem.line is not None:
                    raise  # a syntax error
                continue
            return FunctionSpec(name, f"{search_path}/{candidate}", found[0], found[1],
                                search_path)
    raise _Refused(Problem("", f"has no {FUNCTION_MANIFEST} naming its handler, and none of "
                               f"{', '.join(_PACKAGE_MODULES)} in it {_NO_HANDLER}",
                           search_path + "/"))


def _declared_function(name: str, path: str, shown: str) -> FunctionSpec:
    """A function folder whose function.json names the handler: the module must exist
    and bind the name (checked by parsing it: it is not imported)."""
    search_path = f"{FUNCTIONS_DIR}/{name}"

    def refuse(at: str, message: str, line: int | None = None) -> _Refused:
        return _Refused(Problem(at, message, shown, line))

    try:
        with open(os.path.join(path, FUNCTION_MANIFEST), encoding="utf-8") as handle:
            declared = json.load(handle)
    except json.JSONDecodeError as exc:
        raise refuse("", f"not valid JSON: {exc.msg} (column {exc.colno})",
                     exc.lineno) from None
    if not isinstance(declared, dict):
        raise refuse("", f'{FUNCTION_MANIFEST} must hold a JSON object: {{"handler": '
                         '"module.function"}')
    handler = declared.get("handler")
    if not isinstance(handler, str) or "." not in handler:
        raise refuse("/handler" if "handler" in declared else "",
                     f'{FUNCTION_MANIFEST} needs "handler": "module.function"')
    module, _, entry = handler.rpartition(".")
    module_file = os.path.join(path, *module.split(".")) + ".py"
    relative = os.path.relpath(module_file, path)
    if not os.path.isfile(module_file):
        raise refuse("/handler", f"names {handler!r} but there is no "
                                 f"{search_path}/{relative}")
    style = declared.get("style", OPENWHISK if entry == "main" else LAMBDA)
    if style not in (LAMBDA, OPENWHISK):
        raise refuse("/style", f'"style" must be "{LAMBDA}" or "{OPENWHISK}"')
    bound = _bindings(_parse(module_file, f"{search_path}/{relative}"))
    if not bound.binds(entry):
        raise refuse("/handler", f"names {handler!r} but {search_path}/{relative} defines "
                                 f"no {entry!r}{did_you_mean(entry, bound.functions)}")
    return FunctionSpec(name, f"{search_path}/{relative}", entry, style, search_path)
