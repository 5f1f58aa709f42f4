"""Spilling Parallel branches and Map iterations to copies of this action.

When a parallel section is wider than this container's vCPUs and the plan allows it
(``max_containers`` > 1, the state placed on ``containers``), the jobs are split into
groups, each sized to a container's vCPUs. This container runs the first group in forked
processes (or on its warm pool); every other group goes to a copy of the same action,
invoked through the platform's API (:mod:`invokers`) with a sub-workflow request
(:mod:`protocol`), which the copy answers with :mod:`serve`. Results merge in job order.
A request or answer over the platform's payload limit travels through the user's object
store (:mod:`object_store`); without one, a group too big to send runs here instead.
Whether more containers pay is :mod:`policy`'s call.

Each remote group is awaited by a forked child of its own, next to the child running
the local group, so that :func:`forking.run_forked` gives every group the deadline,
crash and cancellation rules of a local branch and the Orchestrator never forks while a
thread of it holds a socket or a lock. A failed group fails each of its jobs with the
platform's error (:mod:`invokers`), which Retry and Catch see as the branch's error; a
group that answers without some job's result fails that job: nothing is dropped.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..asl.errors import RUNTIME, TIMEOUT, StatesError, unexpected_cause
from ..asl.model import Machine, State
from ..engine import handoff_scope, trace
from ..engine.forking import Outcome, run_forked
from ..engine.functions import EXIT_ERROR
from ..interpreter.states import run_machine
from ..options import CONTAINERS, PROCESSES, Options
from . import policy
from .forkpool import ForkPool
from .invokers import Invoker, invoker_from_environ
from .object_store import ObjectStore
from .protocol import (
    GROUP_KEY,
    OUTCOMES_KEY,
    STORED_KEY,
    complete,
    first_failure,
    group_answer,
    job_machine,
    merge_group,
    outcome_from_json,
    pack_inputs,
    split,
    state_keys,
)

if TYPE_CHECKING:
    from ..engine.execution import Execution


_KEYS: dict[int, tuple[Machine, dict[int, str]]] = {}


class Spiller:
    """Where one execution's parallel work goes: threads, processes or containers."""

    def __init__(self, workflow: Machine, options: Options, pool: ForkPool | None,
                 invoker: Invoker | None = None, store: ObjectStore | None = None) -> None:
        # Plan keys per state, computed once per workflow (the workflow is kept alive
        # with them, so its id cannot be reused by another object).
        known = _KEYS.get(id(workflow))
        if known is None:
            known = _KEYS[id(workflow)] = (workflow, state_keys(workflow))
        self.keys = known[1]
        self.options = options
        self.pool = pool  # this container's warm workers, for the group run here
        self.invoker = invoker  # None: nothing spills (a group a copy runs, say)
        self.store = store

    @classmethod
    def from_environ(cls, workflow: Machine, options: Options, pool: ForkPool | None
                     ) -> Spiller:
        """The platform and store of this activation (OpenWhisk sets its API key per
        activation, so this is made per execution, not per container)."""
        policy.count_activation()
        if options.max_containers <= 1:  # nothing spills: no platform to read
            return cls(workflow, options, pool, None, None)
        return cls(workflow, options, pool, invoker_from_environ(), ObjectStore.from_environ())

    def may_spill(self) -> bool:
        """Whether a section of this execution could go to other containers."""
        return self.invoker is not None and self.options.max_containers > 1

    def key_of(self, state: State) -> str:
        return self.keys.get(id(state), state.name)

    def placement(self, state: State) -> str:
        """The plan's placement for a Parallel/Map state (processes when unplanned)."""
        return self.options.placements.get(self.key_of(state), PROCESSES)

    def groups(self, state: State, count: int, workers: int, max_concurrency: int
               ) -> list[list[int]]:
        """Job groups of ``workers`` (this container's vCPUs) each, the first one this
        container's; one group when nothing spills."""
        if (self.invoker is None or self.options.max_containers <= 1
                or self.placement(state) != CONTAINERS):
            return [list(range(count))]
        wanted = count if max_concurrency <= 0 else min(count, max_concurrency)
        if wanted <= workers:
            return [list(range(count))]
        # MaxConcurrency bounds how many run at once in all containers together.
        containers = min(self.options.max_containers, math.ceil(wanted / workers))
        return split(count, math.ceil(count / containers), containers)

    def worth_it(self, state: State, groups: list[list[int]], inputs: Sequence[Any],
                 workers: int) -> list[list[int]]:
        """The groups regrouped into as many containers as pay, by the plan's measured
        costs and the time a round of this state's jobs took here before. Until a round
        was timed, everything runs here (and is timed: a round timed while copies share
        the machine would be a busy one); with FAASTLANE_SPILL=always, as planned."""
        key = self.key_of(state)
        round_ms = policy.round_ms(key)
        if os.environ.get(policy.SPILL_ENV) == policy.ALWAYS:
            return groups
        if round_ms is None:
            trace.record(state=state.name, type="Placement", containers=1,
                         reason="first execution here: timing a round")
            return [list(range(len(inputs)))]
        count = len(inputs)
        handoff = dict(policy.plan_handoff().get(key, {}))
        observed = policy.observed_invoke_ms(key)
        if observed is not None:  # observed from here beats the profile's figure
            handoff["invoke_ms"] = observed
        chosen, estimates = policy.choose_containers(
            count, workers, len(groups), round_ms, handoff,
            lambda jobs: len(json.dumps(pack_inputs(inputs[:jobs]), separators=(",", ":"))))
        trace.record(state=state.name, type="Placement", containers=chosen,
                     round_ms=round(round_ms, 3), estimates_ms=estimates,
                     invoke_ms=handoff.get("invoke_ms"), observed=observed is not None)
        if chosen == len(groups):
            return groups
        return split(count, math.ceil(count / chosen), chosen)

    def run(self, execution: Execution, state: State, work: Sequence[Callable[[], Any]],
            inputs: Sequence[Any], groups: list[list[int]], workers: int,
            max_concurrency: int, describe: Callable[[int], str], stop_on_error: bool
            ) -> list[Outcome]:
        """Run the first group here and the others in copies of this action (when the
        measured costs say more containers pay; else all of it here)."""
        count = len(work)
        groups = self.worth_it(state, groups, inputs, workers)
        key = self.key_of(state)
        # MaxConcurrency holds for all containers together: each gets its share of it.
        share = math.ceil(max_concurrency / len(groups)) if max_concurrency > 0 else 0
        local_workers = min(workers, share) if share else workers
        if len(groups) == 1:
            began = time.monotonic()
            outcomes = self.on_pool(execution, state, work, local_workers, describe,
                                    stop_on_error)
            if outcomes is None:
                outcomes = run_forked(work, local_workers, describe=describe,
                                      stop_on_error=stop_on_error, deadline=execution.deadline)
            policy.learn_round(key, time.monotonic() - began, count, local_workers)
            return outcomes
        if self._pool_takes(execution, state, [work[i] for i in groups[0]]):
            return self._run_with_pool(execution, state, work, inputs, groups, local_workers,
                                       share, describe, stop_on_error)
        local = groups[0]

        def local_group() -> dict[str, Any]:
            began = time.monotonic()
            outcomes = run_forked([work[i] for i in local], local_workers,
                                  describe=lambda k: describe(local[k]),
                                  stop_on_error=stop_on_error, deadline=execution.deadline)
            for outcome in outcomes:
                trace.extend(outcome.records)
            return {"outcomes": group_answer(outcomes, stop_on_error),
                    "seconds": time.monotonic() - began}

        def remote_group(jobs: list[int]) -> Callable[[], dict[str, Any]]:
            def await_answer() -> dict[str, Any]:
                began = time.monotonic()
                body = self._request(execution, state, jobs, inputs, share, stop_on_error)
                if body is None:
                    return {"outcomes": self._run_here(execution, state, jobs, inputs,
                                                       stop_on_error), "seconds": None}
                outcomes, warm = self._send(execution, state, jobs, body, stop_on_error)
                # A copy's first activation may include its cold start: not a hand-off.
                return {"outcomes": outcomes,
                        "seconds": time.monotonic() - began if warm else None}
            return await_answer

        jobs = [local_group] + [remote_group(g) for g in groups[1:]]
        answers = run_forked(jobs, len(jobs), stop_on_error=stop_on_error,
                             deadline=execution.deadline,
                             describe=lambda g: f"the group of {describe(groups[g][0])} "
                                                f"and {len(groups[g]) - 1} more")
        merged: list[Outcome | None] = [None] * count
        for g, (group, answer) in enumerate(zip(groups, answers, strict=False)):
            if isinstance(answer.value, dict):  # each group: its outcomes and its time
                if g > 0:  # rounds are timed only when nothing spills (worth_it)
                    policy.learn_invoke(key, answer.value["seconds"], len(group), workers)
                answer = replace(answer, value=answer.value["outcomes"])
            trace.extend(answer.records)
            merge_group(merged, group, answer, describe)
        return complete(merged)

    def _run_with_pool(self, execution: Execution, state: State,
                       work: Sequence[Callable[[], Any]], inputs: Sequence[Any],
                       groups: list[list[int]], workers: int, share: int,
                       describe: Callable[[int], str], stop_on_error: bool
                       ) -> list[Outcome]:
        """The first group on this container's warm pool workers, while threads await the
        remote groups (no fork happens meanwhile: the workers were forked at load).

        A group too big to send without a store joins the local one. Under
        ``stop_on_error`` a local failure stops waiting for the remote groups (their
        jobs report that they were cancelled); a remote failure fails its group's jobs.
        """
        requests = [(jobs, self._request(execution, state, jobs, inputs, share,
                                         stop_on_error)) for jobs in groups[1:]]
        local = groups[0] + [i for jobs, body in requests if body is None for i in jobs]
        remote = [(jobs, body) for jobs, body in requests if body is not None]
        answers: list[Outcome | None] = [None] * len(remote)
        took: list[float | None] = [None] * len(remote)

        def await_group(k: int) -> None:
            jobs, body = remote[k]
            try:
                began = time.monotonic()
                with handoff_scope.held():  # the group's answers are data in flight
                    outcomes, warm = self._send(execution, state, jobs, body,
                                                stop_on_error)
                answers[k] = Outcome(value=outcomes)
                took[k] = time.monotonic() - began if warm else None
            except StatesError as err:
                answers[k] = Outcome(error=err)
            except Exception as err:  # noqa: BLE001 - becomes the group's ASL error
                answers[k] = Outcome(error=StatesError(
                    RUNTIME, f"{describe(jobs[0])}: {unexpected_cause(err)}"))

        threads = [threading.Thread(target=await_group, args=(k,), daemon=True,
                                    name=f"faastlane-group-{k}") for k in range(len(remote))]
        for thread in threads:
            thread.start()
        here = self.on_pool(execution, state, [work[i] for i in local], workers,
                            lambda k: describe(local[k]), stop_on_error)
        if here is None:  # every pool worker busy with another instance: fork after all
            here = run_forked([work[i] for i in local], workers,
                              describe=lambda k: describe(local[k]),
                              stop_on_error=stop_on_error, deadline=execution.deadline)
        merged: list[Outcome | None] = [None] * len(work)
        for index, outcome in zip(local, here, strict=True):
            merged[index] = outcome
        failed = stop_on_error and first_failure(here) is not None
        for thread, (jobs, _), k in zip(threads, remote, range(len(remote)), strict=True):
            if not failed:
                thread.join(None if execution.deadline is None
                            else max(0.0, execution.deadline - time.monotonic()))
            answer = answers[k]
            policy.learn_invoke(self.key_of(state), took[k], len(jobs), workers)
            if answer is None:
                error = (StatesError(EXIT_ERROR, f"cancelled: another branch of "
                                                 f"{state.name!r} failed") if failed
                         else StatesError(TIMEOUT, f"the group of {describe(jobs[0])} did "
                                                   f"not finish in time"))
                answer = Outcome(error=error, cancelled=failed)
            merge_group(merged, jobs, answer, describe)
        return complete(merged)

    # ----------------------------------------------------------------- the caller side

    def _request(self, execution: Execution, state: State, jobs: list[int],
                 inputs: Sequence[Any], max_concurrency: int, stop_on_error: bool
                 ) -> dict[str, Any] | None:
        """The sub-workflow request of one group; None when it is over the payload limit
        and no store is configured (the group then runs here)."""
        assert self.invoker is not None
        request: dict[str, Any] = {
            "state": self.key_of(state), "jobs": jobs, **pack_inputs([inputs[i] for i in jobs]),
            "variables": dict(execution.variables.view),
            "context": execution.context_base, "execution": execution.name,
            "remaining": execution.remaining(), "stop_on_error": stop_on_error,
            "max_concurrency": max_concurrency, "reply_limit": self.invoker.payload_limit,
        }
        if len(json.dumps({GROUP_KEY: request}, separators=(",", ":"))) \
                <= self.invoker.payload_limit:
            return {GROUP_KEY: request}
        if self.store is None:
            return None
        return {GROUP_KEY: request, STORED_KEY: True}

    def _send(self, execution: Execution, state: State, jobs: list[int],
              body: dict[str, Any], stop_on_error: bool) -> tuple[list[dict[str, Any]], bool]:
        """Invoke a copy with one group's request (through the store when it is marked
        too big to send); its outcomes as JSON, and whether the copy had run anything
        before (a warm copy: its time is a hand-off's, not a cold start's)."""
        assert self.invoker is not None
        stored = None
        if body.pop(STORED_KEY, False):
            assert self.store is not None
            stored = self.store.put_json(body[GROUP_KEY], "group")
            body = {GROUP_KEY: {STORED_KEY: stored}}
        started = trace.now()
        try:
            answer = self.invoker.invoke(body, execution.remaining())
        finally:
            if stored is not None:
                self.store.delete(stored)  # type: ignore[union-attr]
        trace.record(state=state.name, type="RemoteGroup", platform=self.invoker.platform,
                     jobs=len(jobs), start=started, end=trace.now(),
                     stored=stored is not None)
        warm = isinstance(answer, dict) and answer.get("warm") is True
        return self._answer_outcomes(answer, len(jobs), stop_on_error), warm

    def _answer_outcomes(self, answer: Any, count: int, stop_on_error: bool
                         ) -> list[dict[str, Any]]:
        if isinstance(answer, dict) and STORED_KEY in answer and self.store is not None:
            key = answer[STORED_KEY]
            answer = self.store.get_json(key)
            self.store.delete(key)
        if isinstance(answer, dict) and isinstance(answer.get("group_error"), dict):
            failure = answer["group_error"]
            raise StatesError(failure.get("error") or EXIT_ERROR, failure.get("cause"))
        outcomes = answer.get(OUTCOMES_KEY) if isinstance(answer, dict) else None
        if not isinstance(outcomes, list):
            raise StatesError(EXIT_ERROR, f"a remote group answered without outcomes: "
                                          f"{json.dumps(answer)[:300]}")
        decoded = [outcome_from_json(m, "a remote job") for m in outcomes[:count]]
        decoded += [outcome_from_json(None, "a remote job")] * (count - len(decoded))
        return group_answer(decoded, stop_on_error)

    def _run_here(self, execution: Execution, state: State, jobs: list[int],
                  inputs: Sequence[Any], stop_on_error: bool) -> list[dict[str, Any]]:
        """A group too big to send without a store: run it in this container after all."""
        trace.record(state=state.name, type="RemoteGroup", platform="local", jobs=len(jobs),
                     start=trace.now(), end=trace.now(),
                     reason="over the payload limit and no object store configured")
        work = [_job(state, i, inputs[i], execution) for i in jobs]
        outcomes = run_forked(work, execution.options.cpu_budget(),
                              stop_on_error=stop_on_error, deadline=execution.deadline)
        for outcome in outcomes:
            trace.extend(outcome.records)
        return group_answer(outcomes, stop_on_error)

    # ----------------------------------------------------------------- the warm pool

    def _pool_takes(self, execution: Execution, state: State, work: Sequence[Any]) -> bool:
        """Whether this container's warm pool can run ``work`` (isolation none, trusted
        functions, ...: see forkpool.py). Work that reaches here is already placed in
        this container, so the pool is asked as for a section that does not spill."""
        return (self.pool is not None and bool(work)
                and self.pool.accepts(execution, state, work, may_spill=False))

    def on_pool(self, execution: Execution, state: State, work: Sequence[Any], workers: int,
                describe: Callable[[int], str], stop_on_error: bool
                ) -> list[Outcome] | None:
        """``work`` on the warm pool's workers; None when the pool does not take it."""
        if self.pool is None or not self._pool_takes(execution, state, work):
            return None
        return self.pool.run(execution, state, work, workers, describe, stop_on_error,
                             may_spill=False)


def _job(state: State, index: int, data: Any, execution: Execution) -> Callable[[], Any]:
    branch = execution.for_branch()
    machine = job_machine(state, index)
    return lambda: run_machine(machine, data, branch)
