"""Helpers for running the real ``faastlane`` command on apps written into tmp_path.

Shared by every suite that runs the CLI (integration, deploy, placement): ``pytest``
puts ``tests/`` on ``sys.path`` for the packages below it, so they import this module as
``integration.apps``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Generous: packaging vendors requirements with pip, and the examples' inputs are large.
CLI_TIMEOUT = 300


@dataclass
class Completed:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        return json.loads(self.stdout)


def _command(console_script: bool) -> list[str]:
    if not console_script:
        return [sys.executable, "-m", "faastlane"]
    beside = Path(sys.executable).with_name("faastlane")
    found = str(beside) if beside.exists() else shutil.which("faastlane")
    if found is None:
        pytest.fail("the faastlane CLI is not installed (pip install -e . in this venv)")
    return [found]


def faastlane(*args: str, env: dict[str, str] | None = None, timeout: float = CLI_TIMEOUT,
              console_script: bool = False) -> Completed:
    """Run the CLI as a user would, in a fresh interpreter, from the repository root.

    ``python -m faastlane`` by default; ``console_script`` runs the installed ``faastlane``
    entry point instead, so a test also proves that what ``pip install`` made works.
    """
    proc = subprocess.run([*_command(console_script), *args], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=ROOT)
    return Completed(proc.returncode, proc.stdout, proc.stderr)


def write_app(root: Path, workflow: dict, functions: dict[str, str],
              settings: dict | None = None) -> Path:
    """An app folder: workflow.json, functions/NAME.py (dedented), faastlane.json."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "workflow.json").write_text(json.dumps(workflow, indent=2))
    (root / "functions").mkdir(exist_ok=True)
    for name, source in functions.items():
        (root / "functions" / f"{name}.py").write_text(textwrap.dedent(source))
    if settings is not None:
        (root / "faastlane.json").write_text(json.dumps(settings))
    return root


def task(resource: str, **fields: Any) -> dict:
    state = {"Type": "Task", "Resource": resource, **fields}
    if "Next" not in state:
        state["End"] = True
    return state


def chain(*names_and_states: tuple[str, dict]) -> dict:
    """A machine whose states run in the order given."""
    states = {}
    for i, (name, state) in enumerate(names_and_states):
        state = dict(state)
        if i + 1 < len(names_and_states):
            state.pop("End", None)
            state["Next"] = names_and_states[i + 1][0]
        states[name] = state
    return {"StartAt": names_and_states[0][0], "States": states}
