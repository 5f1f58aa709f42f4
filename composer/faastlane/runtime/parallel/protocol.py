"""The wire protocol between copies of an action that share a parallel section.

A group request names the Parallel/Map state by its plan key and carries its jobs'
inputs, each shared part once (:func:`pack_inputs`):

    {"__faastlane_group": {"state": "RunAuditRules", "jobs": [13, 14, ...],
                           "input": ... | "inputs": [...] | "shared": {...}, ...,
                           "variables": {...},
                           "context": {...}, "remaining": 41.5, ...}}

and the answer holds one outcome per job, in job order:
``{"__faastlane_outcomes": [{"value": ...} | {"error", "cause"}, ...]}``. A request or
answer over the platform's payload limit travels through the object store, marked
``{"stored": KEY}``. Plan keys name every state of a workflow (``Fetch``,
``Fetch/Branches/0/Inner``, ``Rules/ItemProcessor/Check``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..asl.errors import RUNTIME, StatesError
from ..asl.model import Machine, Map, Parallel, State
from ..engine.forking import Outcome
from ..engine.functions import EXIT_ERROR

GROUP_KEY = "__faastlane_group"
OUTCOMES_KEY = "__faastlane_outcomes"
STORED_KEY = "stored"  # the group request / answer is in the object store under this key

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


def section_of(state: State) -> Parallel | Map:
    """``state`` as the Parallel or Map whose jobs a request names (as
    :func:`job_machine` checks it)."""
    if isinstance(state, (Parallel, Map)):
        return state
    raise StatesError(RUNTIME, f"state {state.name!r} is neither a Parallel nor a Map")


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


def first_failure(outcomes: Sequence[Outcome]) -> StatesError | None:
    for outcome in outcomes:
        if outcome.error is not None and not outcome.cancelled:
            return outcome.error
    return None


def group_answer(outcomes: Sequence[Outcome], stop_on_error: bool) -> list[dict[str, Any]]:
    """A group's outcomes as JSON; with ``stop_on_error`` a failure is raised instead, so
    that the other groups are cancelled as sibling branches are."""
    failure = first_failure(outcomes) if stop_on_error else None
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
    first: Any = inputs[0] if inputs else None
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


def merge_group(merged: list[Outcome | None], jobs: Sequence[int], answer: Outcome,
                describe: Any) -> None:
    """Put one group's answer (its outcomes as JSON, or the group's failure) into
    ``merged`` at its jobs' indexes; a job the answer lacks fails: nothing is dropped."""
    values = answer.value if isinstance(answer.value, list) else []
    for position, index in enumerate(jobs):
        if answer.error is not None:
            merged[index] = Outcome(error=answer.error, cancelled=answer.cancelled)
        else:
            merged[index] = outcome_from_json(
                values[position] if position < len(values) else None, describe(index))


def complete(merged: Sequence[Outcome | None]) -> list[Outcome]:
    """The merged outcomes, a job no group answered for failed as lost."""
    return [o if o is not None else Outcome(error=StatesError(EXIT_ERROR, "lost"))
            for o in merged]
