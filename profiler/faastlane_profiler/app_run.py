"""``faastlane profile APP --input-file F``: a profiling run of an app's sample input.

The app runs once as ``faastlane run --trace`` runs it (its own isolation), the timeline
goes to a trace file, and the placements ``faastlane compose APP --profile-from TRACE``
would make from it are printed with the numbers that decide them. The trace file is
written new: an existing file is replaced only when it is an earlier trace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from faastlane.compose.action import prepare
from faastlane.errors import FaastlaneError


def default_trace(app: str) -> str:
    """``NAME.profile.jsonl`` in the working folder, NAME the app's folder or template."""
    base = os.path.basename(os.path.normpath(app))
    return f"{os.path.splitext(base)[0] if os.path.isfile(app) else base}.profile.jsonl"


def _check_target(path: str) -> None:
    """Refuse to replace a file that is not a trace (a header line naming a workflow)."""
    if not os.path.exists(path):
        return
    try:
        with open(path, encoding="utf-8") as handle:
            header = json.loads(handle.readline())
    except (OSError, ValueError, UnicodeDecodeError):
        header = None
    if not isinstance(header, dict) or "workflow" not in header:
        raise FaastlaneError(f"{path} exists and is not a faastlane trace: not replaced "
                             f"(give another with --output)")


def profile_app(app: str, input_args: list[str], trace: str,
                isolation: str | None = None) -> dict[str, Any]:
    """Run ``app`` once with the ``faastlane run`` input options ``input_args`` (and
    ``isolation``, else compose's choice), tracing into ``trace``; the placement of
    every Parallel/Map planned from it."""
    _check_target(trace)
    chosen = [] if isolation is None else ["--isolation", isolation]
    done = subprocess.run([sys.executable, "-m", "faastlane", "run", app, *input_args,
                           *chosen, "--trace", trace], stdout=subprocess.DEVNULL,
                          check=False)
    if done.returncode != 0:
        raise FaastlaneError(f"the profiling run of {app} failed (exit {done.returncode}): "
                             f"its error is above; nothing was planned")
    plan = prepare(app, isolation=isolation, profile_from=trace).plan
    return {key: entry for key, entry in plan["states"].items()
            if entry.get("type") in ("Parallel", "Map")}


def describe(app: str, trace: str, sections: dict[str, Any]) -> str:
    lines = [f"profiled {app}: timeline in {trace}"]
    if not sections:
        lines.append("no Parallel or Map state: nothing to place")
    for key, entry in sections.items():
        lines.append(f"{key}: {entry['placement']} -- {entry['reason']}")
    lines.append(f"compose with: faastlane compose {app} --profile-from {trace}")
    return "\n".join(lines)
