"""The isolation modes (``runtime/engine/modes.py``): one object per mode decides where a
Task's function runs, and plan.json's placements come from the same objects, so that
what compose writes and what the runtime does cannot disagree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from faastlane.compose.action import prepare
from faastlane.runtime.action_plan import ActionPlan
from faastlane.runtime.asl.model import PROCESS, THREAD, Map, Parallel, Task, walk_states
from faastlane.runtime.engine import modes
from faastlane.runtime.options import MPK, NONE, PROCESS_ISOLATION, Options
from faastlane.runtime.parallel.protocol import state_keys

FUNCTIONS = ("Fetch", "Audit", "Report")


def _app(root: Path, settings: dict[str, object]) -> Path:
    """A workflow calling Fetch, then Audit in a Map, then Report (by FunctionName.$)."""
    task = {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke"}
    states = {
        "Fetch": {**task, "Parameters": {"FunctionName": "Fetch", "Payload.$": "$"},
                  "ResultSelector": {"items.$": "$.Payload"}, "Next": "Rules"},
        "Rules": {"Type": "Map", "ItemsPath": "$.items", "ItemProcessor": {
            "StartAt": "Audit", "States": {"Audit": {
                **task, "Parameters": {"FunctionName": "Audit", "Payload.$": "$"},
                "End": True}}}, "ResultPath": "$.audits", "Next": "Report"},
        "Report": {**task, "Parameters": {"FunctionName.$": "$.report", "Payload.$": "$"},
                   "End": True},
    }
    (root / "functions").mkdir(parents=True)
    (root / "workflow.json").write_text(json.dumps({"StartAt": "Fetch", "States": states}))
    for name in FUNCTIONS:
        (root / "functions" / f"{name}.py").write_text(
            "def handler(event, context):\n    return event\n")
    (root / "faastlane.json").write_text(json.dumps(settings))
    return root


CASES = [
    ({"isolation": NONE}, {}),
    ({"isolation": MPK}, {}),
    ({"isolation": PROCESS_ISOLATION}, {}),
    ({"isolation": PROCESS_ISOLATION, "untrusted": ["Audit"]}, {}),
    ({"isolation": PROCESS_ISOLATION, "trusted": list(FUNCTIONS)}, {}),
    ({"isolation": PROCESS_ISOLATION}, {"processes_only": True}),
    ({"isolation": NONE}, {"processes_only": True}),
]


@pytest.mark.parametrize(("settings", "flags"), CASES)
def test_plan_json_places_tasks_as_the_runtime_does(tmp_path: Path, settings: dict[str, object],
                                                     flags: dict[str, bool]) -> None:
    composition = prepare(str(_app(tmp_path / "app", settings)), **flags)
    plan = composition.plan
    # The runtime's side: the mode an Orchestrator builds from the plan.json it reads.
    action = ActionPlan.from_json(json.loads(json.dumps(plan)))
    mode = modes.for_options(action.options, modes.isolated_functions(
        action.options, FUNCTIONS, action.marked("untrusted", "sensitive"),
        action.marked("trusted")))
    keys = state_keys(composition.workflow)
    tasks = [s for s in walk_states(composition.workflow) if isinstance(s, Task)]
    assert len(tasks) == 3
    for task in tasks:
        assert plan["states"][keys[id(task)]]["placement"] == mode.placement(
            task.function, task.placement), task.name
    for section in (s for s in walk_states(composition.workflow)
                    if isinstance(s, (Parallel, Map))):
        if mode.only_sandboxed(section):  # the runtime runs it on threads, waiting
            assert plan["states"][keys[id(section)]]["placement"] == "threads"


def test_process_isolation_places_each_function_by_its_marks() -> None:
    options = Options(isolation=PROCESS_ISOLATION)
    mode = modes.for_options(options, modes.isolated_functions(
        options, FUNCTIONS, marked={"Audit"}))
    assert mode.sandboxed() == {"Audit"}
    assert mode.placement("Audit", THREAD) == modes.SANDBOX
    assert mode.placement("Fetch", THREAD) == THREAD
    assert mode.placement(None, THREAD) == modes.SANDBOX  # may call Audit
    everyone_trusted = modes.for_options(options, modes.isolated_functions(
        options, FUNCTIONS, marked=(), trusted=FUNCTIONS))
    assert everyone_trusted.sandboxed() == frozenset()
    assert everyone_trusted.placement(None, THREAD) == THREAD
    # An Execution made without an Orchestrator has no sandboxes: every call forks.
    assert modes.for_options(options, None).placement("Audit", THREAD) == PROCESS


def test_only_mpk_loads_privately_and_calls_elsewhere_copy_the_event_there() -> None:
    shared, private = (modes.for_options(Options(isolation=m)) for m in (NONE, MPK))
    assert (shared.loads_privately(), shared.copies_event("Fetch", THREAD)) == (False, True)
    # mpk's gate copies the event into the function's heap
    assert (private.loads_privately(), private.copies_event("Fetch", THREAD)) == (True, False)
    # A sandboxed or forked call gets its copy from the wire: none made here.
    sandboxed = modes.for_options(Options(isolation=PROCESS_ISOLATION), frozenset({"Audit"}))
    assert not sandboxed.copies_event("Audit", THREAD)
    assert sandboxed.copies_event("Fetch", THREAD)
    forked = modes.for_options(Options(isolation=NONE, processes_only=True))
    assert not forked.copies_event("Fetch", THREAD)
    assert private.explain_task("Fetch")[0] == THREAD
    assert "protection domain" in private.explain_task("Fetch")[1]


@pytest.mark.parametrize("isolation", [NONE, PROCESS_ISOLATION, MPK])
def test_minus_p_forks_every_call_in_every_mode(isolation: str) -> None:
    options = Options(isolation=isolation, processes_only=True)
    mode = modes.for_options(options, modes.isolated_functions(options, FUNCTIONS, ()))
    assert mode.placement("Fetch", THREAD) == PROCESS
    assert mode.explain_task("Fetch")[0] == PROCESS
    assert mode.sandboxed() is None
