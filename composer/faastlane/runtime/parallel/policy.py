"""What pays: how many containers finish a parallel section soonest.

The plan's measured hand-off costs (``faastlane profile``, written into plan.json by
``faastlane compose``) and what this container has observed itself -- how long a round
of a state's jobs takes here, and what sending a group really cost -- decide whether a
section wider than the vCPUs spills, and to how many copies.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from typing import Any

SPILL_ENV = "FAASTLANE_SPILL"  # "auto" (default): only containers that pay; "always"
ALWAYS = "always"
# The plan written beside this package by `faastlane compose` (absent when run from source).
PLAN_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "plan.json")
# An invocation's cost when the plan carries no profiled figure (compose.costs' defaults).
DEFAULT_INVOKE_MS, DEFAULT_TRANSFER_MS_PER_MB = 40.0, 20.0
_ROUND_MS: dict[str, float] = {}  # plan key -> ms one round of its jobs took here
_INVOKE_MS: dict[str, float] = {}  # plan key -> ms a remote group cost beyond its rounds
_HANDOFF: dict[str, dict[str, Any]] | None = None
_ACTIVATIONS = 0  # executions and groups this process has run: after one, it is warm


def plan_handoff(path: str = PLAN_FILE) -> dict[str, dict[str, Any]]:
    """Plan key -> the measured hand-off costs plan.json recorded for that state."""
    global _HANDOFF
    if _HANDOFF is None or path != PLAN_FILE:
        try:
            with open(path, encoding="utf-8") as handle:
                states = json.load(handle).get("states", {})
        except (OSError, ValueError):
            states = {}
        found = {k: v["handoff"] for k, v in states.items()
                 if isinstance(v, dict) and isinstance(v.get("handoff"), dict)}
        if path != PLAN_FILE:
            return found
        _HANDOFF = found
    return _HANDOFF


def choose_containers(count: int, workers: int, most: int, round_ms: float,
                      handoff: dict[str, Any], group_bytes: Callable[[int], int]
                      ) -> tuple[int, dict[int, float]]:
    """How many containers (1..``most``) finish ``count`` jobs soonest, and the estimates.

    One container: ``ceil(count / workers)`` rounds of ``round_ms``. ``c`` containers:
    the rounds of a group of ``ceil(count / c)`` plus what sending a group costs, one
    invocation and its input (``group_bytes(jobs)``) at the measured rate. Ties go to
    fewer containers.
    """
    invoke_ms = float(handoff.get("invoke_ms", DEFAULT_INVOKE_MS))
    per_mb = float(handoff.get("transfer_ms_per_mb", DEFAULT_TRANSFER_MS_PER_MB))
    estimates = {1: math.ceil(count / workers) * round_ms}
    for containers in range(2, most + 1):
        jobs = math.ceil(count / containers)
        estimates[containers] = (math.ceil(jobs / workers) * round_ms + invoke_ms
                                 + per_mb * group_bytes(jobs) / 1e6)
    best = min(estimates, key=lambda c: (estimates[c], c))
    return best, {c: round(ms, 3) for c, ms in estimates.items()}


def learn_round(key: str, seconds: float, jobs: int, workers: int) -> None:
    """Remember how long a round of this state's jobs takes in this container."""
    measured = seconds * 1000 / max(1, math.ceil(jobs / max(1, workers)))
    known = _ROUND_MS.get(key)
    _ROUND_MS[key] = measured if known is None else (known + measured) / 2


def learn_invoke(key: str, seconds: float | None, jobs: int, workers: int) -> None:
    """Remember what sending a group of this state really cost from this container: its
    wall time beyond its rounds at this container's round time (the invocation, the
    queueing, a slower or busier copy). It replaces the profile's ``invoke_ms``."""
    round_ms = _ROUND_MS.get(key)
    if seconds is None or round_ms is None:
        return
    measured = max(0.0, seconds * 1000 - math.ceil(jobs / max(1, workers)) * round_ms)
    known = _INVOKE_MS.get(key)
    _INVOKE_MS[key] = measured if known is None else (known + measured) / 2


def round_ms(key: str) -> float | None:
    """How long a round of this state's jobs took here (None before the first)."""
    return _ROUND_MS.get(key)


def observed_invoke_ms(key: str) -> float | None:
    """What sending a group of this state cost from here, when observed."""
    return _INVOKE_MS.get(key)


def count_activation() -> None:
    """One more execution or group run by this process: after one, it is warm."""
    global _ACTIVATIONS
    _ACTIVATIONS += 1


def warm() -> bool:
    return _ACTIVATIONS > 1
