"""The conformance cases: one Faastlane app folder per case under ``cases/``.

A case is ``workflow.json`` (ASL), ``functions/NAME.py`` and ``input.json``; both engines
run it and must agree. ``expected.json`` exists only where moto cannot run the case or
is wrong per the AWS documentation: it holds ``reason`` (why, with the documentation it
follows) and the documented outcome (``output``, or ``error`` and ``cause``), which then
replaces moto's as the reference.

Inputs may contain the placeholder ``@SCRATCH@``: each run replaces it with a fresh
key of the harness's call log (``call_log.py``), where functions keep per-execution
state (how many times they have failed so far, for Retry cases).

Functions that many cases share live once in ``shared_functions/``; a case names the
ones it uses, with their settings, in ``shared_functions.json`` (``{"flaky": {"FAILS":
2}, "count": {}}``), and :func:`materialize` writes the case's complete app (a copy of
its folder plus those functions, settings filled in) before anything runs it.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .outcome import Outcome

CASES_DIR = Path(__file__).parent / "cases"
SHARED_DIR = Path(__file__).parent / "shared_functions"
SHARED_LIST = "shared_functions.json"
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
    shared: dict[str, dict[str, Any]]  # shared function -> its settings (materialize)

    def input_for(self, scratch: str) -> Any:
        """The input with ``@SCRATCH@`` replaced by ``scratch``."""
        return json.loads(json.dumps(self.input).replace(SCRATCH, scratch))


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
    shared_list = folder / SHARED_LIST
    shared = json.loads(shared_list.read_text()) if shared_list.exists() else {}
    for name in shared:
        assert name not in functions, f"{folder.name}: {name} is both shared and its own"
        assert (SHARED_DIR / f"{name}.py").is_file(), f"{folder.name}: no shared {name}.py"
    return Case(
        name=folder.name,
        folder=folder,
        workflow=json.loads((folder / "workflow.json").read_text()),
        input=json.loads((folder / "input.json").read_text()),
        functions=functions,
        documented=documented,
        reason=reason,
        shared=shared,
    )


def shared_function(name: str, settings: dict[str, Any]) -> str:
    """``shared_functions/NAME.py`` with each setting's line ``KEY = ...`` rewritten."""
    source = (SHARED_DIR / f"{name}.py").read_text()
    for key, value in settings.items():
        line = f"{key} = {value!r}"
        source, found = re.subn(rf"^{re.escape(key)} = .*$", lambda _, line=line: line,
                                source, count=1, flags=re.MULTILINE)
        assert found, f"shared_functions/{name}.py has no setting {key}"
    return source


def materialize(case: Case, root: Path) -> Case:
    """The case as a complete app under ``root``: its folder with the shared functions it
    names written into ``functions/``. A case without shared functions is used in place."""
    if not case.shared:
        return case
    folder = root / case.name
    shutil.copytree(case.folder, folder, ignore=shutil.ignore_patterns(SHARED_LIST))
    (folder / "functions").mkdir(exist_ok=True)
    for name, settings in case.shared.items():
        (folder / "functions" / f"{name}.py").write_text(shared_function(name, settings))
    functions = {name: folder / "functions" / f"{name}.py"
                 for name in sorted({*case.functions, *case.shared})}
    return replace(case, folder=folder, functions=functions)


def all_cases() -> list[Case]:
    return [load_case(folder) for folder in sorted(CASES_DIR.iterdir()) if folder.is_dir()]
