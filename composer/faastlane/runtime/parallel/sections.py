"""Where one execution's Parallel and Map sections run.

The engine hands each section to the :class:`Sections` it was given (its
``SectionRunner``): on the Orchestrator's threads when the plan places the state on
``threads``; split across copies of the action when it spills (:mod:`spill`); on threads
when every function it calls runs in its own sandbox (they give the parallelism); on
threads or warm workers as timing says when compose measured nothing (:mod:`learned`);
else on this container's warm pre-forked workers (:mod:`forkpool`) when they take it.
``None`` tells the engine to fork a child per worker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..asl.model import Map, Parallel
from ..engine.execution import run_on_threads
from ..engine.forking import Outcome
from ..options import PROCESSES, THREADS
from . import learned
from .spill import Spiller

if TYPE_CHECKING:
    from ..engine.execution import Execution


class Sections:
    """The section runner of one execution (or of a group a copy runs for another)."""

    def __init__(self, spiller: Spiller, spill: bool = True) -> None:
        self.spiller = spiller
        # False for a group a copy runs for another: its width was sized to this
        # container, and it never spills again.
        self.spill = spill

    def run(self, execution: Execution, state: Parallel | Map, work: Sequence[Callable[[], Any]],
            inputs: Sequence[Any] | None, workers: int, budget: int, max_concurrency: int,
            describe: Callable[[int], str], stop_on_error: bool) -> list[Outcome] | None:
        spiller = self.spiller
        if spiller.placement(state) == THREADS:
            limit = max_concurrency if max_concurrency > 0 else len(work)
            return run_on_threads(work, limit, stop_on_error)
        if self.spill and inputs is not None:
            groups = spiller.groups(state, len(work), budget, max_concurrency)
            if len(groups) > 1:
                return spiller.run(execution, state, work, inputs, groups, budget,
                                   max_concurrency, describe, stop_on_error)
        if execution.mode.only_sandboxed(state):
            # Its functions run in their sandboxes, in parallel: threads here only wait
            # for them, without a worker process's extra hand-off.
            return run_on_threads(work, workers, stop_on_error)
        # A section that could spill needs this activation's credentials, which a worker
        # forked earlier lacks: the pool refuses it (see forkpool.py).
        may_spill = self.spill and spiller.may_spill()
        key = spiller.key_of(state)
        handoff_ms = execution.options.learned.get(key)
        if handoff_ms is not None:  # threads or warm workers, as timing says
            limit = max_concurrency if max_concurrency > 0 else len(work)
            pool = spiller.pool

            def on_threads() -> list[Outcome]:
                return run_on_threads(work, limit, stop_on_error)

            def on_workers() -> list[Outcome]:
                assert pool is not None
                # Every worker busy with another instance's section: threads, not forks.
                return pool.run(execution, state, work, workers, describe, stop_on_error,
                                may_spill) or on_threads()

            if (learned.choose(key) == PROCESSES and pool is not None
                    and pool.accepts(execution, state, work, may_spill)):
                return learned.timed(key, PROCESSES, len(work), workers, handoff_ms,
                                     on_workers)
            return learned.timed(key, THREADS, len(work), workers, handoff_ms, on_threads)
        if spiller.pool is None:
            return None
        return spiller.pool.run(execution, state, work, workers, describe, stop_on_error,
                                may_spill=may_spill)
