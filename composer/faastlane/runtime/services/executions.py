"""``arn:aws:states:::states:startExecution``: another state machine of the same workflow
(template), run in-process as a child execution.

The composed action carries the definitions of its template's other state machines in
``state_machines.json`` beside ``orchestrator.py``: one JSON object, each key a state
machine's name or ARN, each value its (validated) ASL definition::

    {"ProcessOrder": {"StartAt": ..., "States": {...}},
     "arn:aws:states:us-east-1:123456789012:stateMachine:Notify": {...}}

Their functions are the action's functions. The Orchestrator loads the table when the
action loads (:func:`install`, before its warm workers fork, so they have it too); the
workflow itself is in it under its own name, so a machine may start itself. A
``StateMachineArn`` finds its machine by exact key, else by the name after
``stateMachine:``.

The request-response form returns ``{ExecutionArn, StartDate}`` as AWS does; the child
has run to its end by then (an order AWS could also have chosen), and its failure is
not the caller's. ``.sync`` returns DescribeExecution's answer, ``Input`` and ``Output``
as JSON text, ``.sync:2`` as JSON values; a child that fails, fails the Task with
``States.TaskFailed`` and that answer, with its ``Error`` and ``Cause``, as the cause
(LocalStack's recorded test_start_execution_sync*, tests/aws/.../v2/callback).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from ..asl.errors import TASK_FAILED, StatesError
from ..asl.integrations import SYNC2, Integration
from ..asl.jsonvalue import compact_json
from ..asl.model import Machine, machine_from_asl
from ..engine.execution import Execution, ExecutionTimedOut
from ..engine.lambda_context import ACCOUNT, REGION
from .responses import sdk_metadata

STATE_MACHINES_FILE = "state_machines.json"
_ARN_NAME = ":stateMachine:"
# Child executions nest on this process's stack: a machine that starts itself with no
# way out would exhaust it (AWS would instead start executions until its quota).
MAX_NESTING = 32
_nesting: dict[str, int] = {}  # execution name -> how deep it runs
# Step Functions keeps at most this much of an error's cause (each nesting level quotes
# its child's cause again, doubling its backslashes).
MAX_CAUSE = 32768

RunMachine = Callable[[Machine, Any, Execution], Any]


def machine_arn(name: str) -> str:
    return f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{name}"


def _name_of(reference: str) -> str:
    """The state machine name in an ARN (a version or alias suffix dropped), or the name."""
    if _ARN_NAME in reference:
        return reference.split(_ARN_NAME, 1)[1].split(":", 1)[0]
    return reference


class StateMachines:
    """The state machines an execution may start, by name or ARN."""

    def __init__(self, definitions: Mapping[str, Any],
                 built: Mapping[str, Machine] | None = None) -> None:
        self._definitions = dict(definitions)
        self._built: dict[str, Machine] = dict(built or {})

    def names(self) -> list[str]:
        return sorted({*self._definitions, *self._built})

    def find(self, reference: str) -> tuple[str, Machine] | None:
        """The name and machine a StateMachineArn (or name) refers to."""
        keys = self.names()
        wanted = _name_of(reference)
        key = reference if reference in keys else next(
            (k for k in keys if _name_of(k) == wanted), None)
        if key is None:
            return None
        machine = self._built.get(key)
        if machine is None:  # built on first use: most runs start none of them
            machine = self._built[key] = machine_from_asl(self._definitions[key])
        return _name_of(key), machine


_INSTALLED = StateMachines({})


def load(root: str, own_name: str, own: Machine) -> StateMachines:
    """The table of an action folder: its state_machines.json and the workflow itself."""
    path = os.path.join(root, STATE_MACHINES_FILE)
    definitions: dict[str, Any] = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            definitions = json.load(handle)
    return StateMachines(definitions, {own_name: own})


def install(machines: StateMachines) -> None:
    """Make ``machines`` the ones this process's executions may start."""
    global _INSTALLED
    _INSTALLED = machines


def installed() -> StateMachines:
    return _INSTALLED


def _millis(instant: float) -> int:
    return int(instant * 1000)


def _child_input(parameters: dict[str, Any]) -> Any:
    raw = parameters.get("Input")
    if raw is None:
        return {}
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        raise _api_error("InvalidExecutionInput",
                         f"Invalid State Machine Execution Input: '{raw}'") from None


def _api_error(code: str, message: str) -> StatesError:
    return StatesError(f"StepFunctions.{code}Exception",
                       f"{message} (Service: AWSStepFunctions; Status Code: 400; Error "
                       f"Code: {code}; Request ID: {uuid.uuid4()}; Proxy: null)")


def start_execution(integration: Integration, parameters: Any, execution: Execution,
                    run: RunMachine) -> dict[str, Any]:
    """Run the child execution ``parameters`` asks for; the Task's result."""
    if not isinstance(parameters, dict) or not isinstance(
            parameters.get("StateMachineArn"), str):
        raise _api_error("InvalidArn", "Invalid Arn: 'StateMachineArn' is required")
    reference = parameters["StateMachineArn"]
    found = installed().find(reference)
    if found is None:
        raise _api_error("StateMachineDoesNotExist",
                         f"State Machine Does Not Exist: '{reference}'")
    name, machine = found
    depth = _nesting.get(execution.name, 0) + 1
    if depth > MAX_NESTING:
        raise _api_error("ExecutionLimitExceeded",
                         f"Faastlane runs started executions in-process, at most "
                         f"{MAX_NESTING} deep: '{reference}' was started by executions "
                         f"nested {MAX_NESTING} deep")
    child_input = _child_input(parameters)
    execution_name = str(parameters.get("Name") or uuid.uuid4())
    child = Execution(name, child_input, execution.functions, execution.options,
                      machine.timeout_seconds, execution_name)
    started = time.time()
    status, output = "SUCCEEDED", None
    error: StatesError | None = None
    _nesting[child.name] = depth
    try:
        output = run(machine, child_input, child)
    except ExecutionTimedOut as exc:
        status, error = "TIMED_OUT", exc
    except StatesError as exc:
        status, error = "FAILED", exc
    finally:
        _nesting.pop(child.name, None)
    stopped = time.time()
    arn = child.context_base["Execution"]["Id"]
    if integration.pattern is None:
        body = {"ExecutionArn": arn, "StartDate": _millis(started)}
        request_id = str(uuid.uuid4())
        return dict(sorted({**body, **sdk_metadata({
            "RequestId": request_id, "HTTPStatusCode": 200,
            "HTTPHeaders": {"content-type": "application/x-amz-json-1.0",
                            "content-length": str(len(compact_json(body))),
                            "x-amzn-requestid": request_id}})}.items()))
    as_json = integration.pattern == SYNC2
    described: dict[str, Any] = {
        "ExecutionArn": arn,
        "Input": child_input if as_json else compact_json(child_input),
        "InputDetails": {"Included": True},
        "Name": execution_name,
        "StartDate": _millis(started),
        "StateMachineArn": machine_arn(name),
        "Status": status,
        "StopDate": _millis(stopped),
    }
    if error is None:
        described["Output"] = output if as_json else compact_json(output)
        described["OutputDetails"] = {"Included": True}
        return dict(sorted(described.items()))
    described.update(error.to_json())
    cause = compact_json(dict(sorted(described.items())))
    raise StatesError(TASK_FAILED, cause[:MAX_CAUSE])
