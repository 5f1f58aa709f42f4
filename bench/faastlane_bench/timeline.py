"""From per-function spans to the paper's latency breakdown.

An execution is ``[start, end]`` wall-clock time. Functions' compute spans (measured
around each handler call) and external spans (botocore calls inside handlers) may
overlap, across parallel branches. Everything is measured as *covered time*, the length
of a union of intervals, so parallel work is not counted twice:

- busy      = time during which at least one function was running;
- external  = time during which at least one function waited on an external service;
- compute   = busy - external;
- interaction = end-to-end - busy: the time no function was running at all, spent
  handing state from one function to the next (threads, forks, pipes, HTTP, JSON, S3).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Span:
    function: str
    start: float
    end: float


@dataclass(frozen=True)
class Breakdown:
    end_to_end_ms: float
    compute_ms: float
    external_ms: float
    interaction_ms: float


def covered(intervals: Iterable[tuple[float, float]], lo: float, hi: float) -> float:
    """Length of the union of ``intervals`` clipped to ``[lo, hi]``."""
    total, reach = 0.0, lo
    for start, end in sorted(intervals):
        start, end = max(start, reach), min(end, hi)
        if end > start:
            total += end - start
            reach = end
    return total


def breakdown(start: float, end: float, spans: Sequence[Span],
              external: Sequence[tuple[float, float]]) -> Breakdown:
    busy = covered(((s.start, s.end) for s in spans), start, end)
    waited = covered(external, start, end)
    return Breakdown(end_to_end_ms=(end - start) * 1000, compute_ms=(busy - waited) * 1000,
                     external_ms=waited * 1000, interaction_ms=(end - start - busy) * 1000)


def handoffs(start: float, spans: Sequence[Span]) -> list[tuple[str, float]]:
    """One ``("A -> B", gap_ms)`` per function call: the gap since the latest-ending span
    that ended before it began (the hand-off that fed it); the first call's gap is from
    the execution's start (``"start -> A"``)."""
    ordered = sorted(spans, key=lambda s: s.start)
    edges: list[tuple[str, float]] = []
    for index, span in enumerate(ordered):
        before = [s for s in ordered[:index] if s.end <= span.start]
        if before:
            previous = max(before, key=lambda s: s.end)
            edges.append((f"{previous.function} -> {span.function}",
                          (span.start - previous.end) * 1000))
        else:
            edges.append((f"start -> {span.function}", (span.start - start) * 1000))
    return edges


def group_handoffs(edges: Iterable[tuple[str, float]]) -> dict[str, list[float]]:
    grouped: dict[str, list[float]] = defaultdict(list)
    for name, gap in edges:
        grouped[name].append(gap)
    return dict(grouped)


def spans_from_records(records: Iterable[dict[str, Any]]) -> list[Span]:
    """Function spans from Faastlane's trace records (``type == "Function"``)."""
    return [Span(r["function"], r["start"], r["start"] + r["compute_ms"] / 1000)
            for r in records if r.get("type") == "Function"]
