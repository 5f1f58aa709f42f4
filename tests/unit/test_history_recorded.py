"""The execution history against histories recorded on AWS.

Each fixture in ``tests/fixtures/history/`` holds a definition, the input sent and the
``get_execution_history`` events AWS answered, as LocalStack's Step Functions snapshot
tests recorded them (localstack/localstack, Apache-2.0; the fixture names its source).
The workflow runs in-process with the history on, and its events must equal the recorded
ones: types, ids, previousEventIds and details, modulo timestamps and ARNs, normalised as
the recordings were (``history_normalise``). Parallel and Map sections run as they run by
default (forked processes) and on threads (the -Th variant): the history is the same.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from faastlane.runtime.asl.errors import StatesError
from faastlane.runtime.asl.model import machine_from_asl
from faastlane.runtime.engine import history
from faastlane.runtime.engine.execution import Execution
from faastlane.runtime.engine.functions import FunctionRegistry
from faastlane.runtime.interpreter.states import run_machine
from faastlane.runtime.options import PARALLEL_THREADS, Options
from history_normalise import matches, normalised

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "history"
RECORDED = sorted(path.stem for path in FIXTURES.glob("*.json"))


@pytest.fixture
def history_on() -> Iterator[None]:
    history.enable()
    try:
        yield
    finally:
        history.enabled = False


def execute(definition: dict, text: str, options: Options | None = None) -> list[dict]:
    """Run one execution as ``Orchestrator.execute`` does; its history, with the input as
    given (``faastlane run`` passes its text)."""
    data = json.loads(text)
    execution = Execution("wf", data, FunctionRegistry("/nonexistent", {}),
                          options or Options())
    history.started(execution, data)
    try:
        output = run_machine(machine_from_asl(definition), data, execution)
    except StatesError as err:
        history.ended(execution, error=err)
    else:
        history.ended(execution, output)
    assert execution.events is not None
    history.given_input(execution.events, text)
    return execution.events


def recorded(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def assert_same_history(recorded_events: list[dict], ours: list[dict]) -> None:
    want, got = normalised(recorded_events), normalised(ours)
    assert [e["type"] for e in got] == [e["type"] for e in want]
    for w, g in zip(want, got, strict=True):
        assert matches(w, g), f"recorded {json.dumps(w)}\nours     {json.dumps(g)}"


@pytest.mark.parametrize("name", RECORDED)
def test_history_equals_the_aws_recording(name: str, history_on: None) -> None:
    case = recorded(name)
    assert_same_history(case["events"], execute(case["definition"], case["input"]))


@pytest.mark.parametrize("name", [n for n in RECORDED if n.startswith(("map", "parallel"))])
def test_sections_on_threads_give_the_same_history(name: str, history_on: None) -> None:
    case = recorded(name)
    options = replace(Options(), parallel=PARALLEL_THREADS)
    assert_same_history(case["events"], execute(case["definition"], case["input"], options))


def test_ids_are_numbered_from_1_and_link_backwards(history_on: None) -> None:
    case = recorded("map_nested")
    events = execute(case["definition"], case["input"])
    assert [e["id"] for e in events] == list(range(1, len(events) + 1))
    assert all(0 <= e["previousEventId"] < e["id"] for e in events)


def test_the_cause_cites_the_entered_event_of_the_history(history_on: None) -> None:
    # AWS: "An error occurred while executing the state 'fail' (entered at the event id
    # #4)", and FailStateEntered is event 4 (test_invalid_jsonpath[...ERRORPATH]).
    case = recorded("runtime_error_in_fail_path")
    events = execute(case["definition"], case["input"])
    failed = events[-1]["executionFailedEventDetails"]
    entered = next(e for e in events if e["type"] == "FailStateEntered")
    assert f"(entered at the event id #{entered['id']})" in failed["cause"]


def test_a_later_iteration_cites_its_id_in_the_laid_out_history(history_on: None) -> None:
    # Iterations run in a forked worker and are laid out one after the other: the cause
    # of iteration 1 must cite the id its state entry has in the history. One at a time
    # (MaxConcurrency 1): side by side, iteration 1 may fail first and cancel iteration 0,
    # whose events are then not laid out (no MapIterationAborted yet).
    definition = {"StartAt": "M", "States": {"M": {
        "Type": "Map", "End": True, "MaxConcurrency": 1,
        "ItemProcessor": {"StartAt": "P", "States": {
            "P": {"Type": "Pass", "Parameters": {"v.$": "$.v"}, "End": True}}}}}}
    events = execute(definition, '[{"v": 1}, {"u": 2}]')
    cause = events[-1]["executionFailedEventDetails"]["cause"]
    second = [e for e in events if e["type"] == "PassStateEntered"][1]
    assert second["stateEnteredEventDetails"]["input"] == '{"u":2}'
    assert f"(entered at the event id #{second['id']})" in cause


def test_without_the_history_no_events_are_built_and_causes_are_the_same() -> None:
    case = recorded("runtime_error_in_fail_path")
    data = json.loads(case["input"])
    execution = Execution("wf", data, FunctionRegistry("/nonexistent", {}), Options())
    with pytest.raises(StatesError) as caught:
        run_machine(machine_from_asl(case["definition"]), data, execution)
    assert execution.events is None
    aws = case["events"][-1]["executionFailedEventDetails"]["cause"]
    assert "(entered at the event id #4)" in aws and matches(aws, caught.value.cause)


def test_the_workflow_timeout_ends_the_history_with_execution_timed_out(
        history_on: None) -> None:
    definition = {"TimeoutSeconds": 1, "StartAt": "W",
                  "States": {"W": {"Type": "Wait", "Seconds": 5, "End": True}}}
    execution = Execution("wf", {}, FunctionRegistry("/nonexistent", {}), Options(),
                          timeout_seconds=0.2)
    history.started(execution, {})
    with pytest.raises(StatesError) as caught:
        run_machine(machine_from_asl(definition), {}, execution)
    history.ended(execution, error=caught.value)
    assert execution.events is not None
    assert [(e["id"], e["previousEventId"], e["type"]) for e in execution.events] == [
        (1, 0, "ExecutionStarted"), (2, 0, "WaitStateEntered"), (3, 2, "ExecutionTimedOut")]
    assert execution.events[-1]["executionTimedOutEventDetails"]["error"] == "States.Timeout"
