"""The conformance cases: one Faastlane app folder per case under ``cases/``.

A case is ``workflow.json`` (ASL), ``functions/NAME.py`` and ``input.json``; both engines
run it and must agree. ``expected.json`` exists only where moto cannot run the case or
is wrong per the AWS documentation: it holds ``reason`` (why, with the documentation it
follows) and the documented outcome (``output``, or ``error`` and ``cause``), which then
replaces moto's as the reference.

Inputs may contain the placeholder ``@SCRATCH@``: each run replaces it with a fresh
empty directory, where functions keep per-execution state (e.g. how many times they
have failed so far, for Retry cases).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .outcome import Outcome

CASES_DIR = Path(__file__).parent / "cases"
SCRATCH = "@SCRATCH@"


@dataclass(frozen=True)
class Case:
    """One workflow, its functions, its input and (rarely) a documented expectation."""

    name: str
    folder: Path
    workflow: dict[str, Any]
    input: Any
    functions: dict[str, Path]
    documented: Outcome | None
    reason: str | None

    def input_for(self, scratch: Path) -> Any:
        """The input with ``@SCRATCH@`` replaced by ``scratch``."""
        return json.loads(json.dumps(self.input).replace(SCRATCH, str(scratch)))


def load_case(folder: Path) -> Case:
    expected_file = folder / "expected.json"
    documented: Outcome | None = None
    reason: str | None = None
    if expected_file.exists():
        expected = json.loads(expected_file.read_text())
        reason = expected["reason"]
        documented = Outcome.from_json(expected)
    functions_dir = folder / "functions"
    functions = (
        {path.stem: path for path in sorted(functions_dir.glob("*.py"))}
        if functions_dir.is_dir()
        else {}
    )
    return Case(
        name=folder.name,
        folder=folder,
        workflow=json.loads((folder / "workflow.json").read_text()),
        input=json.loads((folder / "input.json").read_text()),
        functions=functions,
        documented=documented,
        reason=reason,
    )


def all_cases() -> list[Case]:
    return [load_case(folder) for folder in sorted(CASES_DIR.iterdir()) if folder.is_dir()]
