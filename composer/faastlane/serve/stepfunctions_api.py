"""The Step Functions API (the ``AWSStepFunctions`` JSON 1.0 protocol: ``POST /`` with
``X-Amz-Target: AWSStepFunctions.Operation``), as boto3's ``stepfunctions`` client and
``aws stepfunctions --endpoint-url`` send it, for the served workflow: what test suites of
Step Functions projects drive Step Functions Local or LocalStack with.

Served: ListStateMachines, DescribeStateMachine, StartExecution (the execution runs after
the answer), StartSyncExecution, DescribeExecution, ListExecutions, StopExecution and
GetExecutionHistory (the events ``faastlane run --history`` writes). Errors have AWS's
shapes: HTTP 400 with ``{"__type": "ExecutionDoesNotExist", "message": ...}``.
Executions run on the served action's warm copies (``--concurrency``, as its other APIs'
calls do) and are kept while the server runs. Not served: the callback pattern
(SendTaskSuccess, ...).
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from faastlane.runtime.engine.lambda_context import ACCOUNT, REGION

from .lambda_api import Answer, _json
from .workflow import ChildDied, WarmWorkflow

TARGET_PREFIX = "AWSStepFunctions."
RUNNING, SUCCEEDED, FAILED, ABORTED = "RUNNING", "SUCCEEDED", "FAILED", "ABORTED"
_NAME = re.compile(r"[A-Za-z0-9_-]{1,80}\Z")  # what AWS allows in an execution's name
_MAX_RESULTS = 1000


@dataclass
class _Execution:
    arn: str
    name: str
    input_text: str
    start: float
    status: str = RUNNING
    stop: float | None = None
    output: Any = None
    error: str | None = None
    cause: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)
    # Ends the process of the warm copy running it, once it runs (StopExecution).
    abort: Callable[[], None] | None = None

    def describe(self, machine_arn: str) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "executionArn": self.arn, "stateMachineArn": machine_arn, "name": self.name,
            "status": self.status, "startDate": self.start, "input": self.input_text,
            "inputDetails": {"included": True}}
        if self.stop is not None:
            answer["stopDate"] = self.stop
        if self.status == SUCCEEDED:
            answer["output"] = json.dumps(self.output, separators=(",", ":"))
            answer["outputDetails"] = {"included": True}
        if self.error is not None:
            answer["error"] = self.error
        if self.cause is not None:
            answer["cause"] = self.cause
        return answer


class ApiError(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class StepFunctionsApi:
    def __init__(self, workflow: WarmWorkflow, definition: str) -> None:
        self.workflow = workflow
        self.definition = definition
        self.machine_arn = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{workflow.name}"
        self.created = time.time()
        self._lock = threading.Lock()
        self._executions: dict[str, _Execution] = {}  # by ARN, in start order

    def handle(self, target: str, body: bytes) -> Answer:
        operation = target.removeprefix(TARGET_PREFIX)
        handler = getattr(self, f"_op_{operation}", None)
        try:
            if handler is None:
                raise ApiError("UnknownOperationException",
                               f"{operation} is not an operation this endpoint serves")
            try:
                request = json.loads(body) if body.strip() else {}
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise ApiError("SerializationException", f"the body is not JSON: {exc}"
                               ) from None
            if not isinstance(request, dict):
                raise ApiError("SerializationException", "the body is not a JSON object")
            return _json(200, handler(request))
        except ApiError as exc:
            return _json(400, {"__type": exc.kind, "message": exc.message},
                         **{"x-amzn-ErrorType": exc.kind})

    # ------------------------------------------------------------------ state machines

    def _machine(self, arn: Any) -> None:
        if not isinstance(arn, str) or not arn.startswith("arn:aws"):
            raise ApiError("InvalidArn", f"Invalid Arn: '{arn}'")
        if arn != self.machine_arn:
            raise ApiError("StateMachineDoesNotExist", f"State Machine Does Not Exist: '{arn}'")

    def _op_ListStateMachines(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"stateMachines": [{"stateMachineArn": self.machine_arn,
                                   "name": self.workflow.name, "type": "STANDARD",
                                   "creationDate": self.created}]}

    def _op_DescribeStateMachine(self, request: dict[str, Any]) -> dict[str, Any]:
        self._machine(request.get("stateMachineArn"))
        return {"stateMachineArn": self.machine_arn, "name": self.workflow.name,
                "status": "ACTIVE", "definition": self.definition,
                "roleArn": f"arn:aws:iam::{ACCOUNT}:role/faastlane-{self.workflow.name}",
                "type": "STANDARD", "creationDate": self.created}

    # ------------------------------------------------------------------ executions

    def _new(self, request: dict[str, Any]) -> tuple[_Execution, bool]:
        """The execution a start asks for, and whether it is new (a second start with the
        same name and input is the first one, as on AWS)."""
        self._machine(request.get("stateMachineArn"))
        name = request.get("name") or str(uuid.uuid4())
        if not isinstance(name, str) or not _NAME.match(name):
            raise ApiError("InvalidName", f"Invalid Name: '{name}'")
        text = request.get("input", "{}")
        if not isinstance(text, str):
            raise ApiError("InvalidExecutionInput", "input must be a string of JSON")
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            raise ApiError("InvalidExecutionInput", f"Invalid State Machine Execution "
                                                    f"Input: '{exc}'") from None
        arn = f"arn:aws:states:{REGION}:{ACCOUNT}:execution:{self.workflow.name}:{name}"
        with self._lock:
            found = self._executions.get(arn)
            if found is not None:
                if found.input_text != text:
                    raise ApiError("ExecutionAlreadyExists",
                                   f"Execution Already Exists: '{arn}'")
                return found, False
            execution = self._executions[arn] = _Execution(arn, name, text, time.time())
        return execution, True

    def _op_StartExecution(self, request: dict[str, Any]) -> dict[str, Any]:
        execution, new = self._new(request)
        if new:
            threading.Thread(target=self._run, args=(execution,), daemon=True,
                             name=f"execution {execution.name}").start()
        return {"executionArn": execution.arn, "startDate": execution.start}

    def _op_StartSyncExecution(self, request: dict[str, Any]) -> dict[str, Any]:
        execution, new = self._new(request)
        if new:
            self._run(execution)
        execution.done.wait()
        answer = execution.describe(self.machine_arn)
        answer.pop("inputDetails")
        answer.pop("outputDetails", None)
        return answer

    def _run(self, execution: _Execution) -> None:
        value = {"api": "states", "name": execution.name,
                 "input": json.loads(execution.input_text),
                 "input_text": execution.input_text}
        def on_turn(abort: Callable[[], None]) -> bool:
            with self._lock:
                if execution.status != RUNNING:  # stopped before its turn
                    return False
                execution.abort = abort
                return True

        try:
            try:
                answer = self.workflow.call_if(value, on_turn)
            except ChildDied as exc:
                with self._lock:
                    if execution.status == RUNNING:  # not a stop: the action died
                        execution.status, execution.stop = FAILED, time.time()
                        execution.error, execution.cause = "States.Runtime", str(exc)
                return
            with self._lock:
                if answer is None or execution.status != RUNNING:
                    return
                execution.events = [_wire_event(e) for e in answer.get("events") or []]
                execution.status = answer.get("status", FAILED)
                execution.output = answer.get("output")
                execution.error = answer.get("error")
                execution.cause = answer.get("cause")
                execution.stop = time.time()
                if "error" in answer and "status" not in answer:  # the entry itself failed
                    execution.status, execution.error = FAILED, "States.Runtime"
                    execution.cause = str(answer["error"])
        finally:
            execution.done.set()

    def _execution(self, arn: Any) -> _Execution:
        if not isinstance(arn, str) or not arn.startswith("arn:aws"):
            raise ApiError("InvalidArn", f"Invalid Arn: '{arn}'")
        with self._lock:
            found = self._executions.get(arn)
        if found is None:
            raise ApiError("ExecutionDoesNotExist", f"Execution Does Not Exist: '{arn}'")
        return found

    def _op_DescribeExecution(self, request: dict[str, Any]) -> dict[str, Any]:
        execution = self._execution(request.get("executionArn"))
        with self._lock:
            return execution.describe(self.machine_arn)

    def _op_ListExecutions(self, request: dict[str, Any]) -> dict[str, Any]:
        self._machine(request.get("stateMachineArn"))
        wanted = request.get("statusFilter")
        with self._lock:
            listed = [e for e in reversed(self._executions.values())
                      if wanted is None or e.status == wanted]
            rows = []
            for e in listed:
                row = {"executionArn": e.arn, "stateMachineArn": self.machine_arn,
                       "name": e.name, "status": e.status, "startDate": e.start}
                if e.stop is not None:
                    row["stopDate"] = e.stop
                rows.append(row)
        page, token = _page(rows, request)
        return {"executions": page, **({"nextToken": token} if token else {})}

    def _op_StopExecution(self, request: dict[str, Any]) -> dict[str, Any]:
        execution = self._execution(request.get("executionArn"))
        with self._lock:
            if execution.status != RUNNING:
                return {"stopDate": execution.stop}
            execution.status, execution.stop = ABORTED, time.time()
            execution.error = request.get("error")
            execution.cause = request.get("cause")
            execution.events = _aborted_history(execution)
            abort = execution.abort
        if abort is not None:
            # Its copy's process is ended, as AWS ends a running execution (the copy's
            # next call starts the action again).
            abort()
        return {"stopDate": execution.stop}

    def _op_GetExecutionHistory(self, request: dict[str, Any]) -> dict[str, Any]:
        execution = self._execution(request.get("executionArn"))
        with self._lock:
            events = list(execution.events)
        if request.get("reverseOrder"):
            events.reverse()
        if request.get("includeExecutionData") is False:
            events = [_without_data(e) for e in events]
        page, token = _page(events, request)
        return {"events": page, **({"nextToken": token} if token else {})}


def _page(rows: list[Any], request: dict[str, Any]) -> tuple[list[Any], str | None]:
    """One page of ``rows`` (``maxResults``, ``nextToken`` as this endpoint made it)."""
    size = request.get("maxResults") or _MAX_RESULTS
    token = request.get("nextToken")
    try:
        start = int(token) if token else 0
    except ValueError:
        raise ApiError("InvalidToken", f"Invalid Token: '{token}'") from None
    if not isinstance(size, int) or not 0 < size <= _MAX_RESULTS:
        raise ApiError("ValidationException", f"maxResults must be 1-{_MAX_RESULTS}")
    end = start + size
    return rows[start:end], (str(end) if end < len(rows) else None)


def _wire_event(event: dict[str, Any]) -> dict[str, Any]:
    """A history event as the JSON 1.0 protocol carries it: timestamps as epoch seconds."""
    stamp = event.get("timestamp")
    if isinstance(stamp, str):
        event = {**event, "timestamp": datetime.fromisoformat(stamp).timestamp()}
    return event


def _aborted_history(execution: _Execution) -> list[dict[str, Any]]:
    """The events of an execution stopped before it ended (its own events are the
    action's, which a stop does not wait for): started, then aborted."""
    started = {"timestamp": execution.start, "type": "ExecutionStarted", "id": 1,
               "previousEventId": 0,
               "executionStartedEventDetails": {"input": execution.input_text,
                                                "inputDetails": {"truncated": False}}}
    aborted: dict[str, Any] = {"timestamp": execution.stop, "type": "ExecutionAborted",
                               "id": 2, "previousEventId": 1}
    details = {k: v for k, v in (("error", execution.error), ("cause", execution.cause))
               if v is not None}
    if details:
        aborted["executionAbortedEventDetails"] = details
    return [started, aborted]


def _without_data(event: dict[str, Any]) -> dict[str, Any]:
    """An event without its input and output (``includeExecutionData: false``)."""
    trimmed: dict[str, Any] = {}
    for key, value in event.items():
        if isinstance(value, dict) and key.endswith("EventDetails"):
            value = {k: v for k, v in value.items() if k not in ("input", "output")}
        trimmed[key] = value
    return trimmed
