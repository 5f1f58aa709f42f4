"""boto3 clients for the Orchestrator's service calls: imported on first use, cached.

boto3 is the one import of the runtime outside the standard library, and only a workflow
with a service integration makes it: on Lambda it is part of the Python runtime;
elsewhere an action that needs it must ship it. Without it a call fails with a clear
``States.Runtime`` error, not an ImportError.

Clients are made from the Orchestrator's own environment (credentials, region, and the
endpoint boto3 reads itself from ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_<SERVICE>``),
never a function's: service calls run on the Orchestrator's threads. One client per
service, process and thread: a boto3 session is not thread-safe, and a forked worker
must not share its parent's connections.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from ..asl.errors import RUNTIME, StatesError

DEFAULT_REGION = "us-east-1"  # when nothing configures one (as lambda_context.REGION)


class _PerThread(threading.local):
    pid: int = -1
    session: Any = None
    clients: dict[str, Any]


_LOCAL = _PerThread()


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
    """This thread's client of ``service`` (a boto3 client name)."""
    local = _LOCAL
    if local.pid != os.getpid():
        local.pid, local.session, local.clients = os.getpid(), None, {}
    made = local.clients.get(service)
    if made is None:
        if local.session is None:
            local.session = boto3_module(state_name, resource).session.Session()
        region = local.session.region_name or DEFAULT_REGION
        made = local.session.client(service, region_name=region)
        local.clients[service] = made
    return made


def operation_model(api: Any, operation: str) -> Any:
    """The botocore model of ``api``'s snake_case ``operation``, or None."""
    name = api.meta.method_to_api_mapping.get(operation)
    return None if name is None else api.meta.service_model.operation_model(name)
