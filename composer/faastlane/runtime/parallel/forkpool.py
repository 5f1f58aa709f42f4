"""Pre-forked, warm worker processes for Parallel branches and Map iterations.

Forking a child per parallel section costs 10-40 ms on a loaded 2-core machine (page
tables of a process with numpy loaded, copy-on-write faults, reaping). The pool forks its
workers once, right after the Orchestrator has imported every function module, and
reuses them across parallel states and across the workflow instances the container
serves. A fork inherits a closure for free; a worker forked earlier cannot, so each job
travels as a description the worker can run with its own copy of the workflow:

    {"i": 3, "state": "Rules/ItemProcessor/...", "job": 3, "input": ..., "trace": false,
     "ctx": {execution name, context object, variables, deadline, options, ...}}

(``ctx`` only with a worker's first job of a parallel section.) The rules of
:mod:`forking` hold here too: JSON lines both ways and never pickle; the parent reads a
worker's result as it arrives and only reaps a worker it killed or saw die; a worker that
dies mid-job fails that job with ``Runtime.ExitError`` naming it and the signal, and is
replaced; a deadline or a failure under ``stop_on_error`` kills the busy workers.

Isolation. A reused worker keeps whatever an earlier job left in it (module globals,
threads, files, environment), so a branch can see what a previous branch, possibly of
another instance, left behind. That is what threads of the Orchestrator already share
under isolation ``none``, so the pool is used there for sections whose functions are all
trusted; under ``process`` isolation, whose isolated functions run in their own
sandboxes (``sandbox``): a worker only calls them, never runs their code; and under
``mpk``: a worker is forked after every function's protection domain was made, so each
function's private heap is keyed in the worker as in the Orchestrator, and a job enters
it through the same gate (a fault there is reported as the Orchestrator's is). Under
``-P``, and for a section that may call a function faastlane.json marks untrusted that
nothing isolates (``Mode.unconfined``), every worker is a fresh fork of the Orchestrator
(:func:`forking.run_forked`). A worker whose job failed is retired (it
may hold an abandoned thread still running user code) and a fresh one forked when needed.
Workers see the function modules as they were when forked: later changes to module state
in the Orchestrator (a cache a sequential function filled) do not reach them, as they
would not reach another Lambda container. A Parallel or Map nested inside a job runs on
the worker's threads (the -Th placement): every vCPU already has a worker.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import Any

from ..asl.errors import TIMEOUT, StatesError
from ..asl.model import Machine, Map, Parallel, State, Task, walk_states
from ..asl.variables import Variables, encoded_size
from ..engine import handoff_scope, history, trace
from ..engine.execution import Execution
from ..engine.forking import Outcome, died, job_message
from ..engine.functions import EXIT_ERROR, FunctionRegistry
from ..engine.modes import Mode
from ..interpreter.states import BranchJob, run_job
from ..options import PARALLEL_PROCESSES, PARALLEL_THREADS, Options
from .protocol import find_state, job_machine, section_of, state_keys

_CHUNK = 1 << 20

# Parent-side pipe ends of every pool of this process. Any forked child closes them, so a
# worker is never kept alive by another process holding its job pipe: when the
# Orchestrator exits, every worker reads end-of-file and exits too.
_PARENT_FDS: set[int] = set()


def _close_parent_fds() -> None:
    for fd in list(_PARENT_FDS):
        try:
            os.close(fd)
        except OSError:
            pass
    _PARENT_FDS.clear()


os.register_at_fork(after_in_child=_close_parent_fds)


@dataclass
class _Worker:
    pid: int
    job_fd: int  # parent writes jobs here
    result_fd: int  # parent reads results here
    buffer: bytearray = field(default_factory=bytearray)

    def alive(self) -> bool:
        try:
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return False
        return pid == 0


class ForkPool:
    """Warm workers of one Orchestrator; thread-safe, used only by the process that made it."""

    def __init__(self, name: str, workflow: Machine, functions: FunctionRegistry,
                 mode: Mode, untrusted: frozenset[str] = frozenset()) -> None:
        self.name = name
        self.workflow = workflow
        self.functions = functions
        self.mode = mode  # the Orchestrator's: whether its workers may run sections
        self.untrusted = untrusted
        self.keys = state_keys(workflow)
        self._owner = os.getpid()
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._live = 0  # workers forked and not yet reaped
        self._capacity = 0
        self._trusted: dict[int, bool] = {}
        self._closed = False
        self._finalizer = weakref.finalize(self, _shutdown, self._idle)

    # ------------------------------------------------------------------ policy

    def wanted(self, options: Options) -> bool:
        """Whether the workflow run with ``options`` would use the pool at all."""
        return (self.mode.pool_allowed(self.functions)
                and options.parallel == PARALLEL_PROCESSES
                and any(isinstance(s, (Parallel, Map)) and self._trusted_section(s)
                        for s in walk_states(self.workflow)))

    def _trusted_section(self, state: Parallel | Map) -> bool:
        """No function this Parallel/Map may call is one the mode leaves unconfined in a
        worker (marked untrusted, with neither a sandbox nor a domain)."""
        known = self._trusted.get(id(state))
        if known is None:
            machines = state.branches if isinstance(state, Parallel) else [state.iterator]
            calls = [s.function for m in machines for s in walk_states(m)
                     if isinstance(s, Task) and s.integration is None]
            # A Task naming its function at run time (FunctionName.$) may call any of them.
            known = not self.untrusted or all(f is not None and f not in self.untrusted
                                              for f in calls)
            self._trusted[id(state)] = known
        return known

    def accepts(self, execution: Execution, state: Any, work: Sequence[Any],
                may_spill: bool) -> bool:
        """Whether the warm workers may run this section's ``work``; ``may_spill``: the
        section could go to other containers."""
        return (not self._closed and os.getpid() == self._owner
                and execution.mode.pool_allowed(self.functions)
                and isinstance(state, (Parallel, Map)) and id(state) in self.keys
                and self._trusted_section(state)
                # A branch that could spill to other containers needs this activation's
                # credentials, which a worker forked earlier does not have.
                and not may_spill
                and all(isinstance(job, BranchJob) and job.state is state for job in work))

    # ------------------------------------------------------------------ workers

    def start(self, count: int) -> None:
        """Fork ``count`` workers now (the Orchestrator calls this once, warm)."""
        with self._lock:
            self._capacity = max(self._capacity, count)
            while self._live < count:
                self._idle.append(self._fork())

    def _fork(self) -> _Worker:
        """A new worker (caller holds the lock)."""
        job_read, job_write = os.pipe()
        result_read, result_write = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        with handoff_scope.released():  # as run_forked forks (engine/forking.py)
            pid = os.fork()
        if pid == 0:  # the fork hook closed every parent-side end, this one's too
            os.close(job_write)
            os.close(result_read)
            self._serve(job_read, result_write)
        os.close(job_read)
        os.close(result_write)
        _PARENT_FDS.update((job_write, result_read))
        self._live += 1
        return _Worker(pid, job_write, result_read)

    def _acquire(self, count: int) -> list[_Worker]:
        with self._lock:
            self._capacity = max(self._capacity, count)
            taken: list[_Worker] = []
            while self._idle and len(taken) < count:
                worker = self._idle.pop()
                if worker.alive():
                    taken.append(worker)
                else:  # died while idle (killed from outside): reaped by alive()
                    self._discard(worker, reap=False)
            while len(taken) < count and self._live < self._capacity:
                taken.append(self._fork())
            return taken

    def _release(self, worker: _Worker) -> None:
        with self._lock:
            if self._closed:
                self._discard(worker)
            else:
                self._idle.append(worker)

    def _replace(self, worker: _Worker, reap: bool = True) -> _Worker:
        with self._lock:
            self._discard(worker, reap)
            return self._fork()

    def _discard(self, worker: _Worker, reap: bool = True) -> None:
        """Kill and reap a worker (caller holds the lock or owns the worker)."""
        if reap:
            try:
                os.kill(worker.pid, signal.SIGKILL)
                os.waitpid(worker.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        _close_pipes(worker)
        self._live -= 1

    def close(self) -> None:
        """Stop every idle worker (busy ones are stopped when their section ends)."""
        with self._lock:
            self._closed = True
            while self._idle:
                self._discard(self._idle.pop())

    # ------------------------------------------------------------------ the worker

    def _serve(self, job_fd: int, result_fd: int) -> None:
        """Body of a worker: one JSON job line in, one JSON result line out. Never returns."""
        status = 0
        try:
            trace.forget()
            ctx: dict[str, Any] = {}
            with os.fdopen(job_fd, "rb") as jobs, \
                    os.fdopen(result_fd, "wb", buffering=_CHUNK) as out:
                for line in jobs:
                    job = json.loads(line)
                    ctx = job.get("ctx", ctx)
                    trace.enabled = bool(job.get("trace"))
                    history.enabled = bool(job.get("history"))
                    trace.forget()
                    message = job_message(job["i"], partial(self._run_job, ctx, job))
                    message["trace"] = trace.take()
                    out.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
                    out.flush()
                    sys.stdout.flush()
                    sys.stderr.flush()
        except BaseException:  # noqa: BLE001 - a worker must never unwind into parent code
            status = 70
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)

    def _run_job(self, ctx: dict[str, Any], job: dict[str, Any]) -> Any:
        os.environ.update(ctx.get("env", {}))  # read by functions: not in flight
        with handoff_scope.held():  # the job's data is in flight
            return self._run_job_here(ctx, job)

    def _run_job_here(self, ctx: dict[str, Any], job: dict[str, Any]) -> Any:
        # A section nested in a job (healthcare's Parallel inside each Map iteration)
        # runs on this worker's threads: the outer section already has a worker per
        # vCPU, and forking from a worker would pay a fork per nested section.
        options = replace(Options(**ctx["options"]), parallel=PARALLEL_THREADS)
        execution = Execution(self.name, None, self.functions, options, None, ctx["name"])
        execution.context_base = ctx["context"]
        execution.timeout_seconds = ctx["timeout"]
        execution.deadline = ctx["deadline"]
        # Its history events are numbered from the section's start and sent back
        # (history.finish_job: this is never the process that merges them), so that
        # error causes cite the same event ids as in a fork that inherited the counter.
        execution.number_events_from(ctx["events"])
        execution.source = ctx.get("source", 0)
        execution.events = [] if history.enabled else None
        execution.owner_pid = 0
        variables = ctx["variables"]
        execution.variables = Variables(variables, ctx["variables_bytes"])
        state = find_state(self.workflow, job["state"])
        machine = job_machine(state, job["job"])  # refuses a state that is no section
        return run_job(section_of(state), job["job"], machine, job["input"], execution)

    # ------------------------------------------------------------------ the parent

    def run(self, execution: Execution, state: Any, work: Sequence[Any], workers: int,
            describe: Callable[[int], str], stop_on_error: bool, may_spill: bool
            ) -> list[Outcome] | None:
        """Run the branches/iterations ``work`` on warm workers, at most ``workers`` at
        once; ``None`` when the pool may not or cannot take them (the caller forks)."""
        if not work or not self.accepts(execution, state, work, may_spill):
            return None
        taken = self._acquire(max(1, min(workers, len(work))))
        if not taken:  # every worker busy with another instance's section
            return None
        return _Section(self, execution, state, list(work), taken, describe,
                        stop_on_error).run()


def _close_pipes(worker: _Worker) -> None:
    """Close this side of a worker's job and result pipes."""
    for fd in (worker.job_fd, worker.result_fd):
        _PARENT_FDS.discard(fd)
        try:
            os.close(fd)
        except OSError:
            pass


def _shutdown(idle: list[_Worker]) -> None:
    """At exit or when the pool is collected: end the idle workers (EOF, then reap)."""
    for worker in idle:
        _close_pipes(worker)
        try:
            os.waitpid(worker.pid, 0)
        except ChildProcessError:
            pass
    idle.clear()


class _Section:
    """One Parallel/Map section on pool workers: dispatch, collect, clean up."""

    def __init__(self, pool: ForkPool, execution: Execution, state: State, work: list[Any],
                 workers: list[_Worker], describe: Callable[[int], str],
                 stop_on_error: bool) -> None:
        self.pool = pool
        self.work = work
        self.describe = describe
        self.stop_on_error = stop_on_error
        self.deadline = execution.deadline
        self.key = pool.keys[id(state)]
        self.outcomes: list[Outcome | None] = [None] * len(work)
        self.pending = deque(range(len(work)))
        self.busy: dict[int, tuple[_Worker, int]] = {}  # result fd -> (worker, job index)
        self.has_ctx: set[int] = set()  # pids that got this section's ctx
        self.idle = workers
        self.ctx = self._context(execution, work[0].execution)
        self.encoded: dict[int, bytes] = {}  # id(input) -> its JSON (branches share one)
        self.selector = selectors.DefaultSelector()

    @staticmethod
    def _context(execution: Execution, branch: Execution) -> bytes:
        view = dict(branch.variables.view)
        ctx = {"name": execution.name, "context": execution.context_base,
               "timeout": execution.timeout_seconds, "deadline": execution.deadline,
               "events": execution.next_id(), "source": execution.source,
               "options": asdict(execution.options),
               "variables": view,
               "variables_bytes": sum(encoded_size(v) for v in view.values()),
               "env": execution.activation_env}
        return json.dumps(ctx, separators=(",", ":")).encode()

    def _message(self, index: int, worker: _Worker) -> bytes:
        data = self.work[index].data
        encoded = self.encoded.get(id(data))
        if encoded is None:
            encoded = self.encoded[id(data)] = json.dumps(data, separators=(",", ":")).encode()
        head = json.dumps({"i": index, "state": self.key, "job": self.work[index].index,
                           "trace": trace.enabled, "history": history.enabled},
                          separators=(",", ":")).encode()[:-1]
        parts = [head, b',"input":', encoded]
        if worker.pid not in self.has_ctx:
            parts += [b',"ctx":', self.ctx]
        return b"".join(parts) + b"}\n"

    def _dispatch(self, worker: _Worker) -> None:
        """Give ``worker`` the next job; a worker found dead before it got it is replaced."""
        index = self.pending.popleft()
        for attempt in range(2):
            message = self._message(index, worker)
            try:
                _write_all(worker.job_fd, message)
                break
            except BrokenPipeError:
                if attempt:
                    raise
                worker = self.pool._replace(worker)  # noqa: SLF001
        self.has_ctx.add(worker.pid)
        os.set_blocking(worker.result_fd, False)
        self.selector.register(worker.result_fd, selectors.EVENT_READ)
        self.busy[worker.result_fd] = (worker, index)

    def run(self) -> list[Outcome]:
        failed = timed_out = False
        try:
            while self.idle and self.pending:
                self._dispatch(self.idle.pop())
            while self.busy:
                timeout = (None if self.deadline is None
                           else max(0.0, self.deadline - time.monotonic()))
                events = self.selector.select(timeout)
                if not events and self.deadline is not None \
                        and time.monotonic() >= self.deadline:
                    timed_out = True
                    break
                for key, _ in events:
                    failed |= self._collect(key.fd, failed)
                if failed and self.stop_on_error:
                    break
        finally:
            # Busy now means timed out or cancelled: those workers are killed, not reused.
            for worker, _index in self.busy.values():
                self.selector.unregister(worker.result_fd)
                with self.pool._lock:  # noqa: SLF001
                    self.pool._discard(worker)  # noqa: SLF001
            self.selector.close()
            for worker in self.idle:
                self.pool._release(worker)  # noqa: SLF001
        return self._finish(failed, timed_out)

    def _collect(self, fd: int, failed: bool) -> bool:
        """Read what a busy worker sent; True if its job failed or it died."""
        worker, index = self.busy[fd]
        chunk = os.read(fd, _CHUNK)
        if not chunk:  # the worker died mid-job
            self._retire(worker)
            status = 0
            try:
                _, status = os.waitpid(worker.pid, 0)
            except ChildProcessError:
                pass
            with self.pool._lock:  # noqa: SLF001
                self.pool._discard(worker, reap=False)  # noqa: SLF001
            self.outcomes[index] = Outcome(error=died(self.describe(index), worker.pid,
                                                      status))
            if self.pending and not self.stop_on_error:
                with self.pool._lock:  # noqa: SLF001
                    replacement = self.pool._fork()  # noqa: SLF001
                self._dispatch(replacement)
            return True
        worker.buffer += chunk
        end = worker.buffer.find(b"\n")
        if end < 0:
            return False
        message = json.loads(bytes(worker.buffer[:end]))
        del worker.buffer[:end + 1]
        self._retire(worker)
        records = message.get("trace", [])
        if "error" in message:
            self.outcomes[index] = Outcome(error=StatesError(
                message["error"], message.get("cause", "")), records=records)
            # It may still run an abandoned thread of user code: never reuse it.
            with self.pool._lock:  # noqa: SLF001
                self.pool._discard(worker)  # noqa: SLF001
            if self.pending and not self.stop_on_error:
                with self.pool._lock:  # noqa: SLF001
                    replacement = self.pool._fork()  # noqa: SLF001
                self._dispatch(replacement)
            return True
        self.outcomes[index] = Outcome(value=message["value"], records=records)
        if self.pending and not (failed and self.stop_on_error):
            self._dispatch(worker)
        else:
            self.idle.append(worker)
        return False

    def _retire(self, worker: _Worker) -> None:
        """Stop watching a worker whose job ended."""
        self.selector.unregister(worker.result_fd)
        del self.busy[worker.result_fd]

    def _finish(self, failed: bool, timed_out: bool) -> list[Outcome]:
        results = []
        for index, outcome in enumerate(self.outcomes):
            if outcome is None:
                if timed_out:
                    outcome = Outcome(error=StatesError(
                        TIMEOUT, f"{self.describe(index)} did not finish in time"))
                elif failed and self.stop_on_error:
                    outcome = Outcome(cancelled=True, error=StatesError(
                        EXIT_ERROR, f"{self.describe(index)} was cancelled: another "
                                    f"branch failed"))
                else:
                    outcome = Outcome(error=StatesError(EXIT_ERROR, "lost"))
            results.append(outcome)
        return results


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
