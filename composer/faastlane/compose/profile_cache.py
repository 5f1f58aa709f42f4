"""Profiles kept per target and memory size, re-measured when stale.

A platform's CPUs change slowly (instance types, quota policy), so the paper re-profiles
about daily: an entry older than ``max_age`` seconds is measured again. The file is
``$FAASTLANE_CACHE/profiles.json`` (default ``~/.cache/faastlane``), one JSON object keyed
``TARGET[/NAME]@MEMORY``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

from faastlane.cache import cache_root

DAY = 24 * 3600


# Share of the CPUs' time other work may take while the CPUs are measured.
BUSY_SHARE = 0.5


def _cpu_times() -> tuple[int, int] | None:
    """(idle, total) clock ticks of all CPUs so far, from /proc/stat (None: not Linux)."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return fields[3] + (fields[4] if len(fields) > 4 else 0), sum(fields[:8])


def busy(seconds: float = 0.25) -> str | None:
    """Why this machine is too busy to measure its CPUs now (None: quiet enough): the
    share of the CPUs' time other processes took over ``seconds`` (this one sleeps)."""
    before = _cpu_times()
    time.sleep(seconds)
    after = _cpu_times()
    if before is None or after is None or after[1] <= before[1]:
        return None
    taken = 1 - (after[0] - before[0]) / (after[1] - before[1])
    if taken > BUSY_SHARE:
        return f"other work took {taken:.0%} of the CPUs' time"
    return None


def cache_file() -> str:
    return os.path.join(cache_root(), "profiles.json")


def cache_key(target: str, memory_mb: int | None, name: str | None = None) -> str:
    return f"{target}{'/' + name if name else ''}@{memory_mb or 'default'}"


def _load(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def read_all(path: str | None = None) -> dict[str, Any]:
    """Every cached profile, by key ({} when there is no cache)."""
    return _load(path or cache_file())


def cached(key: str, measure: Callable[[], dict[str, Any]], max_age: float = DAY,
           refresh: bool = False, path: str | None = None,
           now: Callable[[], float] = time.time,
           quiet: Callable[[], str | None] = busy) -> tuple[dict[str, Any], bool]:
    """The profile under ``key`` and whether it came from the cache (fresh enough). A
    profile measured while ``quiet`` says the machine was busy (before or after) is
    returned with ``busy`` saying so, and not cached."""
    path = path or cache_file()
    entries = _load(path)
    entry = entries.get(key)
    if not refresh and isinstance(entry, dict) and \
            now() - float(entry.get("measured_at", 0)) <= max_age:
        return entry, True
    busy_before = quiet()
    entry = dict(measure(), measured_at=now())
    said = busy_before or quiet()
    if said is not None:
        # Other work shared the CPUs: the scaling measured is the machine's load as much
        # as its vCPUs. Used for this answer, never kept as the truth for a day.
        entry["busy"] = said
        return entry, False
    entries = _load(path)  # another run may have written meanwhile
    entries[key] = entry
    os.makedirs(os.path.dirname(path), exist_ok=True)
    scratch = f"{path}.{os.getpid()}.tmp"
    with open(scratch, "w", encoding="utf-8") as handle:
        json.dump(entries, handle, indent=2, sort_keys=True)
    os.replace(scratch, path)  # readers never see half a file
    return entry, False
