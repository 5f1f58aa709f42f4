"""Threads or warm processes for a section nothing measured at compose time: learned here.

A Parallel/Map the plan could not weigh (compose had no ``--profile-from`` trace) runs on
the Orchestrator's threads first, timed: its wall time and the CPU time this process
spent meanwhile. Jobs that kept one core busy -- the GIL's turns -- and that each compute
longer than a warm process's hand-off might finish sooner on the warm workers, so the
section's next run tries them, timed too; from then on it runs where a job cost less,
and keeps timing it there. Short jobs (FINRA's audit rules, about a millisecond) never
leave the threads; long CPU-bound ones move to processes after one run. What is learned
lives as long as this container, as a warm Lambda container's caches do.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from ..options import PROCESSES, THREADS

T = TypeVar("T")

# Jobs whose CPU time over the section is at least this share of its wall time kept one
# core busy (the GIL's turns, or more where they release it): worth trying on processes.
_GIL_BOUND = 0.75


@dataclass
class _Seen:
    threads_ms: float | None = None  # wall ms per job on threads
    processes_ms: float | None = None  # wall ms per job on warm processes
    worth_trying: bool = False  # CPU-bound jobs longer than a hand-off


_SEEN: dict[str, _Seen] = {}
_LOCK = threading.Lock()


def choose(key: str) -> str:
    """Where the section with plan key ``key`` runs now: ``THREADS`` or ``PROCESSES``."""
    with _LOCK:
        seen = _SEEN.get(key)
    if seen is None or seen.threads_ms is None:
        return THREADS
    if seen.processes_ms is None:
        return PROCESSES if seen.worth_trying else THREADS
    return PROCESSES if seen.processes_ms < seen.threads_ms else THREADS


def timed(key: str, where: str, jobs: int, workers: int, handoff_ms: float,
          run: Callable[[], T]) -> T:
    """``run()`` the section's ``jobs`` at ``where`` and learn from its times."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    learn(key, where, jobs, workers, handoff_ms, wall * 1000, cpu * 1000)
    return result


def learn(key: str, where: str, jobs: int, workers: int, handoff_ms: float,
          wall_ms: float, cpu_ms: float) -> None:
    """Remember one run: ``wall_ms`` for ``jobs`` at ``where``; ``cpu_ms`` this process
    spent meanwhile (on threads: the jobs' compute)."""
    if jobs < 1:
        return
    per_job = wall_ms / jobs
    with _LOCK:
        seen = _SEEN.setdefault(key, _Seen())
        if where == PROCESSES:
            seen.processes_ms = _average(seen.processes_ms, per_job)
            return
        seen.threads_ms = _average(seen.threads_ms, per_job)
        # Processes can only help jobs the GIL serialised, with cores to spread them
        # on, each computing longer than the hand-off that moves it.
        seen.worth_trying = (jobs > 1 and workers > 1 and cpu_ms >= _GIL_BOUND * wall_ms
                             and cpu_ms / jobs > handoff_ms)


def _average(known: float | None, measured: float) -> float:
    return measured if known is None else (known + measured) / 2


def forget() -> None:
    """Forget every section (a test's fresh container)."""
    with _LOCK:
        _SEEN.clear()
