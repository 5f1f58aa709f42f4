"""Fails its first FAILS calls in an execution, counting them in the harness's call log.

One file for every Retry case that uses it: the harness writes it into the case's app
with the case's own settings (its ``shared_functions.json``) in place of the defaults
below (cases.py, ``materialize``).
"""
import json
import socket
from itertools import pairwise

# Settings (each case's shared_functions.json replaces these lines).
FAILS = 1  # how many calls fail before one succeeds
ERROR = "TransientError"  # the exception raised: "TransientError" or "KeyError"
RETURNS = "retryCount"  # "retryCount": the event's "retry"; "gaps": the waits it saw


class TransientError(Exception):
    pass


def _record(scratch):
    # The harness's call log (tests/conformance/call_log.py): a service both this
    # function and count.py reach, whichever process or sandbox each runs in.
    name, key = scratch.split("#")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as log:
        log.connect("\0" + name)
        log.sendall(f"append {key}\n".encode())
        answer = b""
        while chunk := log.recv(65536):
            answer += chunk
    return json.loads(answer)


def handler(event, context):
    calls = _record(event["scratch"])
    if len(calls) <= FAILS:
        raise {"TransientError": TransientError, "KeyError": KeyError}[ERROR](
            f"call {len(calls)} fails")
    if RETURNS == "gaps":
        gaps = [b - a for a, b in pairwise(calls)]
        return {"attempts": len(calls), "gap1AtLeastInterval": gaps[0] >= 0.9,
                "gap2Backoff": gaps[1] >= 1.9, "gap2Capped": gaps[1] < 2.5}
    return {"attempts": len(calls), "retryCount": event.get("retry")}
