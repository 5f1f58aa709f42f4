"""Fails its first 2 calls in an execution, counting calls in a scratch file."""
import json
import time
from pathlib import Path


class TransientError(Exception):
    pass


def _record(scratch):
    log = Path(scratch) / "calls.json"
    calls = json.loads(log.read_text()) if log.exists() else []
    calls.append(time.time())
    log.write_text(json.dumps(calls))
    return calls


def handler(event, context):
    calls = _record(event["scratch"])
    if len(calls) <= 2:
        raise TransientError(f"call {len(calls)} fails")
    gaps = [b - a for a, b in zip(calls, calls[1:])]
    return {"attempts": len(calls), "gap1AtLeastInterval": gaps[0] >= 0.9,
            "gap2Backoff": gaps[1] >= 1.9, "gap2Capped": gaps[1] < 2.5}
