"""ASL features that validate but that this Orchestrator cannot run yet.

Running a workflow while silently ignoring one of its fields would give wrong results, so
each is refused at compose time with a pointer, like any other problem. Both query
languages (JSONPath and JSONata) and workflow variables (``Assign``) run; what is left
is the distributed Map's S3 readers and writers, which a one-container action lacks, and
cross-account credentials.
"""

from __future__ import annotations

from typing import Any

from .problem import Problem, child

# Field -> why it is refused.
_REFUSED_FIELDS = {
    "ItemReader": "a distributed Map's ItemReader is not supported",
    "ItemBatcher": "a distributed Map's ItemBatcher is not supported",
    "ResultWriter": "a distributed Map's ResultWriter is not supported",
    "Credentials": "cross-account Credentials are not supported: functions run in the action",
}


def _machine(machine: Any, base: str, problems: list[Problem]) -> None:
    for name, state in machine.get("States", {}).items():
        where = child(base, "States", name)
        for field, why in _REFUSED_FIELDS.items():
            if field in state:
                problems.append(Problem(child(where, field), why))
        processor = state.get("ItemProcessor")
        if isinstance(processor, dict):
            # A DISTRIBUTED Map over its state input (readers, batchers and writers are
            # refused above) runs its child executions like inline iterations: forked
            # processes of this action.
            _machine(processor, child(where, "ItemProcessor"), problems)
        if isinstance(state.get("Iterator"), dict):
            _machine(state["Iterator"], child(where, "Iterator"), problems)
        for i, branch in enumerate(state.get("Branches", [])):
            _machine(branch, child(where, "Branches", i), problems)


def unsupported_features(definition: dict[str, Any]) -> list[Problem]:
    """Problems for every field of a valid workflow that the runtime would not honour."""
    problems: list[Problem] = []
    _machine(definition, "", problems)
    return problems
