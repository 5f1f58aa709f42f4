"""One service integration call, made by the Orchestrator for a Task state.

The Task's effective input (Parameters, or JSONata's Arguments) is the API request; the
call goes through boto3 with the Orchestrator's own configuration (:mod:`.clients`);
the result and any error take the shapes Step Functions gives them (:mod:`.shapes`,
:mod:`.responses`, :mod:`.failures`). ``states:startExecution`` runs another state
machine of the workflow in this process (:mod:`.executions`).
"""

from __future__ import annotations

import queue
import threading
from functools import cache
from typing import Any

from ..asl.errors import RUNTIME, StatesError
from ..asl.integrations import Integration, parse
from ..asl.model import Machine, Task, walk_states
from ..engine import handoff_scope, trace
from ..engine.execution import Execution, timeout_error
from . import clients, failures, responses, shapes
from .executions import RunMachine, start_execution

PLACEMENT = "orchestrator"  # where a service call runs, in plan.json and the trace


@cache
def integration_of(resource: str) -> Integration:
    """The (validated) integration a Task's Resource names."""
    return parse(resource)


def services_of(machine: Machine) -> frozenset[str]:
    """The boto3 clients a machine's service integrations use."""
    return frozenset(integration_of(s.integration).boto3_service
                     for s in walk_states(machine)
                     if isinstance(s, Task) and s.integration is not None
                     and not integration_of(s.integration).in_process)


def call(resource: str, parameters: Any, execution: Execution, state_name: str,
         run: RunMachine, timeout_seconds: float | None = None) -> Any:
    """Call the integration ``resource`` with ``parameters``; its result as Step
    Functions gives it (a failure: the StatesError it names). Past the Task's
    ``timeout_seconds`` (or the execution's deadline) it fails with States.Timeout; the
    call's late answer is dropped."""
    limit = execution.remaining(timeout_seconds)
    if limit is None:
        return _traced(resource, parameters, execution, state_name, run)
    answer: queue.SimpleQueue[tuple[Any, BaseException | None]] = queue.SimpleQueue()

    def waited() -> None:
        try:
            with handoff_scope.held():  # the call's answer is data in flight
                answer.put((_traced(resource, parameters, execution, state_name, run), None))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            answer.put((None, exc))

    threading.Thread(target=waited, name=f"service call of {state_name}", daemon=True).start()
    try:
        result, error = answer.get(timeout=max(limit, 0.0))
    except queue.Empty:
        execution.check_deadline()
        raise timeout_error(state_name, float(timeout_seconds or limit)) from None
    if error is not None:
        raise error
    return result


def _traced(resource: str, parameters: Any, execution: Execution, state_name: str,
            run: RunMachine) -> Any:
    integration = integration_of(resource)
    if not trace.enabled:
        return _call(integration, parameters, execution, state_name, run)
    start, error = trace.now(), None
    try:
        return _call(integration, parameters, execution, state_name, run)
    except StatesError as exc:
        error = exc.error
        raise
    finally:
        trace.record(state=state_name, type="Service", service=integration.label,
                     start=start, end=trace.now(), placement=PLACEMENT, error=error)


def _call(integration: Integration, parameters: Any, execution: Execution,
          state_name: str, run: RunMachine) -> Any:
    if integration.in_process:
        return start_execution(integration, parameters, execution, run)
    if not isinstance(parameters, dict):
        raise StatesError(RUNTIME, f"The Task state '{state_name}' calls "
                                   f"{integration.label}, whose request must be a JSON "
                                   f"object; got {type(parameters).__name__}")
    api = clients.client(integration.boto3_service, state_name, integration.resource)
    model = clients.operation_model(api, integration.operation)
    if model is None:
        raise StatesError(RUNTIME, f"The Task state '{state_name}' calls "
                                   f"{integration.resource}: boto3's "
                                   f"{integration.boto3_service} has no action "
                                   f"{integration.action}")
    request = shapes.request(parameters, model.input_shape)
    if integration.label == "events:putEvents":
        _name_resources(request, execution)
    service_id = api.meta.service_model.service_id
    try:
        raw = getattr(api, integration.operation)(**request)
    except Exception as exc:  # noqa: BLE001 - a service's failure becomes its ASL error
        named = failures.from_exception(integration, exc, service_id)
        if named is None:
            raise
        raise named from None
    shaped = shapes.response(raw, model.output_shape, epoch_millis=not integration.sdk)
    if integration.sdk:
        return shaped
    if integration.label == "events:putEvents" and shaped.get("FailedEntryCount"):
        raise failures.failed_entries(shaped)
    return responses.optimised_result(integration, shaped, raw.get("ResponseMetadata", {}))


def _name_resources(request: dict[str, Any], execution: Execution) -> None:
    """Step Functions adds the state machine's and the execution's ARNs to each event's
    Resources (the developer guide's EventBridge page)."""
    context = execution.context_base
    arns = [context["StateMachine"]["Id"], context["Execution"]["Id"]]
    for entry in request.get("Entries") or ():
        if isinstance(entry, dict):
            entry["Resources"] = [*(entry.get("Resources") or ()), *arns]

