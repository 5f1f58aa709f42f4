"""Running work in forked processes, with results coming back over pipes.

Parallel branches and Map iterations need real parallelism, which the GIL denies threads,
and the ``process`` isolation mode needs an address space per function. Both fork the
Orchestrator: the child already holds every pre-imported function module and the whole
generated state machine, so nothing is pickled or re-imported. Where reusing a process
is safe (isolation ``none``, trusted functions), Parallel/Map sections go to warm
pre-forked workers instead (:mod:`forkpool`), which keep the rules below.

Rules this module keeps:

- **Read before join.** The parent drains every child's pipe as data arrives and only
  then reaps the child; a child blocked writing a multi-megabyte result to a full pipe
  would otherwise deadlock against a parent blocked in ``waitpid``.
- **JSON on the wire, never pickle.** The child ran untrusted function code; unpickling
  its bytes in the Orchestrator would hand that code the parent.
- **A child that dies is an error, not a hang.** Jobs a child did not report become
  ``Runtime.ExitError`` with the signal or exit status, as Lambda reports a runtime that
  exited; a deadline turns the unfinished ones into ``States.Timeout``.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..asl.errors import RUNTIME, TIMEOUT, StatesError, unexpected_cause
from . import fault_reports, handoff_scope, trace
from .functions import EXIT_ERROR, exit_words

_CHUNK = 1 << 20


@dataclass
class Outcome:
    """What one job produced: a value, or the error that ended it."""

    value: Any = None
    error: StatesError | None = None
    records: list[dict[str, Any]] = field(default_factory=list)  # trace records made in the child
    cancelled: bool = False  # stopped because a sibling failed; its error says so

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class _Child:
    pid: int
    fd: int
    jobs: list[int]
    buffer: bytearray = field(default_factory=bytearray)
    done: bool = False


def _run_child(write_fd: int, jobs: list[int], work: Sequence[Callable[[], Any]]) -> None:
    """Body of a forked child: run its jobs in order, one JSON line each. Never returns."""
    status = 0
    try:
        trace.forget()  # records made before the fork belong to the parent
        with os.fdopen(write_fd, "wb", buffering=_CHUNK) as out:
            for index in jobs:
                message = job_message(index, work[index])
                message["trace"] = trace.take()
                out.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
                out.flush()
    except BaseException:  # noqa: BLE001 - a child must never unwind into parent code
        status = 70
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def job_message(index: int, job: Callable[[], Any]) -> dict[str, Any]:
    """Run one job in a child; the JSON message its parent reads: its value, or its ASL
    error (an unexpected exception is States.Runtime, an exit Runtime.ExitError)."""
    try:
        return {"i": index, "value": job()}
    except StatesError as exc:
        return {"i": index, "error": exc.error, "cause": exc.cause}
    except Exception as exc:  # noqa: BLE001 - an engine fault: the job's error
        return {"i": index, "error": RUNTIME, "cause": unexpected_cause(exc)}
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        return {"i": index, "error": EXIT_ERROR, "cause": f"{type(exc).__name__}: {exc}"}


def died(job: str, pid: int, status: int) -> StatesError:
    """The error of ``job``, whose process ``pid`` died without its result."""
    if os.WIFSIGNALED(status) and fault_reports.read_fault() is not None:
        # A protection-key fault (isolation mpk): name the functions, not a signal.
        name, cause = fault_reports.died_of(os.WTERMSIG(status))
        return StatesError(name, f"{job}: {cause}")
    return StatesError(EXIT_ERROR, f"{job}: process {pid} exited without a result "
                                   f"({exit_words(status)})")


def run_forked(work: Sequence[Callable[[], Any]], max_workers: int, *,
               describe: Callable[[int], str] = lambda i: f"job {i}",
               stop_on_error: bool = True,
               deadline: float | None = None) -> list[Outcome]:
    """Run each callable of ``work`` in a forked child; at most ``max_workers`` children.

    Jobs are dealt round-robin to the children, each of which runs its share in order.
    ``describe(i)`` names job ``i`` in error causes. With ``stop_on_error`` the first
    failure kills the other children (a Parallel state fails as a whole); their
    unfinished jobs report that they were cancelled. ``deadline`` is a
    ``time.monotonic()`` instant after which everything unfinished is a States.Timeout.
    """
    count = len(work)
    outcomes: list[Outcome | None] = [None] * count
    workers = max(1, min(max_workers, count))
    children: list[_Child] = []
    sys.stdout.flush()
    sys.stderr.flush()
    for w in range(workers):
        jobs = list(range(w, count, workers))
        read_fd, write_fd = os.pipe()
        # Forked from the shared heap: what the child's fork hooks rebuild (threading's
        # table of threads) is read by the functions it runs. Then back where it was.
        with handoff_scope.released():
            pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            for other in children:
                os.close(other.fd)
            _run_child(write_fd, jobs, work)
        os.close(write_fd)
        children.append(_Child(pid, read_fd, jobs))

    failed = False
    timed_out = False
    selector = selectors.DefaultSelector()
    for child in children:
        os.set_blocking(child.fd, False)
        selector.register(child.fd, selectors.EVENT_READ, child)
    try:
        while selector.get_map():
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            events = selector.select(timeout)
            if not events and deadline is not None and time.monotonic() >= deadline:
                timed_out = True
                break
            for key, _ in events:
                child = key.data
                chunk = os.read(child.fd, _CHUNK)
                if not chunk:
                    selector.unregister(child.fd)
                    child.done = True
                    continue
                child.buffer += chunk
                failed |= _collect_lines(child, outcomes)
            if failed and stop_on_error:
                break
    finally:
        selector.close()
        for child in children:
            if not child.done:
                _kill(child.pid)
            os.close(child.fd)
    for child in children:
        _, status = os.waitpid(child.pid, 0)
        for index in child.jobs:
            if outcomes[index] is not None:
                continue
            if timed_out:
                error = StatesError(TIMEOUT, f"{describe(index)} did not finish in time")
            elif failed and stop_on_error and not child.done:
                outcomes[index] = Outcome(cancelled=True, error=StatesError(
                    EXIT_ERROR, f"{describe(index)} was cancelled: another branch failed"))
                continue
            else:
                error = died(describe(index), child.pid, status)
            outcomes[index] = Outcome(error=error)
    return [o if o is not None else Outcome(error=StatesError(EXIT_ERROR, "lost"))
            for o in outcomes]


def _collect_lines(child: _Child, outcomes: list[Outcome | None]) -> bool:
    """Parse the complete lines in a child's buffer; True if one reported an error."""
    failed = False
    while True:
        end = child.buffer.find(b"\n")
        if end < 0:
            return failed
        line = bytes(child.buffer[:end])
        del child.buffer[:end + 1]
        message = json.loads(line)
        records = message.get("trace", [])
        if "error" in message:
            failed = True
            outcomes[message["i"]] = Outcome(
                error=StatesError(message["error"], message.get("cause", "")), records=records)
        else:
            outcomes[message["i"]] = Outcome(value=message["value"], records=records)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
