"""What an earlier run measured, for the planner: ``faastlane compose --profile-from TRACE``.

TRACE is the timeline ``faastlane run --trace FILE`` writes (JSON lines: a header, then
one record per state run and per function call). The planner takes from it each
function's compute time (the median of its calls' ``compute_ms``) and how many jobs each
Map ran (the median over its runs), and weighs a section's jobs on threads against warm
processes with them (:func:`section_costs`). A trace of another workflow is refused,
naming the states this workflow does not have.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from faastlane.errors import FaastlaneError
from faastlane.runtime.asl.model import Machine, Map, Parallel, Task, walk_states

# The vCPUs a section is weighed for when the plan leaves them to the container: two, the
# smallest count that makes warm processes worth weighing (Lambda gives 2 from 1769 MB).
ASSUMED_VCPUS = 2


@dataclass(frozen=True)
class Measured:
    """Per-function compute times and per-Map widths from one trace file."""

    source: str
    compute_ms: dict[str, float]  # function -> median ms of its calls
    widths: dict[str, int]  # Map state name -> median jobs per run

    def job_ms(self, machine: Machine) -> float | None:
        """A branch's or iteration's compute: its Tasks' functions' medians, summed
        (None when a function it calls was not measured)."""
        total = 0.0
        for state in walk_states(machine):
            if isinstance(state, Task) and state.integration is None:
                if state.function is None or state.function not in self.compute_ms:
                    return None
                total += self.compute_ms[state.function]
        return total


def read(path: str, workflow: Machine) -> Measured:
    """The measurements in the trace file ``path`` of a run of ``workflow``."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = [line for line in handle if line.strip()]
    except OSError as exc:
        raise FaastlaneError(f"--profile-from {path}: cannot read it: {exc.strerror}") from None
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FaastlaneError(f"--profile-from {path}: not a trace (`faastlane run "
                                 f"--trace FILE` writes one): line {number}: {exc.msg}"
                                 ) from None
        if not isinstance(record, dict):
            raise FaastlaneError(f"--profile-from {path}: not a trace (`faastlane run "
                                 f"--trace FILE` writes one): line {number} is no object")
        records.append(record)
    if not records or records[0].get("trace") != "faastlane":
        raise FaastlaneError(f"--profile-from {path}: not a trace (`faastlane run --trace "
                             "FILE` writes one)")
    known = {state.name for state in walk_states(workflow)}
    unknown = sorted({str(r["state"]) for r in records[1:] if "state" in r} - known)
    if unknown:
        named = ", ".join(unknown[:10]) + (f" and {len(unknown) - 10} more"
                                           if len(unknown) > 10 else "")
        raise FaastlaneError(f"--profile-from {path}: a trace of another workflow "
                             f"({records[0].get('workflow')!r}): this one has no state "
                             f"{named}")
    calls: dict[str, list[float]] = defaultdict(list)
    for record in records[1:]:
        if record.get("type") == "Function" and record.get("error") is None \
                and isinstance(record.get("compute_ms"), (int, float)):
            calls[str(record["function"])].append(float(record["compute_ms"]))
    return Measured(path, {f: statistics.median(ms) for f, ms in calls.items()},
                    _map_widths(records[1:], workflow))


def _map_widths(records: list[dict[str, Any]], workflow: Machine) -> dict[str, int]:
    """Jobs per run of each Map: the runs of its iteration's first state, per Map run."""
    runs: dict[str, int] = defaultdict(int)
    for record in records:
        if record.get("type") in ("Map", "Parallel", "Task", "Pass", "Choice", "Wait",
                                  "Succeed", "Fail"):
            runs[str(record.get("state"))] += 1
    widths = {}
    for state in walk_states(workflow):
        if isinstance(state, Map) and runs.get(state.name):
            jobs = runs.get(state.iterator.start_at, 0)
            if jobs:
                widths[state.name] = max(1, round(jobs / runs[state.name]))
    return widths


@dataclass(frozen=True)
class SectionCost:
    """A section's jobs weighed: threads of one process against warm processes."""

    jobs: int
    total_ms: float  # every job's compute, summed
    slowest_ms: float  # the slowest job's
    vcpus: int
    handoff_ms: float  # a process hand-off per job (the profiled fork_ms: an upper bound)

    @property
    def threads_ms(self) -> float:
        """On threads the jobs' Python work takes turns on the GIL: their sum."""
        return self.total_ms

    @property
    def processes_ms(self) -> float:
        """On warm processes: rounds of ``vcpus`` jobs, and a hand-off per job."""
        return (math.ceil(self.jobs / self.vcpus) * self.slowest_ms
                + self.jobs * self.handoff_ms)

    def to_json(self) -> dict[str, Any]:
        return {"jobs": self.jobs, "compute_ms": round(self.total_ms, 3),
                "vcpus": self.vcpus, "handoff_ms": self.handoff_ms,
                "threads_ms": round(self.threads_ms, 3),
                "processes_ms": round(self.processes_ms, 3)}


def section_costs(state: Parallel | Map, measured: Measured, vcpus: int,
                  handoff_ms: float) -> SectionCost | None:
    """The section's cost on threads and on processes, or None when the trace did not
    measure every function it calls (or never ran the Map)."""
    machines = state.branches if isinstance(state, Parallel) else (state.iterator,)
    per_job = [measured.job_ms(machine) for machine in machines]
    known = [ms for ms in per_job if ms is not None]
    if len(known) < len(per_job):
        return None
    if isinstance(state, Parallel):
        jobs, total = len(known), sum(known)
    else:
        jobs = measured.widths.get(state.name, 0)
        total = jobs * known[0]
    if not jobs:
        return None
    return SectionCost(jobs, total, max(known), vcpus or ASSUMED_VCPUS, handoff_ms)
