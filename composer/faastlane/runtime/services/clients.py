"""boto3 clients for the Orchestrator's service calls: imported on first use, cached.

boto3 is the one import of the runtime outside the standard library, and only a workflow
with a service integration makes it: on Lambda it is part of the Python runtime;
elsewhere an action that needs it must ship it. Without it a call fails with a clear
``States.Runtime`` error, not an ImportError.

Clients are made from the Orchestrator's own environment (credentials, region, and the
endpoint boto3 reads itself from ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_<SERVICE>``),
never a function's: service calls run on the Orchestrator's threads. One client per
service and process, shared by its threads (boto3's clients are thread-safe, its
sessions are not: clients are made under a lock); a forked worker makes its own, never
using its parent's connections. :func:`warm` makes them when the action loads, as a
warm container would have them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from typing import Any

from ..asl.errors import RUNTIME, StatesError

DEFAULT_REGION = "us-east-1"  # when nothing configures one (as lambda_context.REGION)

_lock = threading.Lock()
_made: dict[str, Any] = {}
_state: dict[str, Any] = {"pid": None, "session": None}


def _forked() -> None:
    global _lock
    _lock = threading.Lock()  # another thread may have held it when this process forked


os.register_at_fork(after_in_child=_forked)


def boto3_module(state_name: str, resource: str) -> Any:
    """boto3, or the error that says it is missing."""
    try:
        import boto3
    except ImportError:
        raise StatesError(RUNTIME, f"The Task state '{state_name}' calls {resource}, which "
                                   "needs boto3 (the AWS SDK for Python): Lambda's Python "
                                   "runtime has it; elsewhere install boto3 where the action "
                                   "runs (pip install boto3)") from None
    return boto3


def client(service: str, state_name: str, resource: str) -> Any:
    """This process's client of ``service`` (a boto3 client name)."""
    made = _made.get(service) if _state["pid"] == os.getpid() else None
    if made is not None:
        return made
    with _lock:
        if _state["pid"] != os.getpid():
            _made.clear()
            _state.update(pid=os.getpid(), session=None)
        made = _made.get(service)
        if made is None:
            if _state["session"] is None:
                _state["session"] = boto3_module(state_name, resource).session.Session()
            session = _state["session"]
            made = session.client(service, region_name=session.region_name or DEFAULT_REGION)
            _made[service] = made
    return made


def warm(services: Iterable[str]) -> None:
    """Import boto3 and make the clients of ``services`` now, if boto3 is there (if not,
    the first call says so)."""
    try:
        for service in services:
            client(service, "", "")
    except Exception:  # noqa: BLE001 - no boto3, a bad configuration: the call says so
        pass


def operation_model(api: Any, operation: str) -> Any:
    """The botocore model of ``api``'s snake_case ``operation``, or None."""
    name = api.meta.method_to_api_mapping.get(operation)
    return None if name is None else api.meta.service_model.operation_model(name)
