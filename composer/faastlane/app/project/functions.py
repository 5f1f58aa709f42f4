"""A template's function resources as Lambda runs them: ``AWS::Serverless::Function``
(``CodeUri``, SAM's ``Globals.Function`` already merged) and ``AWS::Lambda::Function``
(``Code`` as a local path, or a ``cdk synth`` asset named by ``aws:asset:path``).

A function that cannot run here (another runtime, code in S3, a missing handler) is not
an error of the template: it is reported where a Task names it, as in an app folder.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, replace
from typing import Any, Protocol

from faastlane.app.folder import function_setting_problem, handler_problem
from faastlane.validation.problem import Problem

from .intrinsics import Resolver, Unresolved
from .resources import Resource


class _Places(Protocol):
    def place(self, pointer: str, message: str) -> Problem: ...


class TemplateReader(Protocol):
    """What reading a function takes from the template's reader (``template._Reader``)."""

    root: str
    resolver: Resolver

    @property  # read only, so the reader's own kind of places (template.Located) will do
    def at(self) -> _Places: ...

# The properties read (resolved); the others (Events, Policies, ...) do not matter here.
_READ = ("CodeUri", "Code", "InlineCode", "Handler", "Runtime", "PackageType", "Environment",
         "Timeout", "MemorySize")
# Folders of a code folder that are not code: SAM's build output, caches.
IGNORED_IN_CODE = (".aws-sam", ".git", "__pycache__", "node_modules")


@dataclass(frozen=True)
class TemplateFunction:
    """A function resource: its code folder and handler, as Lambda would run it."""

    logical_id: str
    name: str  # its local name (FunctionName, else the logical id): Tasks call it by it
    code_dir: str  # absolute
    module: str  # the handler's module file, relative to code_dir
    entry: str
    environment: dict[str, str]
    timeout: float | None
    memory: int | None
    # What works where the function's Runtime is but not on this Python (a warning each).
    warnings: tuple[Problem, ...] = ()


class _Unusable(Exception):
    def __init__(self, where: str, message: str) -> None:
        super().__init__(message)
        self.where = where


def _number(value: Any, where: str, what: str) -> Any:
    """A number from a template (a parameter's value is a string: "30")."""
    if isinstance(value, str):
        try:
            return float(value) if "." in value else int(value)
        except ValueError:
            raise _Unusable(where, f"{what} {value!r} is not a number") from None
    return value


def _code_dir(reader: TemplateReader, resource: Resource, props: dict[str, Any],
              metadata: dict[str, Any]) -> str:
    if "InlineCode" in props or isinstance(props.get("Code"), dict) and "ZipFile" in props["Code"]:
        raise _Unusable(resource.at("InlineCode" if "InlineCode" in props else "Code"),
                        "inline code is not supported: put the function in a folder and "
                        "name it with CodeUri")
    if props.get("PackageType") == "Image":
        raise _Unusable(resource.at("PackageType"), "a container-image function is not "
                        "supported: Faastlane runs Python functions from their code folder")
    key = "CodeUri" if resource.type == "AWS::Serverless::Function" else "Code"
    code = props.get(key, "." if key == "CodeUri" else None)
    asset = metadata.get("aws:asset:path") if isinstance(metadata, dict) else None
    if not isinstance(code, str) and isinstance(asset, str):
        code = asset  # cdk synth: the asset folder beside the template
    if not isinstance(code, str):
        raise _Unusable(resource.at(key), f"{key} must name a local folder (code in S3 "
                        "cannot be run locally: use the template before `sam package`)")
    path = os.path.normpath(os.path.join(reader.root, code))
    if not os.path.isdir(path):
        raise _Unusable(resource.at(key), f"{key} {code}: no folder "
                        f"{os.path.relpath(path, reader.root)}")
    return path


def read_function(reader: TemplateReader, resource: Resource, name: str,
                  metadata: dict[str, Any]) -> tuple[TemplateFunction | None, Problem | None]:
    """The function, or the problem that makes it unusable here."""
    try:
        props = {key: reader.resolver.resolve(resource.properties[key], resource.at(key))
                 for key in _READ if key in resource.properties}
        runtime = props.get("Runtime")
        if runtime is not None and not (isinstance(runtime, str) and runtime.startswith("python3")):
            raise _Unusable(resource.at("Runtime"), f"Runtime {runtime}: Faastlane runs Python "
                                                     "functions only (python3.x)")
        code_dir = _code_dir(reader, resource, props, metadata)
        handler = props.get("Handler")
        if not isinstance(handler, str) or "." not in handler:
            raise _Unusable(resource.at("Handler"), "Handler must be module.function "
                                                     "(app.lambda_handler)")
        module, _, entry = handler.rpartition(".")
        module_file = module.replace(".", "/") + ".py"
        shown = os.path.relpath(os.path.join(code_dir, module_file), reader.root)
        if not os.path.isfile(os.path.join(code_dir, module_file)):
            raise _Unusable(resource.at("Handler"), f"Handler {handler}: no {shown}")
        found = handler_problem(os.path.join(code_dir, module_file), shown, entry)
        warnings: tuple[Problem, ...] = ()
        newer = _newer_than_this_python(runtime)
        if found is not None and found.line is not None and newer is not None:
            # Syntax of the Python it declares (3.12's f-strings, say), not of this one.
            warnings = (replace(found, message=(
                f"{found.message} on this Python ({_this_python()}), which is older than "
                f"the function's Runtime {runtime}: it is kept, as its code may use "
                f"{runtime}'s syntax, which Lambda runs; run faastlane on Python {newer} "
                "or newer to run it locally (here its Tasks fail with "
                "Runtime.UserCodeSyntaxError)")),)
        elif found is not None:
            if found.line is not None:
                return None, found  # a syntax error, in its own file
            raise _Unusable(resource.at("Handler"), f"Handler {handler}: {shown} {found.message}")
        environment = props.get("Environment") or {}
        environment = environment.get("Variables") if isinstance(environment, dict) else None
        if not isinstance(environment or {}, dict):
            raise _Unusable(resource.at("Environment"), "Environment must be "
                                                        "{Variables: {NAME: value}}")
        environment = {key: value if isinstance(value, str) else
                       str(value).lower() if isinstance(value, bool) else str(value)
                       for key, value in (environment or {}).items()}
        settings: dict[str, Any] = {"environment": environment}
        if "Timeout" in props:
            settings["timeout"] = _number(props["Timeout"], resource.at("Timeout"), "Timeout")
        if "MemorySize" in props:
            settings["memory"] = _number(props["MemorySize"], resource.at("MemorySize"),
                                         "MemorySize")
        for key, value in settings.items():
            problem = function_setting_problem(key, value)
            if problem is not None:
                property_name = {"environment": "Environment", "timeout": "Timeout",
                                 "memory": "MemorySize"}[key]
                raise _Unusable(resource.at(property_name), f"{property_name} {problem}")
    except Unresolved as exc:
        return None, reader.at.place(exc.where, str(exc))
    except _Unusable as exc:
        inherited = f" (in Globals, for {resource.logical_id})" \
            if exc.where.startswith("/Globals/") else ""
        return None, reader.at.place(exc.where, str(exc) + inherited)
    return TemplateFunction(resource.logical_id, name, code_dir, module_file, entry,
                            environment, settings.get("timeout"), settings.get("memory"),
                            warnings), None


def _this_python() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def _newer_than_this_python(runtime: Any) -> str | None:
    """``3.12`` when ``runtime`` (``python3.12``) is a newer Python than this one."""
    if not isinstance(runtime, str):
        return None
    match = re.fullmatch(r"python(\d+)\.(\d+)", runtime)
    if match is None:
        return None
    declared = (int(match.group(1)), int(match.group(2)))
    return f"{declared[0]}.{declared[1]}" if declared > sys.version_info[:2] else None
