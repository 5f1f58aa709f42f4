"""The measured time of each state, from the timeline ``faastlane run --trace FILE`` writes
(``runtime/engine/trace.py``: a header line, then one JSON line per record)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from faastlane.errors import FaastlaneError

# Records that are not a state's own execution: a function attempt inside a Task, and
# the placement decisions and remote groups of a spilling section.
_NOT_STATES = frozenset({"Function", "Placement", "RemoteGroup"})


@dataclass
class StateTime:
    runs: int = 0
    total_ms: float = 0.0

    def text(self) -> str:
        if self.runs == 1:
            return f"{self.total_ms:.1f} ms"
        return f"{self.runs} runs, {self.total_ms / self.runs:.1f} ms each"


def read_trace(path: str) -> tuple[dict[str, StateTime], str | None]:
    """State name -> measured time, and the execution's end-to-end time if recorded."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError as exc:
        raise FaastlaneError(f"cannot read --trace {path}: {exc.strerror}") from None
    times: dict[str, StateTime] = {}
    end_to_end = None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FaastlaneError(f"{path}:{number}: not a trace line (JSON): {exc.msg}") from None
        if not isinstance(record, dict):
            raise FaastlaneError(f"{path}:{number}: not a trace record (a JSON object)")
        if record.get("trace") == "faastlane":
            if "end_to_end_ms" in record:
                end_to_end = f"{record['end_to_end_ms']:.1f} ms"
            continue
        if number == 1:
            raise FaastlaneError(f"{path}:1: not a faastlane trace (the file `faastlane run "
                                 f"--trace FILE` writes starts with a \"trace\" header)")
        if record.get("type") in _NOT_STATES or "state" not in record:
            continue
        try:
            took = (float(record["end"]) - float(record["start"])) * 1000
        except (KeyError, TypeError, ValueError):
            raise FaastlaneError(f"{path}:{number}: a state record without numeric "
                                 f"start and end") from None
        measured = times.setdefault(str(record["state"]), StateTime())
        measured.runs += 1
        measured.total_ms += took
    return times, end_to_end
