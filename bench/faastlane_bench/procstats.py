"""Page faults and resident memory of a process tree, from /proc (Linux).

A system under test is a tree: a worker and whatever it started (forked branches,
action servers and their launchers). Minor faults are counted with ``cminflt`` so that
children already waited for (Faastlane's forked branches) are included. Peak memory is
the sum of every live process's high-water mark (``VmHWM``): the memory the deployment
occupied at once, all its containers together.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class TreeStats:
    minor_faults: int
    major_faults: int
    peak_rss_kb: int
    processes: int


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            text = handle.read()
    except OSError:
        return None
    # The command name may hold spaces: fields start after its closing parenthesis.
    return text[text.rindex(")") + 2:].split()


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task") if os.path.isdir(f"/proc/{pid}/task") else []:
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as handle:
                found.extend(int(p) for p in handle.read().split())
        except OSError:
            continue
    return found


def tree(pid: int) -> list[int]:
    """``pid`` and all its live descendants."""
    pids, index = [pid], 0
    while index < len(pids):
        pids.extend(_children(pids[index]))
        index += 1
    return pids


def peak_rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_stats(pid: int) -> TreeStats:
    minor = major = peak = count = 0
    for member in tree(pid):
        fields = _stat_fields(member)
        if fields is None:
            continue
        # After the name: state(0) ppid(1) ... minflt(7) cminflt(8) majflt(9) cmajflt(10)
        minor += int(fields[7]) + int(fields[8])
        major += int(fields[9]) + int(fields[10])
        peak += peak_rss_kb(member)
        count += 1
    return TreeStats(minor, major, peak, count)
