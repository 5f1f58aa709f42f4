"""One workflow execution: its context object, deadline, options and function calls.

The state executors (``states.py``) decide *what* happens; the execution's isolation mode
(:mod:`modes`) decides *where* a function runs -- on its own thread (state passed by
reference), in its warm sandboxed process (``--isolation process``), inside its
protection domain (``mpk``) or in a forked process (``-P``) -- and this module makes the
call there, with the deadline and the function's timeout. Parallel work runs on the
section runner it is handed, in forked processes, or on threads for the ``-Th`` variant.
"""

from __future__ import annotations

import contextvars
import copy
import functools
import math
import os
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from ..asl.errors import RUNTIME, TIMEOUT, StatesError, unexpected_cause
from ..asl.jsonvalue import detach
from ..asl.model import PROCESS, THREAD
from ..asl.variables import Variables
from ..options import PARALLEL_THREADS, Options
from . import history, modes, trace
from .forking import Outcome, run_forked
from .functions import (
    DEFAULT_TIMEOUT_SECONDS,
    EXIT_ERROR,
    FunctionRegistry,
    FunctionSpec,
    Invocable,
    timed_out,
)
from .invoke import timed_invoke
from .lambda_context import ACCOUNT, REGION
from .threads import POOL, Last, Step, WorkerTimeout


class ExecutionTimedOut(StatesError):
    """The workflow's own TimeoutSeconds expired: fails the execution, never caught."""

    def __init__(self, seconds: float) -> None:
        super().__init__(TIMEOUT, f"The execution timed out after {seconds:g} seconds")


def iso_time(timestamp: float) -> str:
    """A ``time.time()`` instant as Step Functions writes timestamps (ms, 'Z')."""
    when = datetime.fromtimestamp(timestamp, UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def iso_now() -> str:
    """The current instant as Step Functions writes timestamps (ms, 'Z')."""
    return iso_time(time.time())


class SectionRunner(Protocol):
    """Where a Parallel or Map section runs, when not on this process's threads: the
    Orchestrator hands one in (``parallel.sections``). ``None``: fork a child per worker."""

    def run(self, execution: Execution, state: Any, work: Sequence[Callable[[], Any]],
            inputs: Sequence[Any] | None, workers: int, budget: int, max_concurrency: int,
            describe: Callable[[int], str], stop_on_error: bool) -> list[Outcome] | None: ...


class Execution:
    """State shared by every state of one workflow execution (and its forked children).

    ``variables`` is the one part that is per (sub-)machine run: :meth:`for_branch` gives
    a Parallel branch or Map iteration its own view with an inner variable scope.
    """

    def __init__(self, workflow_name: str, execution_input: Any, functions: FunctionRegistry,
                 options: Options, timeout_seconds: float | None = None,
                 execution_name: str | None = None,
                 sections: SectionRunner | None = None,
                 mode: modes.Mode | None = None) -> None:
        self.functions = functions
        self.options = options
        # Where its functions run and how they are called: the Orchestrator's, built
        # once; else (a branch's copy in a worker, a test) made from the options.
        self.mode = mode or modes.for_registry(options, functions)
        self.sections = sections  # None: every section forks (or runs on threads)
        self.name = execution_name or str(uuid.uuid4())
        self.timeout_seconds = timeout_seconds
        self._next_event = 2  # 1 is ExecutionStarted
        self._first_id = 2  # this (sub-)machine run's first id: used_ids()
        self.source = 0  # the previousEventId of this run's next event (history.py)
        self.events: list[dict[str, Any]] | None = [] if history.enabled else None
        self.owner_pid = os.getpid()  # the process that merges this run's events
        self.entered = (0, 0)  # the current state's entry event: its id and previous id
        self.state: Any = None  # the state this run entered last (its current one)
        self.assigned: dict[str, Any] | None = None  # its Assign, for its exit event
        self.deadline = None if timeout_seconds is None else time.monotonic() + timeout_seconds
        machine_arn = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{workflow_name}"
        self.context_base: dict[str, Any] = {
            "Execution": {
                "Id": f"arn:aws:states:{REGION}:{ACCOUNT}:execution:{workflow_name}:{self.name}",
                "Input": execution_input,
                "Name": self.name,
                "RoleArn": f"arn:aws:iam::{ACCOUNT}:role/faastlane-{workflow_name}",
                "StartTime": iso_now(),
                "RedriveCount": 0,
            },
            "StateMachine": {"Id": machine_arn, "Name": workflow_name},
        }
        self.variables = Variables()

    @functools.cached_property
    def activation_env(self) -> dict[str, str]:
        """:func:`activation_environment`, read at the execution's first need of it (it
        belongs to the activation: a walk of os.environ at every call cost ~50 us)."""
        return activation_environment()

    def for_branch(self) -> Execution:
        """This execution as a Parallel branch or Map iteration sees it: the same
        deadline, functions and context, and an inner scope over the current variables
        (readable there, not assignable; the branch's own are dropped when it ends).
        Its history event ids start where the section's start left them, as if it ran
        alone (``history.merge`` lays the branches out when they end)."""
        branch = copy.copy(self)
        branch.variables = self.variables.inner()
        branch.number_events_from(self.next_id())
        branch.events = None if self.events is None else []
        branch.owner_pid = os.getpid()
        branch.assigned = None
        branch.state = None
        return branch

    # ------------------------------------------------------------------ history events

    def next_id(self) -> int:
        """The id the next history event gets."""
        return self._next_event

    def number_events_from(self, first: int) -> None:
        """This run's events are numbered from ``first`` (a branch, or a job in a pool
        worker: ids continue from where the section's start left them)."""
        self._next_event = self._first_id = first

    def used_ids(self) -> int:
        return self._next_event - self._first_id

    def skip_ids(self, count: int) -> None:
        self._next_event += count

    def numbered(self, count: int) -> None:
        """``count`` events, each linked to the one before, when no history is kept:
        only their ids are taken (as :meth:`emit` would, ``count`` times)."""
        self._next_event += count
        self.source = self._next_event - 1

    def _take_id(self) -> int:
        event_id = self._next_event
        self._next_event += 1
        return event_id

    def emit(self, kind: str, details: dict[str, Any] | None = None,
             link: bool = True) -> int:
        """Number one history event (and record it, when the history is on): its id.
        ``details`` is built by callers only when ``self.events`` is not None."""
        event_id = self._take_id()
        if self.events is not None:
            event = {"timestamp": history.timestamp(), "type": kind, "id": event_id,
                     "previousEventId": self.source}
            if details:
                event.update(details)
            self.events.append(event)
        if link:
            self.source = event_id
        return event_id

    def enter_state(self, state: Any, data: Any) -> int:
        """Record entry into ``state`` with input ``data``: the event's id, which error
        causes cite ("entered at the event id #N")."""
        before = self.source
        self.state = state
        if self.events is None:  # only numbered: the common case, kept short
            event_id = self.source = self._take_id()
        else:
            event_id = self.emit(f"{type(state).__name__}StateEntered", {
                "stateEnteredEventDetails": {"name": state.name, "input": history.data(data),
                                             "inputDetails": history.NOT_TRUNCATED}})
        self.entered = (event_id, before)
        return event_id

    def exit_state(self, state: Any, output: Any) -> None:
        if self.events is None:
            self.source = self._take_id()
            return
        kind = f"{type(state).__name__}StateExited"
        details = {"name": state.name, "output": history.data(output),
                   "outputDetails": history.NOT_TRUNCATED}
        if self.assigned:
            details["assignedVariables"] = {name: history.data(value)
                                            for name, value in self.assigned.items()}
            details["assignedVariablesDetails"] = history.NOT_TRUNCATED
            self.assigned = None
        self.emit(kind, {"stateExitedEventDetails": details})

    # ------------------------------------------------------------------ context object

    def context(self, state_name: str, entered: float, retry_count: int | None = None,
                map_item: tuple[int, Any] | None = None) -> dict[str, Any]:
        """The ``$$`` object for a state entered at ``entered`` (``time.time()``);
        ``map_item`` while building a Map iteration. ``retry_count``: a Task's, which
        only Task states have (AWS gives other states' ``$$.State`` only ``Name`` and
        ``EnteredTime``: LocalStack's recorded test_context_object tests)."""
        ctx = dict(self.context_base)
        ctx["State"] = {"EnteredTime": iso_time(entered), "Name": state_name}
        if retry_count is not None:
            ctx["State"]["RetryCount"] = retry_count
        if map_item is not None:
            ctx["Map"] = {"Item": {"Index": map_item[0], "Value": map_item[1]}}
        return ctx

    def check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise ExecutionTimedOut(self.timeout_seconds or 0)

    def remaining(self, limit: float | None = None) -> float | None:
        """Seconds left before the nearer of ``limit`` and the workflow's deadline."""
        left = None if self.deadline is None else self.deadline - time.monotonic()
        if limit is None:
            return left
        return limit if left is None else min(limit, left)

    def sleep(self, seconds: float) -> None:
        """Wait, but never past the workflow's deadline."""
        left = self.remaining(seconds)
        if left is not None and left > 0:
            time.sleep(left)
        self.check_deadline()

    # ------------------------------------------------------------------ functions

    def call_function(self, state_name: str, function: str, event: Any,
                      timeout_seconds: float | None, placement: str) -> Any:
        """Run one function invocation where the plan says; return its detached result."""
        return self.mode.call(self, state_name, function, event, timeout_seconds, placement)

    def _limits(self, spec: FunctionSpec, timeout_seconds: float | None
                ) -> tuple[float | None, float]:
        """The wait's limit and the call's timeout: the nearer of the Task's
        TimeoutSeconds (States.Timeout) and the function's own (Lambda stops it:
        Sandbox.Timedout); the timeout negative where it is the function's."""
        own = function_timeout(spec)
        if timeout_seconds is None or timeout_seconds > own:
            timeout_seconds = -own
        return self.remaining(abs(timeout_seconds)), timeout_seconds

    def call_loaded(self, state_name: str, loaded: Invocable, event: Any,
                    timeout_seconds: float | None, where: str) -> Any:
        """Call a function imported here: on its warm thread, or in a forked process
        (``where`` is ``PROCESS``)."""
        limit, timeout = self._limits(loaded.spec, timeout_seconds)
        if where == PROCESS:
            return self._call_in_process(state_name, loaded, event, limit, timeout)
        return self._call_on_thread(state_name, loaded, event, limit, timeout)

    def call_sandboxed(self, state_name: str, spec: FunctionSpec, event: Any,
                       timeout_seconds: float | None) -> Any:
        """Call a function in its warm sandboxed process."""
        limit, timeout = self._limits(spec, timeout_seconds)
        return self._call_in_sandbox(state_name, spec, event, limit, timeout)

    def relays(self, placement: str) -> bool:
        """Whether a Task placed at ``placement`` may run in a relay (``states.py``): on
        a warm thread, shared memory, no deadline but the functions' own (the relay's
        waiter watches those: :class:`RelayWatch`); the mode says."""
        return self.mode.relays(self, placement)

    def function_step(self, state_name: str, function: str, event: Any,
                      then: Callable[[Any, StatesError | None], Step | Last | None],
                      watch: RelayWatch, fault: Callable[[BaseException], Last]) -> Step:
        """The relay step that runs one invocation on the relay's thread, in the
        function's own context variables, and then ``then(result, error)`` -- unless
        ``watch`` (the relay's waiter) gave up on it at its function's timeout. The
        function is looked up now (a missing one fails here). Anything else the step
        raises (a BaseException the invocation does not turn into an ASL error, a fault of
        the runtime) goes to ``fault``: the relay's waiter must hear of it, not hang.
        Only where :meth:`relays` says."""
        loaded = self.mode.invocable(self.functions, function)
        seconds = function_timeout(loaded.spec)

        def step() -> Step | Last | None:
            try:
                ticket = watch.started(state_name, seconds)
                own = CONTEXTS.take(function)
                try:
                    outcome = own.run(timed_invoke, state_name, loaded, event, seconds,
                                      THREAD)
                finally:
                    CONTEXTS.give_back(function, own)
                if not watch.finished(ticket):
                    return None  # timed out: the relay ended without it
                return then(*outcome)
            except BaseException as exc:  # noqa: BLE001 - handed to the relay's waiter
                return fault(exc)

        return step

    def _call_on_thread(self, state_name: str, loaded: Invocable, event: Any,
                        limit: float | None, timeout_seconds: float) -> Any:
        deadline = None if limit is None else time.monotonic() + limit

        def body() -> tuple[Any, StatesError | None, float]:
            result, error = timed_invoke(state_name, loaded, event, abs(timeout_seconds),
                                         THREAD)
            return result, error, time.monotonic()

        try:
            result, error, ended = POOL.run(loaded.spec.name, body, limit)
        except WorkerTimeout:
            ended = math.inf
        # Returned past the Task's deadline: timed out, however late a busy machine woke
        # this waiter.
        if deadline is not None and ended > deadline:
            self.check_deadline()
            raise timeout_error(state_name, timeout_seconds) from None
        if error is not None:
            raise error
        return result

    def _call_in_process(self, state_name: str, loaded: Invocable, event: Any,
                         limit: float | None, timeout_seconds: float) -> Any:
        def body() -> Any:
            result, error = timed_invoke(state_name, loaded, event, abs(timeout_seconds),
                                          PROCESS)
            if error is not None:
                raise error
            return result

        deadline = None if limit is None else time.monotonic() + limit
        [outcome] = run_forked([body], 1, deadline=deadline,
                               describe=lambda _: f"function '{loaded.spec.name}'")
        trace.extend(outcome.records)
        if outcome.error is not None:
            if outcome.error.error == TIMEOUT:
                self.check_deadline()
                raise timeout_error(state_name, timeout_seconds)
            raise outcome.error
        return outcome.value

    def _call_in_sandbox(self, state_name: str, spec: FunctionSpec, event: Any,
                         limit: float | None, timeout_seconds: float) -> Any:
        sandboxes = self.functions.sandboxes
        assert sandboxes is not None
        # The deadline is the Task's, from now, whatever the sandbox's queue: the
        # sandbox says when its function returned past it (CLOCK_MONOTONIC is the
        # machine's, the same in every process).
        request = {"state": state_name, "event": event, "timeout": abs(timeout_seconds),
                   "trace": trace.enabled, "env": self.activation_env,
                   "deadline": None if limit is None else time.monotonic() + limit}
        try:
            reply = sandboxes.call(spec.name, request, limit)
        except CallTimedOut:
            self.check_deadline()
            raise timeout_error(state_name, timeout_seconds) from None
        trace.extend(reply.get("trace") or [])
        if "error" in reply:
            raise StatesError(str(reply["error"]), str(reply.get("cause", "")))
        return reply.get("value")

    # ------------------------------------------------------------------ parallel work

    def run_parallel(self, work: Sequence[Callable[[], Any]], max_concurrency: int,
                     describe: Callable[[int], str], stop_on_error: bool,
                     state: Any = None, inputs: Sequence[Any] | None = None
                     ) -> list[Outcome]:
        """Run independent sub-machines (branches, iterations) side by side.

        ``state`` (the Parallel or Map) and ``inputs`` (each job's input) let the
        section runner apply the plan's placement: threads, warm workers, or groups in
        other containers.
        """
        budget = self.options.cpu_budget()
        workers = min(budget, max_concurrency) if max_concurrency > 0 else budget
        outcomes = None
        if self.options.parallel == PARALLEL_THREADS:
            limit = max_concurrency if max_concurrency > 0 else len(work)
            outcomes = run_on_threads(work, limit, stop_on_error)
        elif self.sections is not None and state is not None:
            outcomes = self.sections.run(self, state, work, inputs, workers, budget,
                                         max_concurrency, describe, stop_on_error)
        if outcomes is None:
            outcomes = run_forked(work, workers, describe=describe,
                                  stop_on_error=stop_on_error, deadline=self.deadline)
        self._merge_history(work, outcomes, state)
        for outcome in outcomes:
            trace.extend(outcome.records)
        self.check_deadline()
        return outcomes

    def _merge_history(self, work: Sequence[Callable[[], Any]], outcomes: list[Outcome],
                       state: Any) -> None:
        """Take in the history events the jobs numbered (``history.merge``), and make
        their causes cite the ids the events have now."""
        base = self.next_id()
        jobs = []
        for job, outcome in zip(work, outcomes, strict=True):
            sent = history.job_events(outcome.records)  # from a fork or a pool worker
            if getattr(state, "distributed", False):
                continue  # a map run: AWS records its iterations in child executions
            if sent is None:
                branch = getattr(job, "execution", None)  # ran on a thread here, or not
                if isinstance(branch, Execution) and branch.owner_pid == os.getpid():
                    sent = history.JobEvents(branch.events, branch.used_ids(), branch.source)
            jobs.append(sent)
        if not jobs:
            return
        succeeded = all(outcome.error is None for outcome in outcomes)
        is_map = type(state).__name__ == "Map"
        if is_map and not succeeded and not _tolerates_failures(state):
            # Laid out one after the other, a failed Map's iterations end at the first
            # that failed (later ones that ran meanwhile are left out, as on AWS).
            first = next(i for i, o in enumerate(outcomes) if o.error is not None)
            jobs = jobs[:first + 1]
        offsets = history.merge(self, base, jobs, is_map, succeeded)
        for outcome, offset in zip(outcomes, offsets, strict=False):  # jobs cut short
            if outcome.error is not None and offset:
                outcome.error.cause = history.recite(outcome.error.cause, base, offset)


def _tolerates_failures(state: Any) -> bool:
    return any(getattr(state, field, None) is not None for field in (
        "tolerated_failure_count", "tolerated_failure_percentage",
        "tolerated_failure_count_path", "tolerated_failure_percentage_path"))


def function_timeout(spec: FunctionSpec) -> float:
    """The function's own timeout (faastlane.json), in seconds."""
    return spec.timeout or DEFAULT_TIMEOUT_SECONDS


class CallTimedOut(Exception):
    """A call to a function in its sandbox outlived its limit (the sandbox was killed)."""


# Per-activation environment a function in another process must see as the Orchestrator
# does now (OpenWhisk's __OW_* variables, Lambda's trace id).
ACTIVATION_ENV = ("__OW_", "_X_AMZN_TRACE_ID")


def activation_environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith(ACTIVATION_ENV)}


def timeout_error(state_name: str, timeout_seconds: float) -> StatesError:
    """A Task's TimeoutSeconds expired (positive), or its function's timeout (negative)."""
    if timeout_seconds < 0:
        return timed_out(-timeout_seconds)
    return StatesError(TIMEOUT, f"Task '{state_name}' timed out after "
                                f"{timeout_seconds:g} seconds")


class RelayWatch:
    """The function invocation a relay (``states.py``) runs now and its deadline, for the
    relay's waiting thread: past the deadline it ends the relay with Sandbox.Timedout and
    the late invocation's thread, whenever it returns, passes nothing on.

    Per invocation: two uncontended lock round trips and a clock read (~0.3 us)."""

    POLL = 0.1  # seconds: the waiter looks again at least this often

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ticket = 0
        self.deadline: float | None = None
        self.state = ""
        self.seconds = 0.0
        self.abandoned = False

    def started(self, state: str, seconds: float) -> int:
        with self._lock:
            self._ticket += 1
            self.state, self.seconds = state, seconds
            self.deadline = time.monotonic() + seconds
            return self._ticket

    def finished(self, ticket: int) -> bool:
        """False when the waiter gave up on invocation ``ticket`` already, or would have:
        an invocation that returned past its deadline timed out, however late a busy
        machine woke the waiter (which then ends the relay with the timeout)."""
        with self._lock:
            if self.abandoned or ticket != self._ticket:
                return False
            if self.deadline is not None and time.monotonic() > self.deadline:
                return False
            self.deadline = None
            return True

    def wait(self) -> float:
        """How long the waiter may block before it looks again."""
        deadline = self.deadline
        if deadline is None:
            return self.POLL
        return min(self.POLL, max(0.0, deadline - time.monotonic()))

    def expired(self) -> StatesError | None:
        """The running invocation's timeout error once it is past its deadline (the
        relay then ends), else None."""
        with self._lock:
            if self.deadline is None or time.monotonic() < self.deadline:
                return None
            self.abandoned = True
            error = timed_out(self.seconds)
        error.state = self.state
        return error


class FunctionContexts:
    """Each function's own context variables (``contextvars``: the decimal module's
    context, numpy's error state, ...) for calls made on a relay's shared thread: what one
    function sets there, the next does not see, and its own next call does (as its own
    warm thread keeps them for its other calls). A call takes its function's context out
    (a context runs on one thread at a time); one made while another call holds it gets a
    fresh context, and the one given back last is kept -- as two warm Lambda containers
    of one function keep their own state, and either serves the next invocation."""

    def __init__(self) -> None:
        self._free: dict[str, contextvars.Context] = {}

    def take(self, function: str) -> contextvars.Context:
        # dict.pop is atomic: no lock on the hand-off's path.
        return self._free.pop(function, None) or contextvars.Context()

    def give_back(self, function: str, context: contextvars.Context) -> None:
        self._free[function] = context


CONTEXTS = FunctionContexts()


SECTION_THREADS = "faastlane:sections"  # their key in the warm thread pool


def run_on_threads(work: Sequence[Callable[[], Any]], limit: int,
                    stop_on_error: bool) -> list[Outcome]:
    """The -Th variant: branches as threads of this process, ``limit`` at a time."""
    outcomes: list[Outcome | None] = [None] * len(work)
    next_index = 0
    lock = threading.Lock()
    failed = threading.Event()

    def worker() -> None:
        nonlocal next_index
        while True:
            with lock:
                index = next_index
                next_index += 1
            if index >= len(work) or (stop_on_error and failed.is_set()):
                return
            try:
                outcomes[index] = Outcome(value=detach(work[index]()))
            except StatesError as exc:
                outcomes[index] = Outcome(error=exc)
                failed.set()
            except Exception as exc:  # noqa: BLE001 - an engine fault fails the branch
                outcomes[index] = Outcome(error=StatesError(RUNTIME, unexpected_cause(exc)))
                failed.set()

    # Warm threads (engine/threads.py), as function calls use: starting fresh ones cost
    # ~100 us each per section.
    count = max(1, min(limit, len(work)))
    finished = threading.Semaphore(0)

    def job() -> None:
        try:
            worker()
        finally:
            finished.release()

    for _ in range(count):
        POOL.start(SECTION_THREADS, job)
    for _ in range(count):
        finished.acquire()
    cancelled = StatesError(EXIT_ERROR, "cancelled: another branch failed")
    return [o if o is not None else Outcome(error=cancelled, cancelled=True) for o in outcomes]
