"""What each ASL state type does, following the Step Functions documentation.

Every executor takes the state, its raw input and the execution, and returns the state's
output and the name of the next state (``None`` when its machine ends). Data flows
through the documented pipeline:

    InputPath -> Parameters -> (work) -> ResultSelector -> ResultPath -> OutputPath

and every failure is a :class:`StatesError` that ``Retry`` and ``Catch`` match by name.
"""

from __future__ import annotations

import functools
import queue
import random
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard, overload

from ..asl import choice, intrinsics, jsonpath
from ..asl.errors import (
    EXCEED_TOLERATED_FAILURE_THRESHOLD,
    QUERY_EVALUATION_ERROR,
    RUNTIME,
    TIMEOUT,
    StatesError,
    error_matches,
    unexpected_cause,
)
from ..asl.jsonata import expression_text, is_expression
from ..asl.jsonvalue import compact_json, copy_event, json_type
from ..asl.model import (
    Catcher,
    Choice,
    Fail,
    Machine,
    Map,
    Parallel,
    Pass,
    Retrier,
    State,
    Succeed,
    Task,
    Wait,
)
from ..asl.resources import function_name_of
from ..engine import history, trace
from ..engine.execution import Execution, ExecutionTimedOut, RelayWatch
from ..engine.forking import Outcome
from ..engine.lambda_context import ACCOUNT, REGION
from ..engine.threads import POOL, RELAYS, Last, Step, steps
from ..services import calls as service_calls
from .dataflow import DataFlow, located

Transition = tuple[Any, "str | None"]


def run_machine(machine: Machine, data: Any, execution: Execution) -> Any:
    """Run a machine (the workflow, a branch or an iteration) from StartAt to its end."""
    name = machine.start_at
    while True:
        execution.check_deadline()
        state = machine.states[name]
        if _relayable(state, execution):
            data, next_name = _relay(machine, state, data, execution)
        else:
            data, next_name = execute(state, data, execution)
        if next_name is None:
            return data
        name = next_name


_RUNTIME_PREFIX = "An error occurred while executing the state"
# Errors whose cause AWS prefixes with the state and its event id (States.Runtime; and
# States.QueryEvaluationError, as in LocalStack's recorded test_undefined_reference_*).
_PREFIXED = (RUNTIME, QUERY_EVALUATION_ERROR)


@overload
def _named(err: Exception, state: State, event_id: int) -> StatesError: ...
@overload
def _named(err: BaseException, state: State, event_id: int) -> BaseException: ...


def _named(err: BaseException, state: State, event_id: int) -> BaseException:
    """The error ``state`` fails with: an unexpected exception (an engine bug, a
    RecursionError on deep data) is a States.Runtime error with a cause, never a crash;
    Step Functions names the state in which a States.Runtime error happened; and the
    error remembers the innermost state it failed, for the run's report."""
    if isinstance(err, Exception) and not isinstance(err, StatesError):
        err = StatesError(RUNTIME, unexpected_cause(err))
    if (isinstance(err, StatesError) and err.error in _PREFIXED
            and not (err.cause or "").startswith(_RUNTIME_PREFIX)):
        err = StatesError(err.error, f"{_RUNTIME_PREFIX} '{state.name}' (entered at the "
                                   f"event id #{event_id}). {err.cause}")
    if isinstance(err, StatesError) and err.state is None:
        err.state = state.name
    return err


def execute(state: State, data: Any, execution: Execution) -> Transition:
    """Run one state and, when tracing, record it."""
    if not trace.enabled:
        return _run_state(state, data, execution)
    start = trace.now()
    try:
        return _run_state(state, data, execution)
    finally:
        trace.record(state=state.name, type=type(state).__name__, start=start,
                     end=trace.now())


def _run_state(state: State, data: Any, execution: Execution) -> Transition:
    event_id = execution.enter_state(state, data)
    try:
        output, next_name = _EXECUTORS[type(state)](state, data, execution)
    except Exception as err:  # noqa: BLE001 - every failure becomes the state's ASL error
        if (isinstance(err, StatesError) and err.error == QUERY_EVALUATION_ERROR
                and not getattr(err, "evaluation_recorded", False)):
            # As AWS recorded: after a Wait's entry, else where the entry linked to.
            _evaluation_failed(state, execution, err, before_entry=type(state) is not Wait)
        named = _named(err, state, event_id)
        if named is err:
            raise
        raise named from None
    execution.exit_state(state, output)
    return output, next_name


# ------------------------------------------------------------------ relays of Tasks
#
# Run by execute(), a Task waits on the calling thread for its function's thread: two
# wake-ups per hand-off (the function's thread, then the caller's). A relay runs a chain
# of Tasks on one warm thread (engine.threads.steps): each function in turn, in its own
# context variables (execution.FunctionContexts), each Task finished and the next one's
# function called right there, so a hand-off wakes no thread at all; the caller is woken
# once, when the relay ends (and watches the running function's timeout meanwhile). Only
# Tasks whose error handling is "none": no Retry, Catch or timeout (nothing to wait
# for), where functions share the heap (Execution.relays); Pass, Choice and Succeed
# states between them run on the relay's way; at any other state the relay hands the
# execution back to the calling thread, and run_machine goes on as before.

# (output, next state or None, error): how a relay ends
_Baton = queue.SimpleQueue[tuple[Any, str | None, BaseException | None]]
_INLINE = (Pass, Choice, Succeed)  # states a relay runs on its way to the next Task


def _relayable(state: State, execution: Execution) -> TypeGuard[Task]:
    # With the history on, Tasks run the plain way, which records their events (a
    # relay only numbers them).
    return (type(state) is Task and state.unguarded and execution.events is None
            and execution.relays(state.placement))


def _relay(machine: Machine, state: Task, data: Any, execution: Execution) -> Transition:
    """Run ``state`` and the relayable Tasks after it; the state to go on with."""
    baton: _Baton = queue.SimpleQueue()
    watch = RelayWatch()
    POOL.start(RELAYS, steps(_pass_on(machine, state, data, False, execution, baton, watch)))
    while True:
        try:
            output, next_name, error = baton.get(timeout=watch.wait())
            break
        except queue.Empty:
            # A function past its own timeout: the relay ends here, with its error.
            expired = watch.expired()
            if expired is not None:
                raise expired from None
    if error is not None:
        raise error
    return output, next_name


def _pass_on(machine: Machine, state: Task, data: Any, owned: bool, execution: Execution,
             baton: _Baton, watch: RelayWatch) -> Step | Last:
    """Enter ``state`` and prepare its function's call; the step that makes it (or, if
    preparing failed, the step that ends the relay with the state's error).

    ``owned``: ``data`` is the previous function's detached result, which nothing else
    holds; a :attr:`Task.direct` state hands it to its function as it is (the copy a
    function gets so that its state's input survives it would protect nothing: a direct
    Task's output is its result alone)."""
    start = trace.now() if trace.enabled else 0.0
    event_id = execution.enter_state(state, data)
    try:
        if state.direct:
            flow = None
            function = state.function
            assert function is not None
            event = data if owned or not execution.mode.copies_event(
                function, state.placement) else copy_event(data)
            execution.numbered(2)  # Scheduled, Started
        else:
            flow = DataFlow(state, data, execution, time.time())
            effective, function, event = _task_call(state, flow)
            _task_scheduled(state, execution, event, effective, None)
        then = functools.partial(_carry_on, machine, state, flow, execution, event_id, start,
                                 baton, watch)
        return execution.function_step(state.name, function, event, then, watch,
                                       lambda exc: _ending(baton, None, None, exc))
    except BaseException as exc:  # noqa: BLE001 - ends the relay with the state's error
        _record(state, start)
        return _ending(baton, None, None, _named(exc, state, event_id))


def _carry_on(machine: Machine, state: Task, flow: DataFlow | None, execution: Execution,
              event_id: int, start: float, baton: _Baton, watch: RelayWatch, result: Any,
              error: StatesError | None) -> Step | Last:
    """On the relay's thread, once the function returned: finish its Task, then pass
    the execution on. ``flow`` is None for a direct Task (its output is its result)."""
    try:
        _task_ended(state, execution, result, error)
        if error is not None:
            raise error
        output = result if flow is None else _task_output(state, flow, result)
    except BaseException as exc:  # noqa: BLE001 - ends the relay with the state's error
        _record(state, start)
        return _ending(baton, None, None, _named(exc, state, event_id))
    execution.exit_state(state, output)
    _record(state, start)
    return _onwards(machine, state.next, output, flow is None, execution, baton, watch)


def _onwards(machine: Machine, name: str | None, data: Any, owned: bool,
             execution: Execution, baton: _Baton, watch: RelayWatch) -> Step | Last:
    """From state ``name`` on: Pass, Choice and Succeed states run here (they compute,
    never wait), up to the next relayable Task, or back to the calling thread.
    ``owned``: ``data`` is a function's detached result, held by nothing else."""
    while name is not None:
        state = machine.states[name]
        if _relayable(state, execution):
            return _pass_on(machine, state, data, owned, execution, baton, watch)
        if type(state) not in _INLINE:
            return _ending(baton, data, name, None)
        try:
            data, name = execute(state, data, execution)
        except BaseException as exc:  # noqa: BLE001 - ends the relay with the state's error
            return _ending(baton, None, None, exc)
        owned = False  # a Pass may output its own Result, shared by every execution
    return _ending(baton, data, None, None)


def _ending(baton: _Baton, output: Any, next_name: str | None,
            error: BaseException | None) -> Last:
    """The step that ends a relay: the calling thread goes on from ``next_name``."""
    return Last(lambda: baton.put((output, next_name, error)))


def _record(state: State, start: float) -> None:
    if trace.enabled:
        trace.record(state=state.name, type=type(state).__name__, start=start,
                     end=trace.now())


# ------------------------------------------------------------------ Retry and Catch


def retry_delay(retrier: Retrier, attempt: int) -> float:
    """Seconds before retry number ``attempt`` (1-based) under one Retrier.

    "IntervalSeconds ... the number of seconds before the first retry attempt";
    "BackoffRate: the multiplier by which the retry interval denoted by IntervalSeconds
    increases after each retry attempt"; MaxDelaySeconds caps it; JitterStrategy FULL
    picks uniformly between 0 and the computed delay.
    """
    delay = retrier.interval_seconds * retrier.backoff_rate ** (attempt - 1)
    if retrier.max_delay_seconds is not None:
        delay = min(delay, retrier.max_delay_seconds)
    if retrier.jitter_strategy == "FULL":
        delay = random.uniform(0, delay)
    return delay


def with_error_handling(state: Task | Parallel | Map, data: Any, execution: Execution,
                        attempt: Callable[[int], Any], entered: float | None = None,
                        failed: Callable[[StatesError], None] | None = None
                        ) -> Transition:
    """Run ``attempt(retry_count)`` under the state's Retry and Catch rules.

    Retriers are scanned in order and the first whose ErrorEquals matches decides; each
    keeps its own count, and once it has used MaxAttempts the error goes on to the
    Catchers. A Catcher's ResultPath places ``{"Error", "Cause"}`` into the state's raw
    input, and that is the state's output (OutputPath does not apply); in JSONata its
    Output (default: the error output) is. The Catcher's Assign replaces the state's.
    """
    counts = [0] * len(state.retry)
    retries = 0
    while True:
        try:
            return attempt(retries), state.next
        except ExecutionTimedOut:
            raise
        except StatesError as err:
            retrier_index = next((i for i, r in enumerate(state.retry)
                                  if error_matches(list(r.error_equals), err.error)), None)
            if retrier_index is not None:
                retrier = state.retry[retrier_index]
                if counts[retrier_index] < retrier.max_attempts:
                    counts[retrier_index] += 1
                    retries += 1
                    execution.sleep(retry_delay(retrier, counts[retrier_index]))
                    continue
            if failed is not None:
                failed(err)  # its history events, once no retry follows
            catcher = _matching_catcher(state.catch, err)
            if catcher is None:
                raise
            flow = DataFlow(state, data, execution,
                            time.time() if entered is None else entered, retries)
            return flow.caught(catcher, err), catcher.next


def _matching_catcher(catchers: tuple[Catcher, ...], err: StatesError) -> Catcher | None:
    return next((c for c in catchers if error_matches(list(c.error_equals), err.error)), None)


# ------------------------------------------------------------------ state types


def _pass(state: Pass, data: Any, execution: Execution) -> Transition:
    flow = DataFlow(state, data, execution, time.time())
    effective = flow.effective_input()
    return flow.finish(state.result if state.has_result else effective), state.next


def _lambda_invoke_response(payload: Any, request_id: str) -> dict[str, Any]:
    """The response object of ``arn:aws:states:::lambda:invoke`` (Lambda Invoke's shape)."""
    headers = {"Connection": "keep-alive", "Content-Type": "application/json",
               "X-Amz-Executed-Version": "$LATEST", "x-amzn-RequestId": request_id}
    return {
        "ExecutedVersion": "$LATEST",
        "Payload": payload,
        "SdkHttpMetadata": {"AllHttpHeaders": {k: [v] for k, v in headers.items()},
                            "HttpHeaders": headers, "HttpStatusCode": 200},
        "SdkResponseMetadata": {"RequestId": request_id},
        "StatusCode": 200,
    }


def _task_timeout(state: Task, effective_input: Any, flow: DataFlow) -> float | None:
    if state.timeout_seconds_path is None:
        timeout: float | None = flow.number(state.timeout_seconds, "TimeoutSeconds", minimum=1)
        return timeout
    try:
        value = flow.read(effective_input, state.timeout_seconds_path)
    except jsonpath.PathNotFound:  # worded as AWS words it for a Wait's SecondsPath
        raise StatesError(RUNTIME, "The TimeoutSecondsPath parameter does not reference an "
                                   f"input value: {state.timeout_seconds_path}") from None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise StatesError(RUNTIME, f"TimeoutSecondsPath '{state.timeout_seconds_path}' "
                                   f"must point to a positive integer, got {value!r}")
    return value


def _task(state: Task, data: Any, execution: Execution) -> Transition:
    entered = time.time()

    def attempt(retry_count: int) -> Any:
        flow = DataFlow(state, data, execution, entered, retry_count)
        if state.integration is not None:
            # A service integration: the Orchestrator calls the service itself, on this
            # thread, with its own environment (never in a function's sandbox or domain).
            effective = flow.effective_input()
            timeout = _task_timeout(state, effective, flow)
            _task_scheduled(state, execution, effective, effective, timeout)
            try:
                result = service_calls.call(state.integration, effective, execution,
                                            state.name, run_machine, timeout)
            except StatesError as err:
                _task_ended(state, execution, None, err)
                raise
            _task_ended(state, execution, result, None)
            return flow.finish(result)
        effective, function, event = _task_call(state, flow)
        timeout = _task_timeout(state, effective, flow)
        _task_scheduled(state, execution, event, effective, timeout)
        try:
            result = execution.call_function(state.name, function, event, timeout,
                                             state.placement)
        except StatesError as err:
            _task_ended(state, execution, None, err)
            raise
        if state.invoke_shape:
            result = _lambda_invoke_response(result, execution.name)
        _task_ended(state, execution, result, None)
        return flow.finish(result)

    return with_error_handling(state, data, execution, attempt, entered,
                               _failed_events(state, execution))


def _task_call(state: Task, flow: DataFlow) -> tuple[Any, str, Any]:
    """A Task's effective input, the function it calls and the event it gets: its own
    copy of it."""
    effective = flow.effective_input()
    function = state.function
    event = effective
    if state.invoke_shape:
        if function is None:  # Parameters named it with FunctionName.$
            function = function_name_of(str(effective.get("FunctionName")))
        event = effective.get("Payload", {}) if isinstance(effective, dict) else {}
    assert function is not None, "only lambda:invoke names its function at run time"
    # The function gets its own copy: a handler that mutates its event in place must
    # not change this state's input, which ResultPath and retries still use. In mpk
    # mode the function makes that copy in its own heap (private_heaps.py), and an
    # invocation in a sandbox or a forked process gets it from the wire.
    if not flow.execution.mode.copies_event(function, state.placement):
        return effective, function, event
    return effective, function, copy_event(event)


def _task_output(state: Task, flow: DataFlow, result: Any) -> Any:
    if state.invoke_shape:
        result = _lambda_invoke_response(result, flow.execution.name)
    return flow.finish(result)


# ------------------------------------------------------------------ a Task's history events
#
# A Lambda function named by its ARN: LambdaFunctionScheduled/Started/Succeeded/Failed/
# TimedOut; lambda:invoke and the service integrations: TaskScheduled/Started/
# Succeeded/Failed/TimedOut with the resourceType and resource AWS gives ("lambda",
# "invoke"; "aws-sdk:s3", "getObject"), as in LocalStack's recorded test_lambda_task,
# test_lambda_task_service and services/ tests.

_LAMBDA_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:"
_INTEGRATION_PREFIX = "arn:aws:states:::"


def task_resource(state: Task) -> tuple[str, str] | None:
    """A Task's (resourceType, resource) in its Task* events; None: a Lambda function
    named by its ARN (LambdaFunction* events)."""
    if state.invoke_shape:
        return "lambda", "invoke"
    if state.integration is None:
        return None
    parts = state.integration.split(":::", 1)[-1].split(":")
    split = 2 if parts[0] == "aws-sdk" else 1
    return ":".join(parts[:split]), ":".join(parts[split:])


def _task_scheduled(state: Task, execution: Execution, event: Any, effective: Any,
                    timeout: float | None) -> None:
    """The events of a Task's call about to start (an attempt of it)."""
    if execution.events is None:
        execution.numbered(2)  # Scheduled, Started
        return
    resource = task_resource(state)
    if resource is None:
        details: dict[str, Any] = {"resource": _LAMBDA_ARN + str(state.function),
                                   "input": history.data(event),
                                   "inputDetails": history.NOT_TRUNCATED}
        if timeout is not None:
            details["timeoutInSeconds"] = int(timeout)
        execution.emit("LambdaFunctionScheduled",
                       {"lambdaFunctionScheduledEventDetails": details})
        execution.emit("LambdaFunctionStarted")
        return
    kind, name = resource
    details = {"resourceType": kind, "resource": name, "region": REGION,
               "parameters": history.data(effective)}
    if timeout is not None:
        details["timeoutInSeconds"] = int(timeout)
    execution.emit("TaskScheduled", {"taskScheduledEventDetails": details})
    execution.emit("TaskStarted", {"taskStartedEventDetails": {"resourceType": kind,
                                                               "resource": name}})


def _task_ended(state: Task, execution: Execution, result: Any,
                error: StatesError | None) -> None:
    """The event of a Task's call that returned ``result`` or failed with ``error``."""
    if execution.events is None:
        execution.numbered(1)
        return
    resource = task_resource(state)
    prefix = "LambdaFunction"
    details: dict[str, Any] = {}
    if resource is not None:
        prefix, details = "Task", {"resourceType": resource[0], "resource": resource[1]}
    if error is None:
        outcome = "Succeeded"
        details.update(output=history.data(result), outputDetails=history.NOT_TRUNCATED)
    else:
        outcome = "TimedOut" if error.error == TIMEOUT else "Failed"
        details.update(_error_details(error))
    kind = prefix + outcome
    execution.emit(kind, {f"{kind[0].lower()}{kind[1:]}EventDetails": details})


def _choice(state: Choice, data: Any, execution: Execution) -> Transition:
    flow = DataFlow(state, data, execution, time.time())
    effective = flow.effective_input()
    rule, next_name = flow.choose(state.choices, state.default, effective)
    return flow.finish(effective, rule), next_name


def _shown(value: Any) -> str:
    """A value as AWS quotes it in a cause: a string bare, anything else as JSON."""
    return value if isinstance(value, str) else compact_json(value)


def _wait_until(value: Any) -> float | None:
    """Seconds since the epoch of a Wait timestamp, or None when it is not one.

    "Timestamps must conform to the RFC3339 profile of ISO 8601, with the further
    restrictions that an uppercase T must separate the date and time portions, and an
    uppercase Z must denote that a numeric time zone offset is not present" (ASL
    specification, Timestamps): "2016-12-05 21:29:29Z" and "2016-12-05T21:29:29" are
    refused, as AWS refused them (LocalStack's test_wait_timestamp_path[NO_T], [NO_Z]).
    """
    parsed = choice.parse_timestamp(value) if isinstance(value, str) else None
    if parsed is None:
        return None
    instant, nanos = parsed
    return instant.timestamp() + nanos / 1e9


def _wait_seconds_path(state: Wait, effective: Any, flow: DataFlow) -> float:
    """SecondsPath's value, in AWS's words when it is not a non-negative integer
    (LocalStack's test_base_wait_seconds_path[-1], [1.5]; test_base_wait_seconds_path
    of its logs tests for a path to nothing)."""
    path = str(state.seconds_path)
    try:
        value = flow.read(effective, path)
    except jsonpath.PathNotFound:
        raise StatesError(RUNTIME, "The SecondsPath parameter does not reference an input "
                                   f"value: {path}") from None
    if not isinstance(value, int) or isinstance(value, bool):
        raise StatesError(RUNTIME, "The SecondsPath parameter cannot be parsed as a long "
                                   f"value: {path} == {_shown(value)}")
    if value < 0:
        raise StatesError(RUNTIME, "The SecondsPath parameter references a negative value: "
                                   f"{path} == {value}")
    return float(value)


def _wait_timestamp(state: Wait, effective: Any, flow: DataFlow) -> float:
    """The instant a Wait with Timestamp or TimestampPath waits for, in AWS's words when
    it is not a timestamp (LocalStack's test_wait_timestamp_path and
    test_wait_timestamp_jsonata: States.Runtime for the path, States.QueryEvaluationError
    for a JSONata expression)."""
    if state.timestamp is not None:
        value = _jsonata_string(flow, state.timestamp, "Timestamp")
        when = _wait_until(value)
        if when is None:
            error = QUERY_EVALUATION_ERROR if flow.jsonata else RUNTIME
            raise located(StatesError(error, "The Timestamp field cannot be parsed as an "
                                             "ISO-8601 extended offset date-time format "
                                             f"string: {_shown(value)}"), "Timestamp")
        return when
    path = str(state.timestamp_path)  # the validator required one of the four
    try:
        value = flow.read(effective, path)
    except jsonpath.PathNotFound:
        raise StatesError(RUNTIME, "The TimestampPath parameter does not reference an input "
                                   f"value: {path}") from None
    when = _wait_until(value)
    if when is None:
        raise StatesError(RUNTIME, "The TimestampPath parameter does not reference a valid "
                                   "ISO-8601 extended offset date-time format string: "
                                   f"{path} == {_shown(value)}")
    return when


def _wait(state: Wait, data: Any, execution: Execution) -> Transition:
    flow = DataFlow(state, data, execution, time.time())
    effective = flow.effective_input()
    if state.seconds is not None:
        seconds = float(flow.number(state.seconds, "Seconds", minimum=0))
    elif state.seconds_path is not None:
        seconds = _wait_seconds_path(state, effective, flow)
    else:
        seconds = _wait_timestamp(state, effective, flow) - time.time()
    if seconds > 0:
        execution.sleep(seconds)
    return flow.finish(effective), state.next


def _succeed(state: Succeed, data: Any, execution: Execution) -> Transition:
    flow = DataFlow(state, data, execution, time.time())
    return flow.finish(flow.effective_input()), None


def _dynamic(expression: str, data: Any, flow: DataFlow) -> Any:
    """A ``*Path`` field of a Fail state: a reference path or an intrinsic function."""
    if intrinsics.is_intrinsic(expression):
        return intrinsics.evaluate(expression, data, flow.context, flow.variables)
    return flow.read(data, expression)


def _jsonata_string(flow: DataFlow, value: str | None, field: str) -> str | None:
    """A string field that a JSONata state may write as an expression (Fail's Error and
    Cause, Wait's Timestamp): its value, which must be a string."""
    if value is None or not flow.jsonata:
        return value
    result = flow.evaluate(value, field)
    if not isinstance(result, str):
        raise StatesError(QUERY_EVALUATION_ERROR, f"The field '{field}' of state "
                                                  f"'{flow.state.name}' must be a string, "
                                                  f"got {compact_json(result)}")
    return result


def _fail(state: Fail, data: Any, execution: Execution) -> Transition:
    flow = DataFlow(state, data, execution, time.time())
    error = _jsonata_string(flow, state.error, "Error")
    cause = _jsonata_string(flow, state.cause, "Cause")
    if state.error_path is not None:
        error = _fail_path(state.error_path, "ErrorPath", data, flow)
    if state.cause_path is not None:
        cause = _fail_path(state.cause_path, "CausePath", data, flow)
    raise StatesError(error, cause)


def _fail_path(expression: str, field: str, data: Any, flow: DataFlow) -> Any:
    """A Fail state's ErrorPath or CausePath; a path to nothing in AWS's words
    (LocalStack's test_invalid_jsonpath[INVALID_JSONPATH_IN_ERRORPATH], [..._CAUSEPATH])."""
    try:
        value = _dynamic(expression, data, flow)
    except jsonpath.PathNotFound as exc:
        raise StatesError(RUNTIME, f"The JSONPath '{exc.path}' specified for the field "
                                   f"'{field}' could not be found in the input "
                                   f"'{compact_json(data)}'") from None
    # "the reference path must select a field whose value is a string" (AWS's Fail
    # state); worded as AWS words the same mistake in a Map's *Path fields.
    if not isinstance(value, str):
        raise StatesError(RUNTIME, f'The {field} field refers to value "{compact_json(value)}" '
                                   f"which is not a valid string: {expression}")
    return value


def _parallel(state: Parallel, data: Any, execution: Execution) -> Transition:
    entered = time.time()
    started = [False]  # whether this attempt's branches started: ParallelStateFailed

    def attempt(retry_count: int) -> Any:
        started[0] = False
        flow = DataFlow(state, data, execution, entered, retry_count)
        effective = flow.effective_input()
        execution.emit("ParallelStateStarted")
        work = [BranchJob.make(state, i, branch, effective, execution)
                for i, branch in enumerate(state.branches)]
        started[0] = True
        outcomes = execution.run_parallel(
            work, 0, describe=lambda i: f"branch {i} of Parallel '{state.name}'",
            stop_on_error=True, state=state, inputs=[effective] * len(work))
        _raise_first_failure(outcomes)
        execution.emit("ParallelStateSucceeded", link=False)
        return flow.finish([outcome.value for outcome in outcomes])

    return with_error_handling(state, data, execution, attempt, entered,
                               _failed_events(state, execution, started))


def _failed_events(state: Task | Parallel | Map, execution: Execution,
                   started: list[bool] | None = None) -> Callable[[StatesError], None]:
    """The events of a Task, Parallel or Map failing (no retry follows), as AWS recorded
    them (LocalStack's test_base_scenarios): a JSONata evaluation error's
    EvaluationFailed, and a Parallel's or Map's ParallelStateFailed/MapStateFailed, which
    an error of its branches or iterations, or of an evaluation, gets (an error of a
    JSONPath field before them gets none)."""
    def failed(err: StatesError) -> None:
        evaluation = err.error == QUERY_EVALUATION_ERROR
        if evaluation:
            _evaluation_failed(state, execution, err, before_entry=True)
        if started is not None and (evaluation or started[0]):
            execution.emit(f"{type(state).__name__}StateFailed")
    return failed


_FIELD_IN_CAUSE = re.compile(r"specified for the field '([^']*)'")


def _evaluation_failed(state: State, execution: Execution, err: StatesError,
                       before_entry: bool) -> None:
    """EvaluationFailed: error, cause (as the execution's), state and the field.
    ``before_entry``: it links to the event before the state's entry (as in every
    recording but a Wait's: LocalStack's test_map_state_items_input_types,
    test_undefined_reference, test_wait_timestamp_jsonata), else to the entry."""
    err.evaluation_recorded = True
    entered, before = execution.entered
    if before_entry:
        execution.source = before
    if execution.events is None:
        execution.emit("EvaluationFailed")
        return
    named = _named(err, state, entered)
    details = {"error": named.error, "cause": named.cause, "state": state.name}
    # The field, as deep as the cause names it ("Output/result"), else as evaluated.
    named_field = _FIELD_IN_CAUSE.search(named.cause or "")
    location = named_field[1] if named_field else getattr(err, "location", None)
    if location:
        details["location"] = location
    execution.emit("EvaluationFailed", {"evaluationFailedEventDetails": details})


def _raise_first_failure(outcomes: list[Outcome]) -> None:
    """A Parallel or Map fails with the error of its first failed branch or iteration."""
    for outcome in outcomes:
        if outcome.error is not None and not outcome.cancelled:
            raise outcome.error


@dataclass(frozen=True)
class BranchJob:
    """One Parallel branch or Map iteration: callable, so a fresh fork or a thread just
    runs it, and described (state, index, input), so a pre-forked worker can rebuild it."""

    state: Parallel | Map
    index: int  # the branch of a Parallel, the item of a Map
    machine: Machine
    data: Any
    execution: Execution

    @classmethod
    def make(cls, state: Parallel | Map, index: int, machine: Machine, data: Any,
             execution: Execution) -> BranchJob:
        # The branch's variable scope is made here, in the parent: a forked child
        # inherits it; a pool worker is sent its variables.
        return cls(state, index, machine, data, execution.for_branch())

    def __call__(self) -> Any:
        return run_job(self.state, self.index, self.machine, self.data, self.execution)


def run_job(state: Parallel | Map, index: int, machine: Machine, data: Any,
            execution: Execution) -> Any:
    """Run one branch or iteration (wherever it runs) with its history events: a Map
    iteration's MapIterationStarted, Succeeded or Failed; the events go back to the
    section's process if this is another (``history.finish_job``)."""
    is_map = type(state) is Map
    try:
        if is_map:
            _emit_iteration("MapIterationStarted", state, index, execution)
        output = run_machine(machine, data, execution)
        if is_map:
            _emit_iteration("MapIterationSucceeded", state, index, execution,
                           link=False)
        return output
    except BaseException:
        if is_map:
            _emit_iteration("MapIterationFailed", state, index, execution,
                           link=False)
        if type(execution.state) is Task:
            # The Task the run failed in ends aborted, after the iteration's failure,
            # linked to the failing event (LocalStack's recorded test_parallel_catch_error
            # and test_service_lambda_map_timeout). A Fail state gets none (map_catch).
            execution.emit("TaskStateAborted", link=False)
        raise
    finally:
        history.finish_job(execution, execution.owner_pid)


def _emit_iteration(kind: str, state: State, index: int, execution: Execution,
                    link: bool = True) -> None:
    execution.emit(kind, None if execution.events is None else
                   {f"m{kind[1:]}EventDetails": {"index": index, "name": state.name}}, link)


def _map_items(state: Map, effective: Any, flow: DataFlow) -> list[Any]:
    if flow.jsonata:
        # The causes AWS recorded (LocalStack's test_map_state_items_eval_jsonata_fail_*,
        # test_map_state_items_input_types_*).
        if not state.has_items:
            if not isinstance(effective, list):
                raise StatesError(QUERY_EVALUATION_ERROR, "Map state input must be an array "
                                                          f"but was: {compact_json(effective)}")
            return effective
        items = flow.evaluate(state.items, "Items")
        if not isinstance(items, list):
            kind = json_type(items)
            shown = expression_text(state.items) if is_expression(state.items) else state.items
            where = f"The JSONata expression '{shown}' specified for the field 'Items' returned"
            if kind not in ("null", "boolean", "number", "string", "object"):
                raise located(StatesError(QUERY_EVALUATION_ERROR,
                                          f"{where} an unsupported result type."), "Items")
            raise located(StatesError(
                QUERY_EVALUATION_ERROR, f"{where} an unexpected result type. Expected "
                f"'array', but was '{kind}' for value: {compact_json(items)}"), "Items")
        return items
    try:
        items = flow.read(effective, state.items_path)
    except jsonpath.PathNotFound:
        raise StatesError(RUNTIME, f"Invalid path '{state.items_path}': No results for "
                                   f"path in Map state '{state.name}'") from None
    if not isinstance(items, list):
        raise StatesError(RUNTIME, f"Map state '{state.name}': ItemsPath "
                                   f"'{state.items_path}' must select a JSON array, "
                                   f"got {type(items).__name__}")
    return items


@overload
def _limit_from_path(flow: DataFlow, effective: Any, field: str, path: str,
                     kind: Literal["integer"] = "integer") -> int: ...
@overload
def _limit_from_path(flow: DataFlow, effective: Any, field: str, path: str,
                     kind: Literal["float"]) -> float: ...


def _limit_from_path(flow: DataFlow, effective: Any, field: str, path: str,
                     kind: str = "integer") -> int | float:
    """A Map limit read through its ``*Path`` field from the effective input, checked as
    AWS checks it (its causes as AWS recorded them, e.g. LocalStack's snapshot tests
    test_max_concurrency_path and test_map_state_tolerated_failure_*_path): a number, or
    a string that parses as an integer."""
    try:
        value = flow.read(effective, path)
    except jsonpath.PathNotFound as exc:
        raise StatesError(RUNTIME, f"The {field} field refers to a path that does not exist "
                                   f"in the input: {path} ({exc})") from None
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            pass
    if kind == "float" and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    wanted = float if kind == "float" else int
    if not isinstance(value, wanted) or isinstance(value, bool):
        shown = value if isinstance(value, str) else compact_json(value)
        raise StatesError(RUNTIME, f'The {field} field refers to value "{shown}" which is '
                                   f"not a valid {kind}: {path}")
    return value


def _max_concurrency(state: Map, effective: Any, flow: DataFlow) -> int:
    if state.max_concurrency_path is None:
        limit: int = flow.number(state.max_concurrency, "MaxConcurrency", minimum=0)
        return limit
    value = _limit_from_path(flow, effective, "MaxConcurrencyPath", state.max_concurrency_path)
    if value < 0:
        raise StatesError(RUNTIME, "Expected non-negative integer for MaxConcurrency, got "
                                   f"'{value}' instead.")
    return int(value)


def _tolerance(state: Map, effective: Any, flow: DataFlow
               ) -> tuple[int | None, float | None]:
    """The Map's ToleratedFailureCount and ToleratedFailurePercentage (None: not set)."""
    if state.tolerated_failure_count_path is not None:
        count = _limit_from_path(flow, effective, "ToleratedFailureCountPath",
                                 state.tolerated_failure_count_path)
        if count < 0:
            raise StatesError(RUNTIME, "ToleratedFailureCount cannot be negative.")
    else:
        count = flow.number(state.tolerated_failure_count, "ToleratedFailureCount", minimum=0)
    if state.tolerated_failure_percentage_path is not None:
        percentage = _limit_from_path(flow, effective, "ToleratedFailurePercentagePath",
                                      state.tolerated_failure_percentage_path, kind="float")
        if not 0 <= percentage <= 100:
            raise StatesError(RUNTIME, "ToleratedFailurePercentage must be between 0 and 100.")
    else:
        percentage = flow.number(state.tolerated_failure_percentage,
                                 "ToleratedFailurePercentage", minimum=0)
    return count, percentage


def _tolerated(failures: int, total: int, count: int | None, percentage: float | None
               ) -> bool:
    """Whether a Map's failed iterations stay within its thresholds: "If you specify
    both ... the Map Run fails when it exceeds either threshold" (AWS: failure
    thresholds for Distributed Map states), so every threshold given must hold."""
    if count is not None and failures > count:
        return False
    if percentage is not None and total > 0 and failures * 100.0 / total > percentage:
        return False
    return True


def _map(state: Map, data: Any, execution: Execution) -> Transition:
    entered = time.time()
    tolerant = any(limit is not None for limit in (
        state.tolerated_failure_count, state.tolerated_failure_percentage,
        state.tolerated_failure_count_path, state.tolerated_failure_percentage_path))

    started = [False]  # whether this attempt's iterations started: MapStateFailed

    def attempt(retry_count: int) -> Any:
        started[0] = False
        flow = DataFlow(state, data, execution, entered, retry_count)
        effective = flow.effective_input()
        # In AWS's order: MaxConcurrency, the items, MapStateStarted, then the failure
        # tolerance (LocalStack's state_map.py follows AWS's event ids there).
        max_concurrency = _max_concurrency(state, effective, flow)
        items = _map_items(state, effective, flow)
        execution.emit("MapStateStarted", None if execution.events is None else
                       {"mapStateStartedEventDetails": {"length": len(items)}})
        tolerated_count, tolerated_percentage = _tolerance(state, effective, flow)
        inputs = []
        for index, item in enumerate(items):
            if state.has_item_selector:
                item_ctx = execution.context(state.name, entered, None, (index, item))
                inputs.append(flow.evaluate(state.item_selector, "ItemSelector", item_ctx)
                              if flow.jsonata
                              else flow.template(state.item_selector, effective, item_ctx))
            else:
                inputs.append(item)
        if state.distributed:
            execution.emit("MapRunStarted", None if execution.events is None else
                           {"mapRunStartedEventDetails": {"mapRunArn": _map_run_arn(
                               state, execution)}})
        work = [BranchJob.make(state, i, state.iterator, item, execution)
                for i, item in enumerate(inputs)]
        started[0] = True
        outcomes = execution.run_parallel(
            work, max_concurrency,
            describe=lambda i: f"iteration {i} of Map '{state.name}'",
            stop_on_error=not tolerant, state=state, inputs=inputs)
        try:
            if not tolerant:
                _raise_first_failure(outcomes)
            failures = [o for o in outcomes if o.error is not None]
            if not _tolerated(len(failures), len(outcomes), tolerated_count,
                              tolerated_percentage):
                # AWS's words (LocalStack's recorded test_state_configuration snapshot)
                raise StatesError(EXCEED_TOLERATED_FAILURE_THRESHOLD,
                                  "The specified tolerated failure threshold was exceeded")
        except StatesError as err:
            if state.distributed:
                execution.emit("MapRunFailed", None if execution.events is None else
                               {"mapRunFailedEventDetails": _error_details(err)})
            raise
        if state.distributed:
            execution.emit("MapRunSucceeded")
        execution.emit("MapStateSucceeded", link=False)
        return flow.finish([o.value if o.error is None else o.error.to_json()
                            for o in outcomes])

    return with_error_handling(state, data, execution, attempt, entered,
                               _failed_events(state, execution, started))


def _map_run_arn(state: Map, execution: Execution) -> str:
    """A distributed Map's map run, named as AWS names it (its workflow, the state, an
    id)."""
    machine = execution.context_base["StateMachine"]["Name"]
    return (f"arn:aws:states:{REGION}:{ACCOUNT}:mapRun:{machine}/{state.name}:"
            f"{uuid.uuid4()}")


def _error_details(err: StatesError) -> dict[str, str]:
    """An error's ``error`` and ``cause`` in an event's details; an absent one left out."""
    return {key: value for key, value in (("error", err.error), ("cause", err.cause))
            if value is not None}


_EXECUTORS: dict[type, Callable[[Any, Any, Execution], Transition]] = {
    Pass: _pass, Task: _task, Choice: _choice, Wait: _wait, Succeed: _succeed,
    Fail: _fail, Parallel: _parallel, Map: _map,
}
