"""What tests/unit/test_fuzz_workflows.py found, one regression test each, with the AWS
documentation passage the fix follows."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asl_acceptance import refusals

from faastlane.runtime.asl.errors import RUNTIME, StatesError
from faastlane.runtime.asl.model import machine_from_asl
from faastlane.runtime.engine.execution import Execution
from faastlane.runtime.engine.functions import FunctionRegistry
from faastlane.runtime.interpreter.states import run_machine
from faastlane.runtime.options import Options


def run(definition: dict, data: Any) -> Any:
    execution = Execution("wf", data, FunctionRegistry("/nonexistent", {}), Options())
    return run_machine(machine_from_asl(definition), data, execution)


def test_validate_reports_problems_of_states_named_with_non_ascii_digits() -> None:
    # "¹".isdigit() is true but int("¹") fails: sorting the problems raised ValueError.
    definition = {"StartAt": "0", "States": {
        "0": {"Type": "Pass", "End": True}, "¹": {"Type": "Pass", "End": True}}}
    assert refusals(json.dumps(definition)) == [
        "/States/¹: state '¹' is unreachable from StartAt"]


@pytest.mark.parametrize("field", ["ErrorPath", "CausePath"])
@pytest.mark.parametrize("value", [{}, [1], 3, None, True])
def test_a_fail_path_to_a_value_that_is_no_string_is_a_runtime_error(field: str,
                                                                     value: Any) -> None:
    # Fail state: "the reference path must select a field whose value is a string"; the
    # error name was the selected object itself ({"Error": {}}), not an ASL error.
    definition = {"StartAt": "F", "States": {"F": {"Type": "Fail", field: "$.v"}}}
    with pytest.raises(StatesError) as caught:
        run(definition, {"v": value})
    assert caught.value.error == RUNTIME
    assert caught.value.cause.endswith(
        f'The {field} field refers to value "{json.dumps(value, separators=(",", ":"))}" '
        "which is not a valid string: $.v")


@pytest.mark.parametrize("kind", ["Parallel", "Map"])
def test_states_nested_in_a_jsonata_state_use_the_top_level_language(kind: str) -> None:
    # "If the state does not contain a QueryLanguage field, then it will use the query
    # language specified in the top-level QueryLanguage field": a JSONPath Choice inside
    # a JSONata Parallel/Map of a JSONPath workflow crashed (KeyError: 'Condition').
    inner = {"StartAt": "C", "States": {
        "C": {"Type": "Choice", "Choices": [{"Variable": "$.x", "NumericEquals": 1,
                                             "Next": "One"}], "Default": "Other"},
        "One": {"Type": "Pass", "Result": "one", "End": True},
        "Other": {"Type": "Pass", "Result": "other", "End": True}}}
    state: dict[str, Any] = {"Type": kind, "QueryLanguage": "JSONata", "End": True}
    if kind == "Parallel":
        state.update(Branches=[inner], Arguments="{% $states.input.items[0] %}")
        expected: Any = ["one"]
    else:
        state.update(ItemProcessor=inner, Items="{% $states.input.items %}")
        expected = ["one", "other"]
    definition = {"StartAt": "S", "States": {"S": state}}
    assert refusals(json.dumps(definition)) == []
    assert run(definition, {"items": [{"x": 1}, {"x": 2}]}) == expected


def test_a_task_timeout_path_to_nothing_is_a_runtime_error() -> None:
    # A TimeoutSecondsPath that selects nothing escaped as a Python PathNotFound.
    definition = {"StartAt": "T", "States": {"T": {
        "Type": "Task", "Resource": "echo", "TimeoutSecondsPath": "$.a", "End": True}}}
    with pytest.raises(StatesError) as caught:
        run(definition, None)
    assert caught.value.error == RUNTIME
    assert caught.value.cause.endswith(
        "The TimeoutSecondsPath parameter does not reference an input value: $.a")
