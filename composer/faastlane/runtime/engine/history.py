"""The execution history behind ``--history``: the events Step Functions records.

Events have GetExecutionHistory's shape (``{"timestamp", "type", "id",
"previousEventId", "<type>EventDetails": {...}}``) and are numbered and linked as AWS
links them (LocalStack's AWS-recorded snapshot tests are the ground truth): ids from 1 in
the order they happen; ``previousEventId`` is the last *linking* event of the same
(sub-)machine run. ``ExecutionStarted``, ``MapIterationSucceeded``/``Failed``,
``MapStateSucceeded`` and ``ParallelStateSucceeded`` do not link: the event after them
points past them. A Parallel branch or Map iteration starts from its state's last event
and, when the section ends, the state goes on from its branches' latest event (a Map
from its last iteration's closing event).

Ids are always counted (``Execution.emit``): error causes cite them ("entered at the
event id #N"). Event objects are built only when :func:`enable` was called (the
execution's ``events`` list is then not None): one attribute read per event otherwise.

Branches and iterations number their events from the section's start, each as if it
ran alone; :func:`merge` lays them out one after the other in index order (as AWS
recorded inline Maps) and renumbers them. A job that ran in another process (a fork, a
warm pool worker) sends its events and count back in its trace records, as trace
records come back.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ..asl.jsonvalue import compact_json
from . import trace

enabled = False
NOT_TRUNCATED = {"truncated": False}
_JOB = "history_job"  # the key of the trace record that carries a job's events back


def enable() -> None:
    global enabled
    enabled = True


def timestamp() -> str:
    """Now, as the AWS CLI prints history timestamps."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def data(value: Any) -> str:
    """A state's input or output as the history holds it: JSON text."""
    return compact_json(value)


class JobEvents:
    """What one branch or iteration numbered: its events (None: history off), how many
    ids it used, and its last linking event."""

    __slots__ = ("events", "count", "source")

    def __init__(self, events: list[dict[str, Any]] | None, count: int, source: int) -> None:
        self.events, self.count, self.source = events, count, source


def finish_job(execution: Any, owner_pid: int) -> None:
    """At a job's end: when it ran in another process than the one that will merge it,
    send its numbering back with the trace records (forking.py, forkpool.py)."""
    if os.getpid() == owner_pid:
        return  # a thread of the merging process: merge() reads the execution itself
    trace.keep({_JOB: True, "events": execution.events, "count": execution.used_ids(),
                "source": execution.source})


def job_events(records: list[dict[str, Any]]) -> JobEvents | None:
    """Take a job's numbering out of the trace records its process sent back."""
    for i, record in enumerate(records):
        if record.get(_JOB):
            del records[i]
            return JobEvents(record.get("events"), int(record["count"]), int(record["source"]))
    return None


def carried(record: dict[str, Any]) -> bool:
    """Whether a trace record is a job's history numbering, not a timeline record."""
    return _JOB in record


_CITED = re.compile(r"\(entered at the event id #(\d+)\)")


def merge(parent: Any, base: int, jobs: Sequence[JobEvents | None], is_map: bool,
          succeeded: bool) -> list[int]:
    """Lay the jobs' events out after the section's start, one job after the other, into
    ``parent`` (its ids and link move past them); the offset of each job's ids."""
    offsets = []
    offset = 0
    previous_source = parent.source
    last_source = parent.source
    last_event = parent.source
    for job in jobs:
        offsets.append(offset)
        if job is None:
            continue

        def moved(event_id: int, by: int = offset) -> int:
            return event_id + by if event_id >= base else event_id

        if job.events is not None and parent.events is not None:
            for n, event in enumerate(job.events):
                event["id"] = moved(event["id"])
                if is_map and n == 0 and event["type"] == "MapIterationStarted":
                    # An iteration starts where the one before it left off (AWS runs
                    # them one after the other on a worker).
                    event["previousEventId"] = previous_source
                else:
                    event["previousEventId"] = moved(event["previousEventId"])
                parent.events.append(event)
            if job.events:
                last_event = job.events[-1]["id"]
        source = moved(job.source)
        previous_source = source
        last_source = max(last_source, source)
        offset += job.count
    parent.skip_ids(offset)
    if is_map and succeeded and parent.events is not None:
        parent.source = last_event  # the last MapIterationSucceeded (see module doc)
    elif is_map and succeeded:
        parent.source = base + offset - 1 if offset else parent.source
    else:
        parent.source = last_source
    return offsets


def recite(cause: str | None, base: int, offset: int) -> str | None:
    """A cause that cites an event id of a job, with the id it has after :func:`merge`."""
    if not cause or not offset:
        return cause
    return _CITED.sub(lambda m: f"(entered at the event id "
                                f"#{int(m[1]) + offset if int(m[1]) >= base else m[1]})",
                      cause, count=1)


def started(execution: Any, execution_input: Any) -> None:
    """ExecutionStarted, id 1 (a run's ids are counted from 2 on: ``Execution``)."""
    if execution.events is not None:
        execution.events.insert(0, {
            "timestamp": timestamp(), "type": "ExecutionStarted", "id": 1,
            "previousEventId": 0, "executionStartedEventDetails": {
                "input": data(execution_input), "inputDetails": NOT_TRUNCATED,
                "roleArn": execution.context_base["Execution"]["RoleArn"]}})


def given_input(events: list[dict[str, Any]], text: str) -> None:
    """The execution input as given (``--input`` text), as AWS keeps it: in
    ExecutionStarted, and in the first state's entry, which gets it unchanged (LocalStack's
    test_map_state_config_inline_parameters: ``["Hello", "World"]`` kept with its space)."""
    if not events or events[0]["type"] != "ExecutionStarted":
        return
    started = events[0]["executionStartedEventDetails"]
    same = started["input"]
    started["input"] = text
    first = events[1].get("stateEnteredEventDetails") if len(events) > 1 else None
    if first is not None and first["input"] == same:
        first["input"] = text


def ended(execution: Any, output: Any = None, error: Any = None) -> None:
    """ExecutionSucceeded, ExecutionFailed or (the workflow's TimeoutSeconds)
    ExecutionTimedOut."""
    if execution.events is None:
        return
    if error is None:
        execution.emit("ExecutionSucceeded", {"executionSucceededEventDetails": {
            "output": data(output), "outputDetails": NOT_TRUNCATED}})
        return
    kind = "ExecutionTimedOut" if type(error).__name__ == "ExecutionTimedOut" else \
        "ExecutionFailed"
    details = {key: value for key, value in (("error", error.error), ("cause", error.cause))
               if value is not None}
    execution.emit(kind, {f"e{kind[1:]}EventDetails": details})


def write(path: str, events: list[dict[str, Any]]) -> None:
    """The history as GetExecutionHistory returns it, events in id order."""
    with open(path, "w", encoding="utf-8") as stream:
        json.dump({"events": sorted(events, key=lambda e: e["id"])}, stream, indent=1)
        stream.write("\n")
