"""How the platforms call a composed action, and how its result goes back to them.

OpenWhisk loads ``__main__.py`` and calls ``main(params)``: the result must be a JSON
object, and an ``{"error": ...}`` object marks an application error. Lambda calls
``handler(event, context)``: a return value is the result, and a raised exception is
reported with ``errorType`` = the exception's class name, which for a failed workflow is
the ASL error name.
"""

from __future__ import annotations

import os
from typing import Any

from ..orchestrator import SUCCEEDED, Orchestrator
from ..parallel.serve import is_group_request, serve_group


def openwhisk_main(orchestrator: Orchestrator, params: Any) -> dict[str, Any]:
    """OpenWhisk's ``main(params)``: the workflow output, or ``{"error": {...}}``.

    The activation id (``__OW_ACTIVATION_ID``, set by the action container for each
    activation) names the execution, as the request id does on Lambda.
    """
    if is_group_request(params):  # a copy of this action spilled branches to this one
        return serve_group(orchestrator, params)
    result = orchestrator.execute(params, execution_name=os.environ.get("__OW_ACTIVATION_ID"))
    if result.status != SUCCEEDED:
        return {"error": {"Error": result.error, "Cause": result.cause}}
    if isinstance(result.output, dict):
        return result.output
    # OpenWhisk requires a JSON object as an action's result.
    return {"output": result.output}


class WorkflowFailed(Exception):
    """Base of the exceptions that carry a failed workflow's error to Lambda."""


def lambda_handler(orchestrator: Orchestrator, event: Any, context: Any) -> Any:
    """Lambda's ``handler(event, context)``: the output, or raise the workflow's error."""
    if is_group_request(event):
        return serve_group(orchestrator, event)
    result = orchestrator.execute(event, execution_name=getattr(context, "aws_request_id", None))
    if result.status == SUCCEEDED:
        return result.output
    # Lambda reports errorType as the exception's class name: name it after the ASL error.
    error_class = type(str(result.error), (WorkflowFailed,), {})
    raise error_class(result.cause)
