"""Warm worker threads: each function keeps threads that wait for its next invocation.

Starting a thread for every hand-off between functions costs a few hundred microseconds
(creating, scheduling and joining it); waking a parked thread through a queue costs tens.
So a function's invocations run on threads dedicated to that function, created on first
use and parked between calls — one per invocation running at the same time. A thread
that overruns its deadline is abandoned (Python cannot stop it) and never reused.

Forked children inherit none of these threads, only their bookkeeping, so the pool is
emptied in every child after a fork.
"""

from __future__ import annotations

import os
import queue
import threading
from typing import Any, Callable


class WorkerTimeout(Exception):
    """The job did not finish in time; its thread is left to finish on its own."""


class _Worker:
    def __init__(self, name: str) -> None:
        self.inbox: queue.SimpleQueue[Callable[[], Any]] = queue.SimpleQueue()
        self.outbox: queue.SimpleQueue[tuple[Any, BaseException | None]] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            job = self.inbox.get()
            try:
                self.outbox.put((job(), None))
            except BaseException as exc:  # noqa: BLE001 - handed back to the caller
                self.outbox.put((None, exc))


class WorkerPool:
    """Parked threads per key (a function's name), handed out one invocation at a time."""

    def __init__(self) -> None:
        self._idle: dict[str, list[_Worker]] = {}
        self._lock = threading.Lock()
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._idle = {}
        self._lock = threading.Lock()  # it may have been held by a thread that is gone

    def run(self, key: str, job: Callable[[], Any], timeout: float | None = None) -> Any:
        """Run ``job`` on a warm thread of ``key``; its exception is re-raised here."""
        with self._lock:
            idle = self._idle.get(key)
            worker = idle.pop() if idle else None
        if worker is None:
            worker = _Worker(f"faastlane:{key}")
        worker.inbox.put(job)
        try:
            result, error = worker.outbox.get(timeout=timeout)
        except queue.Empty:
            raise WorkerTimeout(key) from None
        with self._lock:
            self._idle.setdefault(key, []).append(worker)
        if error is not None:
            raise error
        return result


POOL = WorkerPool()
