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
           now: Callable[[], float] = time.time) -> tuple[dict[str, Any], bool]:
    """The profile under ``key`` and whether it came from the cache (fresh enough)."""
    path = path or cache_file()
    entries = _load(path)
    entry = entries.get(key)
    if not refresh and isinstance(entry, dict) and \
            now() - float(entry.get("measured_at", 0)) <= max_age:
        return entry, True
    entry = dict(measure(), measured_at=now())
    entries = _load(path)  # another run may have written meanwhile
    entries[key] = entry
    os.makedirs(os.path.dirname(path), exist_ok=True)
    scratch = f"{path}.{os.getpid()}.tmp"
    with open(scratch, "w", encoding="utf-8") as handle:
        json.dump(entries, handle, indent=2, sort_keys=True)
    os.replace(scratch, path)  # readers never see half a file
    return entry, False
