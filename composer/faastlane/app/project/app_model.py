"""A template as the same :class:`App` an app folder gives: the chosen state machine's
definition (resolved, as JSON) is the workflow, its functions are ``FunctionSpec``s with
the template's environment, timeout and memory, and ``Metadata: {Faastlane: {...}}`` on
the state machine holds what faastlane.json would (isolation, untrusted, ...).

In the action each function's code folder (``CodeUri``) is copied to
``functions/NAME/``, NAME being the function's local name, so two functions sharing one
folder each get their own copy, as on Lambda.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from typing import Any

from faastlane.app.folder import (
    FUNCTIONS_DIR,
    SETTINGS_FILE,
    App,
    WorkflowOrigin,
    check_setting_names,
    settings_from,
)
from faastlane.app.relative_opens import relative_opens
from faastlane.runtime.engine.functions import LAMBDA, FunctionSpec
from faastlane.validation.problem import Problem
from faastlane.validation.validate import validate

from .functions import TemplateFunction
from .parameters import ProjectOptions
from .template import Located, Project, read_template

METADATA_KEY = "Faastlane"


def _action_spec(function: TemplateFunction) -> FunctionSpec:
    folder = f"{FUNCTIONS_DIR}/{function.name}"
    return FunctionSpec(function.name, f"{folder}/{function.module}", function.entry, LAMBDA,
                        folder, tuple(sorted(function.environment.items())),
                        function.timeout, function.memory)


def _source_spec(root: str, function: TemplateFunction) -> FunctionSpec:
    """The same function with its files where they are (for warnings about them)."""
    folder = os.path.relpath(function.code_dir, root).replace(os.sep, "/")
    return FunctionSpec(function.name, f"{folder}/{function.module}", function.entry, LAMBDA,
                        folder)


def _settings_problem(metadata: Located, problem: Problem) -> Problem:
    """A faastlane.json problem, shown where the template's Metadata holds the setting."""
    if problem.file != SETTINGS_FILE:
        return problem
    return metadata.place(problem.pointer, problem.message.replace(
        SETTINGS_FILE, f"Metadata.{METADATA_KEY}"))


def app_from_project(project: Project) -> App:
    problems = list(project.problems)
    functions = {name: _action_spec(f) for name, f in project.functions.items()}
    settings_problems: list[Problem] = []
    if "functions" in project.settings:
        settings_problems.append(Problem("/functions", "set a function's environment, timeout "
                                         "and memory on its resource (Environment, Timeout, "
                                         "MemorySize), not here", SETTINGS_FILE))
    settings = settings_from({k: v for k, v in project.settings.items() if k != "functions"},
                             settings_problems)
    check_setting_names(settings, functions, project.unusable, settings_problems)
    where = f"/Resources/{project.state_machine}/Metadata/{METADATA_KEY}"
    metadata = project.template.within(where)
    problems += [_settings_problem(metadata, p) for p in settings_problems]
    if settings.name is None:
        settings = replace(settings, name=project.name)
    origin = None
    text = None
    if project.definition is not None and project.definition_at is not None:
        at = project.definition_at
        text = json.dumps(project.definition, indent=2) + "\n"
        origin = WorkflowOrigin(at.file, at.prefix, at.document.lines,
                                frozenset(project.unresolved))
    elif not problems:
        problems.append(project.template.place("", "no state machine definition was read"))
    warnings = relative_opens(project.root, {name: _source_spec(project.root, f)
                                             for name, f in project.functions.items()})
    warnings += [warning for f in project.functions.values() for warning in f.warnings]
    code = {f"{FUNCTIONS_DIR}/{name}": f.code_dir for name, f in project.functions.items()}
    app = App(project.root, settings.name or project.name, text, functions, settings,
              problems, dict(project.unusable), warnings, origin, code)
    app.state_machines = _other_machines(project, app)
    return app


def _other_machines(project: Project, app: App) -> dict[str, Any]:
    """The template's other state machines that are valid, by local name, for
    ``states:startExecution``; each that is not is a warning (it cannot be started)."""
    machines: dict[str, Any] = {}
    for name, (logical_id, definition, problems) in project.others.items():
        if not problems and definition is not None:
            problems = validate(definition, functions=set(app.functions),
                                unusable=app.unusable)
        if problems:
            app.warnings.append(project.template.place(
                f"/Resources/{logical_id}", f"state machine {logical_id} is left out of the "
                f"action (a startExecution of it fails): {problems[0].message} (faastlane "
                f"validate --state-machine {logical_id} lists its problems)"))
            continue
        machines[name] = definition
    return machines


def load_project(path: str, options: ProjectOptions | None = None) -> App:
    """``faastlane ... TEMPLATE``: the template read and turned into an App."""
    return app_from_project(read_template(path, options))
