"""Fails its first 1 calls in an execution, counting calls in a scratch file."""
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
    if len(calls) <= 1:
        raise TransientError(f"call {len(calls)} fails")
    return {"attempts": len(calls), "retryCount": event.get("retry")}
