"""Hand-off costs: what it takes to give work to a forked process or to another container.

The planner weighs them (``costs.py``, ``faastlane/plan.py``): a Parallel branch or Map
iteration in a forked child costs a fork, a pipe and a JSON round trip of its result; in
another container it costs a platform invocation and its payload over the network.

- :func:`measure_fork` runs here (and in the probe, wherever it runs): fork a child that
  answers a JSON document over a pipe, small and 1 MB, and wait for it.
- :func:`measure_invoke` times round trips of a given call with a small and a large
  payload (``targets.py`` passes the platform invocation of the probe action).

Each figure is a median of a few repetitions; the per-megabyte costs are the difference
between the large and the small round trip, per MB.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

BIG_BYTES = 1_000_000
INVOKE_BIG_BYTES = 256_000  # under every platform's payload limit
ROUNDS = 15


def _fork_round_trip(payload: str) -> float:
    """Seconds to fork a child that sends ``payload`` as JSON over a pipe, and reap it."""
    began = time.perf_counter()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            data = json.dumps({"value": payload}).encode()
            view = memoryview(data)
            while view:
                view = view[os.write(write, view):]
        finally:
            os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    json.loads(b"".join(chunks))
    os.waitpid(pid, 0)
    return time.perf_counter() - began


def _per_mb(small: float, big: float, size: int) -> float:
    return max(0.0, (big - small) * 1000 / (size / 1e6))


def measure_fork(rounds: int = ROUNDS) -> dict[str, float]:
    """``fork_ms``: one forked job with a tiny result; ``pipe_ms_per_mb``: each MB more."""
    big = "x" * BIG_BYTES
    small_s = statistics.median(_fork_round_trip("") for _ in range(rounds))
    big_s = statistics.median(_fork_round_trip(big) for _ in range(max(3, rounds // 3)))
    return {"fork_ms": round(small_s * 1000, 3),
            "pipe_ms_per_mb": round(_per_mb(small_s, big_s, BIG_BYTES), 3)}


def measure_invoke(call: Callable[[dict[str, Any]], Any], rounds: int = 5
                   ) -> dict[str, float]:
    """``invoke_ms`` and ``transfer_ms_per_mb`` of ``call(params)``, a blocking invocation
    of the probe action with ``{"echo": true, "pad": ...}`` (it answers at once)."""
    def timed(size: int) -> float:
        began = time.perf_counter()
        call({"echo": True, "pad": "x" * size})
        return time.perf_counter() - began

    timed(0)  # a cold start is not a hand-off
    small_s = statistics.median(timed(0) for _ in range(rounds))
    big_s = statistics.median(timed(INVOKE_BIG_BYTES) for _ in range(rounds))
    return {"invoke_ms": round(small_s * 1000, 3),
            "transfer_ms_per_mb": round(_per_mb(small_s, big_s, INVOKE_BIG_BYTES), 3)}


def echo(params: dict[str, Any]) -> dict[str, Any]:
    """The probe's answer to an invocation measurement: as little work as possible."""
    return {"echo": len(params.get("pad") or "")}
