"""The measured time of each state, from the timeline ``faastlane run --trace FILE`` writes
(``runtime/engine/trace.py``: a header line, then one JSON line per record), or from a
Step Functions execution history (``aws stepfunctions get-execution-history``: ``{"events":
[...]}``, each state's ``...StateEntered`` and ``...StateExited`` events), so that a run
on AWS can be drawn on the same picture."""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from typing import Any

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
    history = _history(path, "\n".join(lines))
    if history is not None:
        return history
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


def _instant(path: str, event: dict[str, Any]) -> float:
    stamp = event.get("timestamp")
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        return float(stamp)
    try:
        return datetime.fromisoformat(str(stamp)).timestamp()
    except ValueError:
        raise FaastlaneError(f"{path}: event {event.get('id')}: timestamp {stamp!r} is not "
                             f"a time") from None


def _history(path: str, text: str) -> tuple[dict[str, StateTime], str | None] | None:
    """A Step Functions execution history's state times; None if ``text`` is not one."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(document, dict) or not isinstance(document.get("events"), list):
        return None
    times: dict[str, StateTime] = {}
    entered: dict[str, deque[float]] = {}
    instants = []
    for event in document["events"]:
        if not isinstance(event, dict):
            raise FaastlaneError(f"{path}: /events: an event is not a JSON object")
        kind = str(event.get("type", ""))
        at = _instant(path, event)
        instants.append(at)
        if kind.endswith("StateEntered"):
            name = event.get("stateEnteredEventDetails", {}).get("name")
            entered.setdefault(str(name), deque()).append(at)
        elif kind.endswith("StateExited"):
            name = str(event.get("stateExitedEventDetails", {}).get("name"))
            if entered.get(name):  # iterations of a Map exit in the order they entered
                measured = times.setdefault(name, StateTime())
                measured.runs += 1
                measured.total_ms += (at - entered[name].popleft()) * 1000
    end_to_end = (f"{(max(instants) - min(instants)) * 1000:.1f} ms" if instants else None)
    return times, end_to_end
