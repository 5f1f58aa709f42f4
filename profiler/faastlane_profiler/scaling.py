"""vCPU inference: a compute-bound micro-benchmark with 1, 2, 3, ... processes.

The platform may not say how many CPUs a container really gets: Lambda scales CPU with
memory while showing more CPUs than it pays for; Docker and OpenWhisk cap time with CFS
quotas. So the probe measures: k forked processes each run the same pure-Python loop,
and the throughput (loops per second, all processes together) is recorded for each k.
The usable parallelism is the *knee*: the last k whose extra process still adds a real
fraction of one process's throughput. Past it, processes only share the same CPU time.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

# An extra process must add at least this fraction of one process's throughput to count
# as another usable vCPU (a half CPU from a 1.5-CPU quota still counts).
MIN_GAIN = 0.3


def spin(loops: int) -> int:
    """The unit of work: pure Python, no memory traffic, no system calls."""
    total = 0
    for i in range(loops):
        total += i * i % 7
    return total


def calibrate(target_seconds: float) -> int:
    """Loops that take about ``target_seconds`` in one process here."""
    loops = 10_000
    while True:
        began = time.perf_counter()
        spin(loops)
        took = time.perf_counter() - began
        if took >= target_seconds / 4:
            return max(1, int(loops * target_seconds / took))
        loops *= 4


def run_processes(count: int, loops: int) -> float:
    """Wall seconds for ``count`` forked processes to each spin ``loops`` times."""
    began = time.perf_counter()
    children = []
    for _ in range(count):
        pid = os.fork()
        if pid == 0:
            try:
                spin(loops)
            finally:
                os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
    return time.perf_counter() - began


@dataclass(frozen=True)
class Scaling:
    loops: int
    seconds: dict[int, float]  # processes -> best wall time

    def throughput(self) -> dict[int, float]:
        """Processes -> throughput relative to one process."""
        one = self.seconds[1]
        return {k: k * one / s for k, s in sorted(self.seconds.items())}


def measure(max_processes: int, target_seconds: float = 0.1, repeats: int = 2) -> Scaling:
    """Time 1..max_processes processes (the best of ``repeats`` runs each)."""
    loops = calibrate(target_seconds)
    seconds = {}
    for count in range(1, max_processes + 1):
        seconds[count] = min(run_processes(count, loops) for _ in range(repeats))
    return Scaling(loops, seconds)


def knee(throughput: dict[int, float], min_gain: float = MIN_GAIN) -> int:
    """The usable parallelism: the last process count, going up from 1, whose extra
    process added at least ``min_gain`` of one process's throughput."""
    counts = sorted(throughput)
    best = counts[0] if counts else 1
    for previous, current in zip(counts, counts[1:], strict=False):  # adjacent pairs
        if throughput[current] - throughput[previous] < min_gain * (current - previous):
            break
        best = current
    return best
