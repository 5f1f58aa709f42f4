"""The copy's side of spilling: run one group of a Parallel/Map for another copy.

A platform entry point that receives a group request (:func:`is_group_request`) answers
it with :func:`serve_group` instead of running the workflow (:mod:`protocol`).
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any, Protocol

from ..asl.errors import RUNTIME, StatesError
from ..asl.model import Machine
from ..asl.variables import Variables, encoded_size
from ..engine import handoff_scope
from ..engine.execution import Execution
from ..engine.forking import run_forked
from ..engine.functions import FunctionRegistry
from ..interpreter.states import BranchJob
from ..options import Options
from . import policy
from .forkpool import ForkPool
from .object_store import ObjectStore
from .protocol import (
    GROUP_KEY,
    OUTCOMES_KEY,
    STORED_KEY,
    find_state,
    job_machine,
    outcome_to_json,
    section_of,
    unpack_inputs,
)
from .sections import Sections
from .spill import Spiller


class GroupHost(Protocol):
    """What serving a group needs of the action (the Orchestrator)."""

    name: str
    workflow: Machine
    functions: FunctionRegistry
    options: Options
    pool: ForkPool


def is_group_request(params: Any) -> bool:
    return isinstance(params, dict) and GROUP_KEY in params


def serve_group(host: GroupHost, params: dict[str, Any]) -> dict[str, Any]:
    """The sub-workflow entry: run one group of a Parallel/Map for another copy."""
    with handoff_scope.held():  # the group's data is in flight
        return _serve_group(host, params)


def _serve_group(host: GroupHost, params: dict[str, Any]) -> dict[str, Any]:
    policy.count_activation()
    store = ObjectStore.from_environ()
    request = params[GROUP_KEY]
    if STORED_KEY in request:
        if store is None:
            return _failed_answer(StatesError(RUNTIME, "a stored group request arrived but "
                                                       "no FAASTLANE_SPILL_STORE is set"))
        request = store.get_json(request[STORED_KEY])
    try:
        state = find_state(host.workflow, request["state"])
        jobs = request["jobs"]
        inputs = unpack_inputs(request, len(jobs))
        options = replace(host.options, max_containers=1)
        # The container's warm pool workers when they take the group, a fork per worker
        # otherwise (as for any Parallel/Map here); the group never spills again.
        sections = Sections(Spiller(host.workflow, options, host.pool), spill=False)
        execution = Execution(host.name, request["context"]["Execution"]["Input"],
                              host.functions, options, request.get("remaining"),
                              request.get("execution"), sections=sections)
        execution.context_base = request["context"]
        variables = request.get("variables") or {}
        execution.variables = Variables(variables, sum(encoded_size(v) for v in variables.values()))
        work = [BranchJob.make(section_of(state), i, job_machine(state, i), data, execution)
                for i, data in zip(jobs, inputs, strict=False)]
        workers = options.cpu_budget()
        if request.get("max_concurrency", 0) > 0:
            workers = min(workers, request["max_concurrency"])
        started = time.monotonic()
        stop_on_error = request.get("stop_on_error", True)

        def describe(k: int) -> str:
            return f"job {jobs[k]} of {state.name!r}"

        outcomes = sections.spiller.on_pool(execution, state, work, workers, describe,
                                            stop_on_error)
        if outcomes is None:
            outcomes = run_forked(work, workers, stop_on_error=stop_on_error,
                                  deadline=execution.deadline, describe=describe)
    except StatesError as err:
        return _failed_answer(err)
    answer = {OUTCOMES_KEY: [outcome_to_json(o) for o in outcomes], "warm": policy.warm(),
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
