"""The per-state timeline behind ``--trace``.

One record per state execution (and per function attempt): which state, which function,
wall-clock start and end (``time.time()``, comparable across forked processes), the
process and thread that ran it, where it was placed, and the function's own compute time
as measured around the handler call. The benchmarks derive function-interaction latency
from it: end-to-end time minus the sum of compute spans.

Recording is off unless :func:`enable` was called; callers on the hand-off's path check
``enabled`` before building a record, so a disabled tracer costs one attribute read.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, TextIO

_lock = threading.Lock()
_records: list[dict[str, Any]] = []
enabled = False
_pid = os.getpid()  # a system call per record otherwise (~1 us here); forks refresh it


def _forked() -> None:
    global _pid, _lock
    _pid = os.getpid()
    # A function's thread (which records too) may have held it when another thread forked.
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forked)


def enable() -> None:
    global enabled
    enabled = True


def record(**fields: Any) -> None:
    """Append one record (``state``, ``type``, ``start``, ``end``, ...) if tracing."""
    if not enabled:
        return
    fields["pid"] = _pid
    fields["thread"] = threading.get_ident()
    with _lock:
        _records.append(fields)


def keep(fields: dict[str, Any]) -> None:
    """Append one record whether or not tracing: what a forked job must send back to
    its parent with its trace records (``history.finish_job``)."""
    with _lock:
        _records.append(fields)


def extend(records: list[dict[str, Any]]) -> None:
    """Adopt records made in a forked child."""
    if enabled and records:
        with _lock:
            _records.extend(records)


def take() -> list[dict[str, Any]]:
    """Remove and return everything recorded so far."""
    with _lock:
        taken = list(_records)
        _records.clear()
    return taken


def forget() -> None:
    """Drop records inherited across a fork."""
    with _lock:
        _records.clear()


def now() -> float:
    return time.time()


def write(stream: TextIO, execution: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """Print the timeline: a header line, then one JSON line per record, by start time."""
    start = min((r["start"] for r in records), default=execution.get("start", 0.0))
    stream.write(json.dumps({"trace": "faastlane", **execution}) + "\n")
    for rec in sorted(records, key=lambda r: r["start"]):
        line = dict(rec)
        line["start_ms"] = round((rec["start"] - start) * 1000, 3)
        line["end_ms"] = round((rec["end"] - start) * 1000, 3)
        stream.write(json.dumps(line) + "\n")
    stream.flush()
