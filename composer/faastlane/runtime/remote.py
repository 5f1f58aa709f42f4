"""Spilling Parallel branches and Map iterations to copies of this action.

When a parallel section is wider than this container's vCPUs and the plan allows it
(``max_containers`` > 1, the state placed on ``containers``), the jobs are split into
groups, each sized to a container's vCPUs. This container runs the first group in forked
processes; every other group goes to a copy of the same action, invoked through the
platform's API (:mod:`invokers`) with a sub-workflow request:

    {"__faastlane_group": {"state": "RunAuditRules", "jobs": [13, 14, ...],
                           "input": ... | "inputs": [...] | "shared": {...}, ...,
                           "variables": {...},
                           "context": {...}, "remaining": 41.5, ...}}

The copy finds the Parallel/Map state by its plan key, runs those branches (or
iterations) from their input with the outer variables and the parent's context object,
and answers ``{"__faastlane_outcomes": [{"value": ...} | {"error", "cause"}, ...]}``.
Results merge in job order. A request or answer over the platform's payload limit
travels through the user's object store (:mod:`object_store`); without one, a group too
big to send runs here instead.

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

from . import trace
from .errors import RUNTIME, TIMEOUT, StatesError
from .forking import Outcome, run_forked
from .functions import EXIT_ERROR
from .invokers import Invoker, invoker_from_environ
from .model import Machine, Map, Parallel, State
from .object_store import ObjectStore
from .variables import Variables, encoded_size

if TYPE_CHECKING:
    from .execution import Execution, Options
    from .orchestrator import Orchestrator

GROUP_KEY = "__faastlane_group"
OUTCOMES_KEY = "__faastlane_outcomes"
STORED_KEY = "stored"  # the group request / answer is in the object store under this key

# Placements of a Parallel or Map state (plan.json's "placement").
THREADS = "threads"
PROCESSES = "processes"
CONTAINERS = "containers"

_BRANCHES, _ITEMS = "Branches", "ItemProcessor"


# --------------------------------------------------------------------- state keys


def state_keys(machine: Machine, prefix: str = "") -> dict[int, str]:
    """``id(state)`` -> its plan key (``Fetch``, ``Fetch/Branches/0/Inner``,
    ``Rules/ItemProcessor/Check``) for every state of the workflow."""
    keys: dict[int, str] = {}
    for name, state in machine.states.items():
        key = f"{prefix}{name}"
        keys[id(state)] = key
        if isinstance(state, Parallel):
            for i, branch in enumerate(state.branches):
                keys.update(state_keys(branch, f"{key}/{_BRANCHES}/{i}/"))
        elif isinstance(state, Map):
            keys.update(state_keys(state.iterator, f"{key}/{_ITEMS}/"))
    return keys


def find_state(machine: Machine, key: str) -> State:
    """The state a plan key names; StatesError(States.Runtime) if there is none."""
    parts = key.split("/")
    state: State | None = None
    while parts:
        state = machine.states.get(parts.pop(0))
        if state is None or not parts:
            break
        section = parts.pop(0)
        if section == _BRANCHES and isinstance(state, Parallel) and parts:
            index = int(parts.pop(0)) if parts[0].isdigit() else -1
            if not 0 <= index < len(state.branches):
                state = None
                break
            machine = state.branches[index]
        elif section == _ITEMS and isinstance(state, Map):
            machine = state.iterator
        else:
            state = None
            break
    if state is None or parts:
        raise StatesError(RUNTIME, f"this action has no state {key!r} to run a group of")
    return state


def job_machine(state: State, index: int) -> Machine:
    """What job ``index`` of a Parallel (a branch) or Map (the iterator) runs."""
    if isinstance(state, Parallel):
        return state.branches[index]
    if isinstance(state, Map):
        return state.iterator
    raise StatesError(RUNTIME, f"state {state.name!r} is neither a Parallel nor a Map")


# --------------------------------------------------------------------- groups


def split(count: int, per_container: int, max_containers: int) -> list[list[int]]:
    """Job indexes per container: as few containers as fit ``per_container`` jobs each,
    at most ``max_containers``; beyond that the jobs are shared out evenly, in order."""
    containers = max(1, min(max_containers, math.ceil(count / max(1, per_container))))
    base, extra = divmod(count, containers)
    groups, start = [], 0
    for c in range(containers):
        size = base + (1 if c < extra else 0)
        groups.append(list(range(start, start + size)))
        start += size
    return [g for g in groups if g]


def outcome_to_json(outcome: Outcome) -> dict[str, Any]:
    if outcome.error is None:
        return {"value": outcome.value}
    message: dict[str, Any] = {"error": outcome.error.error, "cause": outcome.error.cause}
    if outcome.cancelled:
        message["cancelled"] = True
    return message


def outcome_from_json(message: Any, describe: str) -> Outcome:
    if not isinstance(message, dict) or not ("value" in message or "error" in message):
        return Outcome(error=StatesError(EXIT_ERROR, f"{describe}: the remote group "
                                                     f"answered without its result"))
    if "error" in message:
        return Outcome(error=StatesError(message["error"], message.get("cause")),
                       cancelled=bool(message.get("cancelled")))
    return Outcome(value=message["value"], records=message.get("trace", []))


def _first_failure(outcomes: Sequence[Outcome]) -> StatesError | None:
    for outcome in outcomes:
        if outcome.error is not None and not outcome.cancelled:
            return outcome.error
    return None


def _group_answer(outcomes: Sequence[Outcome], stop_on_error: bool) -> list[dict[str, Any]]:
    """A group's outcomes as JSON; with ``stop_on_error`` a failure is raised instead, so
    that the other groups are cancelled as sibling branches are."""
    failure = _first_failure(outcomes) if stop_on_error else None
    if failure is not None:
        raise failure
    return [outcome_to_json(o) for o in outcomes]


# --------------------------------------------------------------------- group inputs


def _same(a: Any, b: Any) -> bool:
    """The same JSON value for certain: one object (ItemSelector shares the parts it
    copies from the state input), or equal scalars of one type (``1 == True`` is not)."""
    return a is b or (type(a) is type(b) and not isinstance(a, (dict, list)) and a == b)


def pack_inputs(inputs: Sequence[Any]) -> dict[str, Any]:
    """A group's job inputs as a request sends them, each shared part once.

    Parallel branches all get the same input: ``{"input": x}``. Map iterations get what
    ItemSelector made of each item, typically the item plus the same parts of the state
    input (FINRA: one rule, and the same book and market snapshot for every rule): when
    every input is an object with the same keys in the same order, the values equal in
    all of them travel once, ``{"shared": {...}, "inputs": [{varying}], "keys": [...]}``.
    Anything else goes as it is, ``{"inputs": [...]}``.
    """
    first = inputs[0] if inputs else None
    if inputs and all(_same(x, first) for x in inputs[1:]):
        return {"input": first}
    if len(inputs) > 1 and all(isinstance(x, dict) for x in inputs):
        keys = list(first)
        if all(list(x) == keys for x in inputs[1:]):
            shared = {k: first[k] for k in keys
                      if all(_same(x[k], first[k]) for x in inputs[1:])}
            if shared:
                return {"shared": shared, "keys": keys,
                        "inputs": [{k: v for k, v in x.items() if k not in shared}
                                   for x in inputs]}
    return {"inputs": list(inputs)}


def unpack_inputs(request: dict[str, Any], count: int) -> list[Any]:
    """The job inputs of a group request (:func:`pack_inputs` reversed)."""
    if "input" in request:
        return [request["input"]] * count
    if "shared" in request:
        shared, keys = request["shared"], request["keys"]
        return [{k: shared[k] if k in shared else varying[k] for k in keys}
                for varying in request["inputs"]]
    return list(request["inputs"])


# --------------------------------------------------------------------- what pays

SPILL_ENV = "FAASTLANE_SPILL"  # "auto" (default): only containers that pay; "always"
ALWAYS = "always"
# The plan written beside this package by `faastlane compose` (absent when run from source).
PLAN_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "plan.json")
DEFAULT_INVOKE_MS, DEFAULT_TRANSFER_MS_PER_MB = 40.0, 20.0  # profiler/costs.py's defaults
_ROUND_MS: dict[str, float] = {}  # plan key -> ms one round of its jobs took here
_INVOKE_MS: dict[str, float] = {}  # plan key -> ms a remote group cost beyond its rounds
_HANDOFF: dict[str, dict[str, Any]] | None = None
_ACTIVATIONS = 0  # executions and groups this process has run: after one, it is warm


def plan_handoff(path: str = PLAN_FILE) -> dict[str, dict[str, Any]]:
    """Plan key -> the measured hand-off costs plan.json recorded for that state."""
    global _HANDOFF
    if _HANDOFF is None or path != PLAN_FILE:
        try:
            with open(path, encoding="utf-8") as handle:
                states = json.load(handle).get("states", {})
        except (OSError, ValueError):
            states = {}
        found = {k: v["handoff"] for k, v in states.items()
                 if isinstance(v, dict) and isinstance(v.get("handoff"), dict)}
        if path != PLAN_FILE:
            return found
        _HANDOFF = found
    return _HANDOFF


def choose_containers(count: int, workers: int, most: int, round_ms: float,
                      handoff: dict[str, Any], group_bytes: Callable[[int], int]
                      ) -> tuple[int, dict[int, float]]:
    """How many containers (1..``most``) finish ``count`` jobs soonest, and the estimates.

    One container: ``ceil(count / workers)`` rounds of ``round_ms``. ``c`` containers:
    the rounds of a group of ``ceil(count / c)`` plus what sending a group costs, one
    invocation and its input (``group_bytes(jobs)``) at the measured rate. Ties go to
    fewer containers.
    """
    invoke_ms = float(handoff.get("invoke_ms", DEFAULT_INVOKE_MS))
    per_mb = float(handoff.get("transfer_ms_per_mb", DEFAULT_TRANSFER_MS_PER_MB))
    estimates = {1: math.ceil(count / workers) * round_ms}
    for containers in range(2, most + 1):
        jobs = math.ceil(count / containers)
        estimates[containers] = (math.ceil(jobs / workers) * round_ms + invoke_ms
                                 + per_mb * group_bytes(jobs) / 1e6)
    best = min(estimates, key=lambda c: (estimates[c], c))
    return best, {c: round(ms, 3) for c, ms in estimates.items()}


def _learn(key: str, seconds: float, jobs: int, workers: int) -> None:
    """Remember how long a round of this state's jobs takes in this container."""
    measured = seconds * 1000 / max(1, math.ceil(jobs / max(1, workers)))
    known = _ROUND_MS.get(key)
    _ROUND_MS[key] = measured if known is None else (known + measured) / 2


def _learn_invoke(key: str, seconds: float | None, jobs: int, workers: int) -> None:
    """Remember what sending a group of this state really cost from this container: its
    wall time beyond its rounds at this container's round time (the invocation, the
    queueing, a slower or busier copy). It replaces the profile's ``invoke_ms``."""
    round_ms = _ROUND_MS.get(key)
    if seconds is None or round_ms is None:
        return
    measured = max(0.0, seconds * 1000 - math.ceil(jobs / max(1, workers)) * round_ms)
    known = _INVOKE_MS.get(key)
    _INVOKE_MS[key] = measured if known is None else (known + measured) / 2


# --------------------------------------------------------------------- the spiller


_KEYS: dict[int, tuple[Machine, dict[int, str]]] = {}


class Spiller:
    """Where one execution's parallel work goes: threads, processes or containers."""

    def __init__(self, workflow: Machine, options: Options,
                 invoker: Invoker | None, store: ObjectStore | None) -> None:
        # Plan keys per state, computed once per workflow (the workflow is kept alive
        # with them, so its id cannot be reused by another object).
        self.keys = _KEYS.setdefault(id(workflow), (workflow, state_keys(workflow)))[1]
        self.options = options
        self.invoker = invoker
        self.store = store

    @classmethod
    def from_environ(cls, workflow: Machine, options: Options) -> Spiller:
        """The platform and store of this activation (OpenWhisk sets its API key per
        activation, so this is made per execution, not per container)."""
        _count_activation()
        return cls(workflow, options, invoker_from_environ(), ObjectStore.from_environ())

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
        round_ms = _ROUND_MS.get(key)
        if os.environ.get(SPILL_ENV) == ALWAYS:
            return groups
        if round_ms is None:
            trace.record(state=state.name, type="Placement", containers=1,
                         reason="first execution here: timing a round")
            return [list(range(len(inputs)))]
        count = len(inputs)
        handoff = dict(plan_handoff().get(key, {}))
        if key in _INVOKE_MS:  # observed from here beats the profile's figure
            handoff["invoke_ms"] = _INVOKE_MS[key]
        chosen, estimates = choose_containers(
            count, workers, len(groups), round_ms, handoff,
            lambda jobs: len(json.dumps(pack_inputs(inputs[:jobs]), separators=(",", ":"))))
        trace.record(state=state.name, type="Placement", containers=chosen,
                     round_ms=round(round_ms, 3), estimates_ms=estimates,
                     invoke_ms=handoff.get("invoke_ms"), observed=key in _INVOKE_MS)
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
            outcomes = _on_pool(execution, state, work, local_workers, describe,
                                stop_on_error)
            if outcomes is None:
                outcomes = run_forked(work, local_workers, describe=describe,
                                      stop_on_error=stop_on_error, deadline=execution.deadline)
            _learn(key, time.monotonic() - began, count, local_workers)
            return outcomes
        if _pool_takes(execution, state, [work[i] for i in groups[0]]):
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
            return {"outcomes": _group_answer(outcomes, stop_on_error),
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
        for g, answer in enumerate(answers):  # each group: its outcomes and its time
            if isinstance(answer.value, dict):
                if g > 0:  # rounds are timed only when nothing spills (worth_it)
                    _learn_invoke(key, answer.value["seconds"], len(groups[g]), workers)
                answers[g] = replace(answer, value=answer.value["outcomes"])
        for group, answer in zip(groups, answers, strict=False):
            trace.extend(answer.records)
            if answer.error is not None:
                for index in group:
                    merged[index] = Outcome(error=answer.error, cancelled=answer.cancelled)
                continue
            values = answer.value if isinstance(answer.value, list) else []
            for position, index in enumerate(group):
                message = values[position] if position < len(values) else None
                merged[index] = outcome_from_json(message, describe(index))
        return [o if o is not None else Outcome(error=StatesError(EXIT_ERROR, "lost"))
                for o in merged]

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
                outcomes, warm = self._send(execution, state, jobs, body, stop_on_error)
                answers[k] = Outcome(value=outcomes)
                took[k] = time.monotonic() - began if warm else None
            except StatesError as err:
                answers[k] = Outcome(error=err)
            except Exception as err:  # noqa: BLE001 - becomes the group's ASL error
                answers[k] = Outcome(error=StatesError(EXIT_ERROR, f"{describe(jobs[0])}: "
                                                                   f"{err!r}"))

        threads = [threading.Thread(target=await_group, args=(k,), daemon=True,
                                    name=f"faastlane-group-{k}") for k in range(len(remote))]
        for thread in threads:
            thread.start()
        here = _on_pool(execution, state, [work[i] for i in local], workers,
                        lambda k: describe(local[k]), stop_on_error)
        if here is None:  # every pool worker busy with another instance: fork after all
            here = run_forked([work[i] for i in local], workers,
                              describe=lambda k: describe(local[k]),
                              stop_on_error=stop_on_error, deadline=execution.deadline)
        merged: list[Outcome | None] = [None] * len(work)
        for index, outcome in zip(local, here, strict=True):
            merged[index] = outcome
        failed = stop_on_error and _first_failure(here) is not None
        for thread, (jobs, _), k in zip(threads, remote, range(len(remote)), strict=True):
            if not failed:
                thread.join(None if execution.deadline is None
                            else max(0.0, execution.deadline - time.monotonic()))
            answer = answers[k]
            _learn_invoke(self.key_of(state), took[k], len(jobs), workers)
            if answer is None:
                error = (StatesError(EXIT_ERROR, f"cancelled: another branch of "
                                                 f"{state.name!r} failed") if failed
                         else StatesError(TIMEOUT, f"the group of {describe(jobs[0])} did "
                                                   f"not finish in time"))
                answer = Outcome(error=error, cancelled=failed)
            for position, index in enumerate(jobs):
                if answer.error is not None:
                    merged[index] = Outcome(error=answer.error, cancelled=answer.cancelled)
                else:
                    values = answer.value if isinstance(answer.value, list) else []
                    merged[index] = outcome_from_json(
                        values[position] if position < len(values) else None,
                        describe(index))
        return [o if o is not None else Outcome(error=StatesError(EXIT_ERROR, "lost"))
                for o in merged]

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
        return _group_answer(decoded, stop_on_error)

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
        return _group_answer(outcomes, stop_on_error)


def _pool_takes(execution: Execution, state: State, work: Sequence[Any]) -> bool:
    """Whether this container's warm pool can run ``work`` (isolation none, trusted
    functions, ...: see forkpool.py). The pool refuses sections of an execution that
    may spill, as their branches could need this activation's credentials; a group that
    reaches here is already placed, and a nested section never spills, so the pool is
    asked as for an execution that does not spill."""
    pool = getattr(execution, "forkpool", None)
    if pool is None or not work:
        return False
    saved, execution.spiller = execution.spiller, None
    try:
        return bool(pool.accepts(execution, state, work))
    finally:
        execution.spiller = saved


def _on_pool(execution: Execution, state: State, work: Sequence[Any], workers: int,
             describe: Callable[[int], str], stop_on_error: bool) -> list[Outcome] | None:
    """``work`` on the warm pool's workers; None when the pool does not take it."""
    if not _pool_takes(execution, state, work):
        return None
    pool = execution.forkpool  # type: ignore[attr-defined]
    saved, execution.spiller = execution.spiller, None
    try:
        return pool.run(execution, state, work, workers, describe, stop_on_error)
    finally:
        execution.spiller = saved


def _job(state: State, index: int, data: Any, execution: Execution) -> Callable[[], Any]:
    from .states import run_machine  # states imports execution, which imports this module

    branch = execution.for_branch()
    machine = job_machine(state, index)
    return lambda: run_machine(machine, data, branch)


# --------------------------------------------------------------------- the copy's side


def _count_activation() -> None:
    global _ACTIVATIONS
    _ACTIVATIONS += 1


def is_group_request(params: Any) -> bool:
    return isinstance(params, dict) and GROUP_KEY in params


def serve_group(orchestrator: Orchestrator, params: dict[str, Any]) -> dict[str, Any]:
    """The sub-workflow entry: run one group of a Parallel/Map for another copy."""
    from .execution import Execution  # noqa: PLC0415 (import cycle through states)
    from .states import BranchJob  # noqa: PLC0415

    _count_activation()
    store = ObjectStore.from_environ()
    request = params[GROUP_KEY]
    if STORED_KEY in request:
        if store is None:
            return _failed_answer(StatesError(RUNTIME, "a stored group request arrived but "
                                                       "no FAASTLANE_SPILL_STORE is set"))
        request = store.get_json(request[STORED_KEY])
    try:
        state = find_state(orchestrator.workflow, request["state"])
        jobs = request["jobs"]
        inputs = unpack_inputs(request, len(jobs))
        # A group never spills again: its width was sized to this container.
        options = replace(orchestrator.options, max_containers=1)
        execution = Execution(orchestrator.name, request["context"]["Execution"]["Input"],
                              orchestrator.functions, options, request.get("remaining"),
                              request.get("execution"))
        execution.context_base = request["context"]
        execution.spiller = Spiller(orchestrator.workflow, options, None, None)
        variables = request.get("variables") or {}
        execution.variables = Variables(variables, sum(encoded_size(v) for v in variables.values()))
        # The container's warm pool workers when it takes the group, a fork per worker
        # otherwise (as for any Parallel/Map here).
        execution.forkpool = getattr(orchestrator, "pool", None)  # type: ignore[attr-defined]
        work = [BranchJob.make(state, i, job_machine(state, i), data, execution)
                for i, data in zip(jobs, inputs, strict=False)]
        workers = options.cpu_budget()
        if request.get("max_concurrency", 0) > 0:
            workers = min(workers, request["max_concurrency"])
        started = time.monotonic()
        stop_on_error = request.get("stop_on_error", True)

        def describe(k: int) -> str:
            return f"job {jobs[k]} of {state.name!r}"

        outcomes = _on_pool(execution, state, work, workers, describe, stop_on_error)
        if outcomes is None:
            outcomes = run_forked(work, workers, stop_on_error=stop_on_error,
                                  deadline=execution.deadline, describe=describe)
    except StatesError as err:
        return _failed_answer(err)
    answer = {OUTCOMES_KEY: [outcome_to_json(o) for o in outcomes], "warm": _ACTIVATIONS > 1,
              "seconds": round(time.monotonic() - started, 6)}
    limit = request.get("reply_limit")
    if limit and len(json.dumps(answer, separators=(",", ":"))) > limit:
        if store is None:
            return _failed_answer(StatesError(
                "States.DataLimitExceeded", f"the results of {len(jobs)} jobs of "
                                            f"{state.name!r} exceed the platform's payload "
                                            f"limit and no FAASTLANE_SPILL_STORE is set"))
        return {STORED_KEY: store.put_json(answer, "outcomes")}
    return answer


def _failed_answer(error: StatesError) -> dict[str, Any]:
    """Every job of the group fails with ``error``: the caller raises it for the group."""
    return {"group_error": {"error": error.error, "cause": error.cause}}
