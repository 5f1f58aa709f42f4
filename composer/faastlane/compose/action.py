"""``faastlane compose``: an app folder in, a self-contained action folder out.

Stages, each a plain function: load the app, validate everything (all problems at
once), build the state model, plan placement, then write the action:

    orchestrator.py      generated: one constant per state
    plan.json            where each state runs and why
    faastlane_runtime/   ASL semantics, threads, forked processes, tracing
    jsonata/             the JSONata engine (jsonata-python, Apache-2.0, with its
                         LICENSE), only when a state uses JSONata
    functions/           the user's code, untouched
    workflow.json        the source workflow, for reference
    state_machines.json  a template's other state machines, which startExecution
                         runs in-process (only when the app has some)
    inspection.json      the binary inspector's record: ELF files, findings, waivers
    __main__.py          OpenWhisk entry main(args); run as a script, the local CLI
    lambda_function.py   Lambda entry handler(event, context)
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import sys
from dataclasses import dataclass
from typing import Any

from faastlane.app.folder import FUNCTIONS_DIR, WORKFLOW_FILE, App
from faastlane.app.project.functions import IGNORED_IN_CODE
from faastlane.app.project.parameters import ProjectOptions
from faastlane.app.sources import load_app
from faastlane.errors import FaastlaneError, InvalidWorkflow
from faastlane.inspector.errors import InspectionFailed
from faastlane.inspector.shipment import app_waivers, inspect_shipment
from faastlane.runtime.asl.model import JSONATA, Machine, machine_from_asl, walk_states
from faastlane.runtime.isolation.domains import MPKStatus
from faastlane.runtime.options import Options
from faastlane.runtime.services.executions import STATE_MACHINES_FILE
from faastlane.validation.load import load_definition
from faastlane.validation.problem import Problem, sort_key
from faastlane.validation.unsupported import unsupported_features
from faastlane.validation.validate import validate

from . import output
from .codegen import render
from .measured import read as read_measured
from .plan import choose_isolation, make_options, make_plan

RUNTIME_PACKAGE = "faastlane_runtime"
# The JSONata engine an action that uses JSONata carries (import name, distribution).
JSONATA_PACKAGE, JSONATA_DISTRIBUTION = "jsonata", "jsonata-python"
_RUNTIME_SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                               "runtime")

_OPENWHISK_ENTRY = '''\
"""OpenWhisk entry point of this Faastlane action; as a script, the local CLI."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

if __name__ == "__main__":
    # The local CLI loads the Orchestrator itself, once stdout is reserved for the result.
    from faastlane_runtime.platforms.local import main as run_locally

    sys.exit(run_locally(lambda plan: __import__("orchestrator").build(plan)))

from faastlane_runtime.platforms.entry import openwhisk_main  # noqa: E402
from orchestrator import ORCHESTRATOR  # noqa: E402  (pre-imports every function)


def main(args):
    return openwhisk_main(ORCHESTRATOR, args)
'''

_LAMBDA_ENTRY = '''\
"""AWS Lambda entry point of this Faastlane action: lambda_function.handler."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from faastlane_runtime.platforms.entry import lambda_handler  # noqa: E402
from orchestrator import ORCHESTRATOR  # noqa: E402  (pre-imports every function)


def handler(event, context):
    return lambda_handler(ORCHESTRATOR, event, context)
'''


@dataclass
class Composition:
    app: App
    definition: dict[str, Any]
    workflow: Machine
    options: Options
    plan: dict[str, Any]


def check_app(app: App) -> tuple[Any, list[Problem]]:
    """Every problem with an app's workflow, functions and settings, the most important
    first (root causes before their likely consequences), then by file and pointer."""
    if app.workflow_text is None:  # unreadable: app.problems says why
        return None, sorted(dict.fromkeys(app.problems), key=sort_key)
    definition, problems = load_definition(app.workflow_text)
    if not problems:
        problems = validate(definition, functions=set(app.functions), unusable=app.unusable)
        if not problems:
            problems = unsupported_features(definition)
    if app.workflow_origin is not None:  # a YAML definition, a template: shown there
        problems = [app.workflow_origin.place(p) if p.file == WORKFLOW_FILE else p
                    for p in problems]
    return definition, sorted(dict.fromkeys(problems + app.problems), key=sort_key)


def shown_root(app_path: str) -> str:
    """The folder the app's problems are shown in: the app folder, or a template's."""
    return os.path.dirname(app_path) if os.path.isfile(app_path) else app_path


def warn(app: App, app_path: str) -> None:
    """The app's warnings (what works on Lambda but not here), one line each on stderr:
    ``faastlane: warning: APP/functions/f.py:3: ...``."""
    for warning in app.warnings:
        sys.stderr.write(f"faastlane: warning: {warning.render(app_path)}\n")


def prepare(app_path: str, isolation: str | None = None, vcpus: int | None = None,
            threads_only: bool = False, processes_only: bool = False,
            max_containers: int | None = None,
            project: ProjectOptions | None = None,
            profile_from: str | None = None,
            keys: MPKStatus | None = None) -> Composition:
    """Load, validate, model and plan an app (a folder, or a template read with
    ``project``; ``profile_from``: a ``run --trace`` file whose measured compute times
    weigh where parallel sections run; ``keys``: whether the action's runtime has protection
    keys, by default this interpreter's); raise InvalidWorkflow listing all problems."""
    app = load_app(app_path, project)
    warn(app, shown_root(app_path))
    definition, problems = check_app(app)
    if problems:
        raise InvalidWorkflow(problems, shown_root(app_path))
    mode, reason = choose_isolation(app, isolation, keys)
    workflow = machine_from_asl(definition)
    measured = None if profile_from is None else read_measured(profile_from, workflow)
    options = make_options(app, mode, vcpus, threads_only, processes_only, workflow,
                           max_containers, measured)
    return Composition(app, definition, workflow, options,
                       make_plan(app, workflow, options, reason, measured))


def write_action(composition: Composition, out_dir: str) -> str:
    """Write the action folder whole; returns its path. An existing ``out_dir`` is
    replaced only when it is an earlier action and nothing else (:mod:`output`)."""
    app = composition.app
    refused: list[InspectionFailed] = []

    def build(stage: str) -> None:
        _build(composition, stage)
        # Native code the action ships (a function's .so) must not change PKRU: records
        # inspection.json and fails on an unwaived finding (faastlane.inspector). A refused
        # action is still written, with its record, for the user to look at; the
        # command fails.
        try:
            inspect_shipment(stage, app_waivers(app.settings.inspector_waivers))
        except InspectionFailed as exc:
            refused.append(exc)

    for source in app.code.values():  # a template's code folders, copied into the action
        output.check_target(out_dir, app.root, source)
    output.write_into(out_dir, app.root, os.path.join(app.root, FUNCTIONS_DIR), build)
    if refused:
        raise refused[0]
    return out_dir


def _build(composition: Composition, out_dir: str) -> None:
    """Every file of the action, into the (new, empty) folder ``out_dir``."""
    app = composition.app
    shutil.copytree(_RUNTIME_SOURCE, os.path.join(out_dir, RUNTIME_PACKAGE),
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if uses_jsonata(composition.workflow):
        vendor_jsonata(out_dir)
    functions_src = os.path.join(app.root, FUNCTIONS_DIR)
    if app.code:  # a template's: each function's code folder (CodeUri) as its own
        for folder, source in app.code.items():
            shutil.copytree(source, os.path.join(out_dir, folder),
                            ignore=shutil.ignore_patterns(*IGNORED_IN_CODE, "*.pyc"))
    elif os.path.isdir(functions_src):
        shutil.copytree(functions_src, os.path.join(out_dir, FUNCTIONS_DIR),
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    assert app.workflow_text is not None  # an unreadable workflow is a problem: no plan
    files = {
        "orchestrator.py": render(app.name, composition.workflow, app.functions,
                                  composition.plan),
        "plan.json": json.dumps(composition.plan, indent=2) + "\n",
        WORKFLOW_FILE: app.workflow_text,
        "__main__.py": _OPENWHISK_ENTRY,
        "lambda_function.py": _LAMBDA_ENTRY,
    }
    # The template's other state machines, which states:startExecution runs in-process
    # (runtime/services/executions.py): {name or ARN: definition}, from the template
    # reader; an app folder has none.
    machines = getattr(app, "state_machines", None)
    if machines:
        files[STATE_MACHINES_FILE] = json.dumps(machines, indent=2) + "\n"
    for name, text in files.items():
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as handle:
            handle.write(text)


def uses_jsonata(workflow: Machine) -> bool:
    """Whether any state of the workflow (branches and iterators included) is JSONata."""
    return any(state.query_language == JSONATA for state in walk_states(workflow))


def vendor_jsonata(out_dir: str) -> None:
    """Copy the installed JSONata engine next to faastlane_runtime/, with its license.

    The action must run where only it is installed (OpenWhisk, Lambda); jsonata-python is
    pure Python and Apache-2.0, which allows redistribution with the license kept.
    """
    spec = importlib.util.find_spec(JSONATA_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FaastlaneError(f"this workflow uses JSONata, which needs the "
                             f"{JSONATA_DISTRIBUTION} package: pip install "
                             f"{JSONATA_DISTRIBUTION}")
    target = os.path.join(out_dir, JSONATA_PACKAGE)
    shutil.copytree(list(spec.submodule_search_locations)[0], target,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "cli"))
    distribution = importlib.metadata.distribution(JSONATA_DISTRIBUTION)
    licenses = [f for f in distribution.files or () if f.name.upper().startswith("LICENSE")]
    for license_file in licenses:
        shutil.copyfile(license_file.locate(), os.path.join(target, license_file.name))


def compose(app_path: str, out_dir: str, **planning: Any) -> str:
    """``faastlane compose``: validate, plan and write the action folder."""
    return write_action(prepare(app_path, **planning), out_dir)
