"""Warm worker threads: each function keeps threads that wait for its next invocation.

Starting a thread for every hand-off between functions costs a few hundred microseconds
(creating, scheduling and joining it); waking a parked thread through a queue costs tens.
So a function's invocations run on threads dedicated to that function, created on first
use and parked between calls — one per invocation running at the same time. A thread
that overruns its deadline is abandoned (Python cannot stop it) and never reused.

Two ways to use one: :meth:`WorkerPool.run` waits for the job's result (two wake-ups:
the worker's, then the caller's); :meth:`WorkerPool.start` returns at once and the job
hands its outcome on by itself, which is how a relay of sequential Tasks runs
(``states.py``): its :func:`steps` -- every function of the chain, one after another --
on one warm thread of the key ``RELAYS``, with no wake-up between two functions.

Forked children inherit none of these threads, only their bookkeeping, so the pool is
emptied in every child after a fork.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from typing import Any

from . import handoff_scope

# A job of start(): it may return a last step, run once its thread is parked again.
Handover = Callable[[], None]
# A step of a relay (``interpreter/states.py``): it runs and returns the step after it,
# None when nothing follows, or a :class:`Last`.
Step = Callable[[], "Step | Last | None"]


class Last:
    """A relay's last step (it wakes the relay's waiter): run once the relay's thread is
    parked again, so that the waiter's next relay finds that thread free."""

    __slots__ = ("run",)

    def __init__(self, run: Handover) -> None:
        self.run = run

    def __call__(self) -> None:
        self.run()


def steps(first: Step) -> Callable[[], Handover | None]:
    """A job for :meth:`WorkerPool.start` that runs ``first`` and the steps it leads to
    on one thread, one after another; the :class:`Last` runs after parking."""
    def job() -> Handover | None:
        step: Step | Last | None = first
        while step is not None and not isinstance(step, Last):
            step = step()
        return step

    return job


class WorkerTimeout(Exception):
    """The job did not finish in time; its thread is left to finish on its own."""


class _Worker:
    def __init__(self, key: str, pool: WorkerPool) -> None:
        self.key = key
        self.pool = pool
        # (job, whether its caller waits for the outcome in outbox)
        self.inbox: queue.SimpleQueue[tuple[Callable[[], Any], bool]] = queue.SimpleQueue()
        self.outbox: queue.SimpleQueue[tuple[Any, BaseException | None]] = queue.SimpleQueue()
        name = key if key.startswith("faastlane:") else f"faastlane:{key}"
        self.thread = threading.Thread(target=self._serve, name=name,
                                       daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        with handoff_scope.held():  # the data it hands on is in flight
            self._loop()

    def _loop(self) -> None:
        while True:
            job, waited_for = self.inbox.get()
            try:
                outcome: tuple[Any, BaseException | None] = (job(), None)
            except BaseException as exc:  # noqa: BLE001 - handed back to the caller
                outcome = (None, exc)
            if waited_for:
                self.outbox.put(outcome)
                continue
            # Parked before handing over, so the thread is free for the next call.
            self.pool.park(self)
            handover, error = outcome
            if error is not None:  # start() jobs hand their own errors on: a bug
                threading.excepthook(threading.ExceptHookArgs(
                    (type(error), error, error.__traceback__, self.thread)))
            elif handover is not None:
                handover()


class WorkerPool:
    """Parked threads per key (a function's name), handed out one invocation at a time."""

    def __init__(self) -> None:
        self._idle: dict[str, list[_Worker]] = {}
        self._lock = threading.Lock()
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._idle = {}
        self._lock = threading.Lock()  # it may have been held by a thread that is gone

    def _take(self, key: str) -> _Worker:
        with self._lock:
            idle = self._idle.get(key)
            worker = idle.pop() if idle else None
        if worker is not None:
            return worker
        with handoff_scope.released():  # function code reads its Thread object
            return _Worker(key, self)

    def park(self, worker: _Worker) -> None:
        with self._lock:
            self._idle.setdefault(worker.key, []).append(worker)

    def run(self, key: str, job: Callable[[], Any], timeout: float | None = None) -> Any:
        """Run ``job`` on a warm thread of ``key``; its exception is re-raised here."""
        worker = self._take(key)
        worker.inbox.put((job, True))
        try:
            result, error = worker.outbox.get(timeout=timeout)
        except queue.Empty:
            raise WorkerTimeout(key) from None
        self.park(worker)
        if error is not None:
            raise error
        return result

    def start(self, key: str, job: Callable[[], Handover | None]) -> None:
        """Run ``job`` on a warm thread of ``key`` and return at once. The job hands its
        outcome on itself and must not raise; the step it returns runs once its thread
        is parked again (so that step may call ``key`` again on the same thread)."""
        self._take(key).inbox.put((job, False))


POOL = WorkerPool()
RELAYS = "faastlane:relay"  # the key of the threads relays run on
