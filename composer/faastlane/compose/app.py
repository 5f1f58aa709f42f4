"""The app directory: a workflow, its functions and optional settings.

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
from dataclasses import dataclass, field, replace
from typing import Any

from faastlane.asl.problem import Problem
from faastlane.errors import AppError
from faastlane.runtime.engine.functions import LAMBDA, OPENWHISK, FunctionSpec

WORKFLOW_FILE = "workflow.json"
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
                  "inspector_waivers": list,  # checked by faastlane.inspect.waivers
                  "functions": dict}  # per function, as Lambda's configuration
# faastlane.json "functions": {NAME: {...}}, Lambda's limits: a timeout of 1-900 s, memory
# of 128-10240 MB, variable names as Lambda accepts them (letters, digits, "_", starting
# with a letter) and not one of the runtime's reserved ones.
_FUNCTION_KEYS = ("environment", "timeout", "memory")
_VARIABLE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_RESERVED_VARIABLES = frozenset((
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


@dataclass
class App:
    root: str
    name: str
    workflow_text: str
    functions: dict[str, FunctionSpec]
    settings: Settings
    problems: list[Problem] = field(default_factory=list)  # in functions/ and faastlane.json


def load_app(path: str) -> App:
    """Read an app folder; problems with its functions and settings are collected."""
    root = os.path.abspath(path)
    if not os.path.isdir(root):
        raise AppError(f"no app folder at {path}")
    workflow_path = os.path.join(root, WORKFLOW_FILE)
    try:
        with open(workflow_path, encoding="utf-8") as handle:
            workflow_text = handle.read()
    except FileNotFoundError:
        raise AppError(f"{path} has no {WORKFLOW_FILE}: an app folder holds the workflow "
                       f"(ASL) in {WORKFLOW_FILE} and its code in {FUNCTIONS_DIR}/") from None
    problems: list[Problem] = []
    settings = _load_settings(root, problems)
    functions = _discover_functions(root, problems)
    for names, key in ((settings.trusted, "trusted"), (settings.untrusted, "untrusted"),
                       (settings.sensitive, "sensitive"),
                       (tuple(settings.kept_escapes), "kept_escapes")):
        for index, name in enumerate(names):
            if name not in functions:
                problems.append(Problem(f"/{key}/{index}",
                                        f"{SETTINGS_FILE}: no function named {name!r}"))
    functions = _configure_functions(functions, settings.functions, problems)
    name = settings.name or os.path.basename(root.rstrip(os.sep))
    return App(root, name, workflow_text, functions, settings, problems)


def _load_settings(root: str, problems: list[Problem]) -> Settings:
    path = os.path.join(root, SETTINGS_FILE)
    if not os.path.exists(path):
        return Settings()
    try:
        with open(path, encoding="utf-8") as handle:
            raw = json.load(handle)
    except json.JSONDecodeError as exc:
        problems.append(Problem("", f"{SETTINGS_FILE} is not valid JSON: {exc.msg} "
                                    f"(line {exc.lineno}, column {exc.colno})"))
        return Settings()
    if not isinstance(raw, dict):
        problems.append(Problem("", f"{SETTINGS_FILE} must hold a JSON object"))
        return Settings()
    values: dict[str, Any] = {}
    for key, value in raw.items():
        expected = _SETTINGS_KEYS.get(key)
        if expected is None:
            problems.append(Problem(f"/{key}", f"{SETTINGS_FILE}: unknown setting {key!r} "
                                               f"(known: {', '.join(sorted(_SETTINGS_KEYS))})"))
        elif not isinstance(value, expected) or isinstance(value, bool):
            problems.append(Problem(f"/{key}", f"{SETTINGS_FILE}: {key} must be a "
                                               f"{expected.__name__}"))
        else:
            values[key] = tuple(value) if isinstance(value, list) else value
    return Settings(**values)


def _configure_functions(functions: dict[str, FunctionSpec],
                         configured: dict[str, Any], problems: list[Problem]
                         ) -> dict[str, FunctionSpec]:
    """The functions with faastlane.json's ``functions`` settings; each wrong value is a
    problem (its pointer under ``/functions``)."""
    out = dict(functions)
    for name, config in configured.items():
        where = f"/functions/{name}"
        if name not in functions:
            problems.append(Problem(where, f"{SETTINGS_FILE}: no function named {name!r}"))
            continue
        if not isinstance(config, dict):
            problems.append(Problem(where, f"{SETTINGS_FILE}: functions.{name} must be an "
                                           f"object ({', '.join(_FUNCTION_KEYS)})"))
            continue
        changes: dict[str, Any] = {}
        for key, value in config.items():
            problem = _function_setting_problem(key, value)
            if problem is not None:
                problems.append(Problem(f"{where}/{key}",
                                        f"{SETTINGS_FILE}: functions.{name}.{key} {problem}"))
            elif key == "environment":
                changes[key] = tuple(sorted(value.items()))
            else:
                changes[key] = value
        out[name] = replace(functions[name], **changes)
    return out


def _function_setting_problem(key: str, value: Any) -> str | None:
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
        if not _VARIABLE_NAME.match(variable):
            return (f"names {variable!r}: a variable's name is letters, digits and _, "
                    "starting with a letter")
        if variable in _RESERVED_VARIABLES:
            return f"sets {variable}, which Lambda reserves (the runtime sets it)"
        if not isinstance(text, str):
            return f"sets {variable} to a {type(text).__name__}: values are strings"
    return None


def _entry_point(source_path: str) -> tuple[str, str] | None:
    """The handler a module defines at top level, without importing it."""
    with open(source_path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), source_path)
    defined = {node.name for node in tree.body
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    defined |= {target.id for node in tree.body if isinstance(node, ast.Assign)
                for target in node.targets if isinstance(target, ast.Name)}
    return next(((name, style) for name, style in _ENTRIES if name in defined), None)


def _discover_functions(root: str, problems: list[Problem]) -> dict[str, FunctionSpec]:
    directory = os.path.join(root, FUNCTIONS_DIR)
    functions: dict[str, FunctionSpec] = {}
    if not os.path.isdir(directory):
        return functions
    for entry in sorted(os.listdir(directory)):
        if entry.startswith((".", "_")):
            continue
        path = os.path.join(directory, entry)
        try:
            if entry.endswith(".py") and os.path.isfile(path):
                spec = _module_function(entry[:-3], path)
            elif os.path.isdir(path):
                spec = _package_function(entry, path)
            else:
                continue
        except SyntaxError as exc:
            problems.append(Problem("", f"{FUNCTIONS_DIR}/{entry}: syntax error at line "
                                        f"{exc.lineno}: {exc.msg}"))
            continue
        except ValueError as exc:
            problems.append(Problem("", f"{FUNCTIONS_DIR}/{entry}: {exc}"))
            continue
        functions[spec.name] = spec
    return functions


def _module_function(name: str, path: str) -> FunctionSpec:
    found = _entry_point(path)
    if found is None:
        raise ValueError("defines no handler(event, context), lambda_handler(event, context) "
                         "or main(params)")
    return FunctionSpec(name, f"{FUNCTIONS_DIR}/{name}.py", found[0], found[1], FUNCTIONS_DIR)


def _package_function(name: str, path: str) -> FunctionSpec:
    search_path = f"{FUNCTIONS_DIR}/{name}"
    manifest = os.path.join(path, FUNCTION_MANIFEST)
    if os.path.exists(manifest):
        with open(manifest, encoding="utf-8") as handle:
            declared = json.load(handle)
        handler = declared.get("handler") if isinstance(declared, dict) else None
        if not isinstance(handler, str) or "." not in handler:
            raise ValueError(f'{FUNCTION_MANIFEST} needs "handler": "module.function"')
        module, _, entry = handler.rpartition(".")
        module_file = os.path.join(path, *module.split(".")) + ".py"
        if not os.path.isfile(module_file):
            raise ValueError(f"{FUNCTION_MANIFEST} names {handler!r} but there is no "
                             f"{os.path.relpath(module_file, path)}")
        style = declared.get("style", OPENWHISK if entry == "main" else LAMBDA)
        if style not in (LAMBDA, OPENWHISK):
            raise ValueError(f'{FUNCTION_MANIFEST}: "style" must be "{LAMBDA}" or "{OPENWHISK}"')
        return FunctionSpec(name, f"{search_path}/{os.path.relpath(module_file, path)}",
                            entry, style, search_path)
    for candidate in _PACKAGE_MODULES:
        module_file = os.path.join(path, candidate)
        if os.path.isfile(module_file):
            found = _entry_point(module_file)
            if found is not None:
                return FunctionSpec(name, f"{search_path}/{candidate}", found[0], found[1],
                                    search_path)
    raise ValueError(f"a function folder needs {FUNCTION_MANIFEST} or one of "
                     f"{', '.join(_PACKAGE_MODULES)} defining a handler")
