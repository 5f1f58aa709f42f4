"""Run a conformance case through the real ``faastlane run`` command.

The case's app (``workflow.json`` + ``functions/``, materialized by ``cases.materialize``) is
passed as is. The CLI contract: exit 0 with the output JSON on stdout, or exit 1 with
``{"Error", "Cause"}`` on stdout for a failed execution. Anything else (a traceback, an
unexpected exit code, stdout that is not JSON) is reported as a harness-level failure
that can never equal a reference outcome.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from . import call_log
from .cases import Case
from .outcome import Outcome

ISOLATIONS = ("none", "process")
TIMEOUT_SECONDS = 120.0


def faastlane_command() -> list[str]:
    """The installed console script beside this interpreter, else ``python -m``."""
    script = Path(sys.executable).parent / "faastlane"
    return [str(script)] if script.exists() else [sys.executable, "-m", "faastlane"]


def run_case(case: Case, isolation: str) -> Outcome:
    with tempfile.TemporaryDirectory(prefix=f"conformance-{case.name}-") as scratch:
        input_file = Path(scratch) / "input.json"
        input_file.write_text(json.dumps(case.input_for(call_log.new_scratch())))
        command = [
            *faastlane_command(),
            "run",
            str(case.folder),
            "--input-file",
            str(input_file),
            "--isolation",
            isolation,
        ]
        try:
            completed = subprocess.run(
                command, capture_output=True, text=True, timeout=TIMEOUT_SECONDS
            )
        except subprocess.TimeoutExpired:
            return Outcome.failure("faastlane did not finish", f"after {TIMEOUT_SECONDS} s")
    return _outcome_of(completed)


def _outcome_of(completed: subprocess.CompletedProcess[str]) -> Outcome:
    unexpected = Outcome.failure(
        f"faastlane exited {completed.returncode}",
        f"stdout: {completed.stdout[-2000:]!r} stderr: {completed.stderr[-2000:]!r}",
    )
    try:
        printed = json.loads(completed.stdout)
    except ValueError:
        return unexpected
    if completed.returncode == 0:
        return Outcome.success(printed)
    if completed.returncode == 1 and isinstance(printed, dict) and "Error" in printed:
        return Outcome.failure(printed["Error"], printed.get("Cause"))
    return unexpected
