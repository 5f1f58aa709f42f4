"""Workflow variables: Assign, $name in both query languages, scopes and size limits.

Each test names the passage of the Step Functions developer guide, "Passing data between
states with variables" (PDV), that it follows. Workflows run in-process; variables across
Task Retry/Catch and forked Task processes are covered through the CLI in
tests/integration/test_jsonata_workflows.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from faastlane.runtime.asl.errors import DATA_LIMIT_EXCEEDED, RUNTIME, StatesError
from faastlane.runtime.asl.model import machine_from_asl
from faastlane.runtime.asl.variables import MAX_ASSIGN_BYTES, Variables
from faastlane.runtime.engine.execution import Execution
from faastlane.runtime.engine.functions import FunctionRegistry
from faastlane.runtime.interpreter.states import run_machine
from faastlane.runtime.options import PARALLEL_PROCESSES, PARALLEL_THREADS, Options


def run(definition: dict, data: Any, parallel: str = PARALLEL_THREADS) -> Any:
    execution = Execution("wf", data, FunctionRegistry("/nonexistent", {}),
                          Options(parallel=parallel))
    return run_machine(machine_from_asl(definition), data, execution)


def chain(*states: tuple[str, dict], language: str | None = None) -> dict:
    """A machine whose states run in the order given."""
    body = {}
    for i, (name, state) in enumerate(states):
        state = dict(state)
        if state["Type"] not in ("Choice", "Succeed", "Fail"):
            if i + 1 < len(states):
                state["Next"] = states[i + 1][0]
            else:
                state["End"] = True
        body[name] = state
    machine = {"StartAt": states[0][0], "States": body}
    if language:
        machine["QueryLanguage"] = language
    return machine


def failure(call: Any) -> StatesError:
    with pytest.raises(StatesError) as caught:
        call()
    return caught.value


# --------------------------------------------------------------- the scope object


def test_inner_scope_reads_outer_variables_but_cannot_assign_them() -> None:
    # PDV, variable scope: nested Map/Parallel states read outer variables; a value
    # assigned in an inner scope to an outer variable's name is an error.
    outer = Variables()
    outer.assign({"x": 1}, "S")
    inner = outer.inner()
    assert inner.view == {"x": 1}
    inner.assign({"y": 2}, "T")
    assert inner.view == {"x": 1, "y": 2} and outer.view == {"x": 1}
    assert failure(lambda: inner.assign({"x": 5}, "T")).error == RUNTIME


def test_a_view_taken_at_state_entry_does_not_change() -> None:
    # PDV: a state reads the values it was entered with; assignments take effect after.
    variables = Variables()
    variables.assign({"x": 1}, "A")
    entered = variables.view
    variables.assign({"x": 2}, "B")
    assert entered == {"x": 1} and variables.view == {"x": 2}


def test_size_limits_are_data_limit_exceeded() -> None:
    # PDV, size limits: one Assign stores at most 256 KiB, an execution's variables total
    # at most 10 MiB; beyond that the state fails with States.DataLimitExceeded.
    variables = Variables()
    big = "x" * (MAX_ASSIGN_BYTES - 10)
    assert failure(lambda: variables.assign({"a": big, "b": big}, "S")).error \
        == DATA_LIMIT_EXCEEDED
    assert variables.view == {}  # nothing stored from a failed Assign
    for i in range(40):
        variables.assign({f"v{i}": big}, "S")  # 40 x ~256 KiB = ~10 MiB
    assert failure(lambda: variables.assign({"one_more": big}, "S")).error \
        == DATA_LIMIT_EXCEEDED
    # Re-assigning a variable replaces its size rather than adding to it.
    variables.assign({"v0": "small"}, "S")
    variables.assign({"one_more": big}, "S")


# --------------------------------------------------------------- JSONPath states


def test_jsonpath_assign_from_literals_paths_context_and_intrinsics() -> None:
    # PDV: "Assign": {"productName": "product1", "count": 42, "available": true}; in
    # JSONPath states, keys ending in .$ take paths, context paths or intrinsics, and
    # $name reads a variable in later states.
    definition = chain(
        ("Set", {"Type": "Pass", "Assign": {
            "productName": "product1", "count": 42, "available": True,
            "fromInput.$": "$.order.id", "state.$": "$$.State.Name",
            "label.$": "States.Format('order {}', $.order.id)"}}),
        ("Use", {"Type": "Pass", "Parameters": {
            "name.$": "$productName", "count.$": "$count", "available.$": "$available",
            "id.$": "$fromInput", "state.$": "$state", "label.$": "$label",
            "twice.$": "States.MathAdd($count, $count)"}}))
    assert run(definition, {"order": {"id": 7}}) == {
        "name": "product1", "count": 42, "available": True, "id": 7, "state": "Set",
        "label": "order 7", "twice": 84}


def test_jsonpath_assign_reads_the_state_result() -> None:
    # PDV, JSONPath: Assign's $ is the state's result -- a Pass state's Result here.
    definition = chain(
        ("Answer", {"Type": "Pass", "Result": {"answer": 42},
                    "Assign": {"theAnswer.$": "$.answer"}, "ResultPath": "$.r"}),
        ("Read", {"Type": "Pass", "Parameters": {"a.$": "$theAnswer"}}))
    assert run(definition, {}) == {"a": 42}


def test_variables_in_input_output_paths_and_choice() -> None:
    # PDV: variables may be referenced wherever JSONPath reads data: InputPath,
    # OutputPath, Choice Variable, ItemsPath.
    definition = chain(
        ("Set", {"Type": "Pass", "Assign": {"limit": 10, "box": {"items": [1, 2]}}}),
        ("In", {"Type": "Pass", "InputPath": "$box"}),
        ("Route", {"Type": "Choice", "Choices": [
            {"Variable": "$limit", "NumericGreaterThan": 5, "Next": "Each"}],
            "Default": "Out"}),
        ("Each", {"Type": "Map", "ItemsPath": "$box.items", "ItemProcessor": {
            "StartAt": "P", "States": {"P": {"Type": "Pass", "Parameters": {
                "item.$": "$", "limit.$": "$limit"}, "End": True}}}, "Next": "Out"}),
        ("Out", {"Type": "Pass", "Parameters": {"mapped.$": "$", "limit.$": "$limit"},
                 "OutputPath": "$.mapped"}))
    assert run(definition, {}) == [{"item": 1, "limit": 10}, {"item": 2, "limit": 10}]
    assert run(chain(("Set", {"Type": "Pass", "Assign": {"o": {"k": 1}}}),
                     ("Out", {"Type": "Pass", "OutputPath": "$o"})), {}) == {"k": 1}


def test_assignments_take_effect_after_the_state() -> None:
    # PDV, evaluation order: a state's InputPath, OutputPath and Assign all read the
    # values it was entered with; the new value is visible from the next state on.
    definition = chain(
        ("First", {"Type": "Pass", "Assign": {"answer": 42}}),
        ("Second", {"Type": "Pass", "InputPath": "$answer", "ResultPath": "$.theAnswer",
                    "OutputPath": "$answer", "Assign": {"answer": "changed"}}),
        ("Third", {"Type": "Pass", "Parameters": {"now.$": "$answer", "was.$": "$"}}))
    assert run(definition, {}) == {"now": "changed", "was": 42}


def test_one_assign_reads_old_values_so_it_can_swap() -> None:
    # PDV: every expression of one Assign reads the values from state entry.
    definition = chain(
        ("Init", {"Type": "Pass", "Assign": {"x": 1, "y": 2}}),
        ("Swap", {"Type": "Pass", "Assign": {"x.$": "$y", "y.$": "$x"}}),
        ("Show", {"Type": "Pass", "Parameters": {"x.$": "$x", "y.$": "$y"}}))
    assert run(definition, {}) == {"x": 2, "y": 1}


def test_an_undefined_variable_is_a_runtime_error() -> None:
    definition = chain(("Use", {"Type": "Pass", "Parameters": {"v.$": "$nothing"}}))
    assert failure(lambda: run(definition, {})).error == RUNTIME


@pytest.mark.parametrize("parallel", [PARALLEL_THREADS, PARALLEL_PROCESSES])
def test_parallel_branches_read_outer_variables_and_keep_their_own(parallel: str) -> None:
    # PDV, scope: branches read outer variables; what a branch assigns stays in it
    # (return data with the output). Forked branches get the outer variables too.
    branch = chain(
        ("Own", {"Type": "Pass", "Assign": {"mine.$": "$.n"}}),
        ("Show", {"Type": "Pass", "Parameters": {"outer.$": "$base", "mine.$": "$mine"}}))
    definition = chain(
        ("Set", {"Type": "Pass", "Assign": {"base": "b"}}),
        ("Par", {"Type": "Parallel", "Branches": [branch, branch]}),
        ("After", {"Type": "Pass", "Parameters": {"base.$": "$base",
                                                  "results.$": "$"}}))
    out = run(definition, {"n": 3}, parallel)
    assert out == {"base": "b", "results": [{"outer": "b", "mine": 3}] * 2}
    leak = chain(("Par", {"Type": "Parallel", "Branches": [branch]}),
                 ("After", {"Type": "Pass", "Parameters": {"mine.$": "$mine"}}))
    assert failure(lambda: run(leak, {"n": 1}, parallel)).error == RUNTIME


@pytest.mark.parametrize("parallel", [PARALLEL_THREADS, PARALLEL_PROCESSES])
def test_a_branch_cannot_assign_an_outer_variable(parallel: str) -> None:
    # PDV, scope: inner states cannot assign variables of an outer scope.
    definition = chain(
        ("Set", {"Type": "Pass", "Assign": {"total": 0}}),
        ("Each", {"Type": "Map", "ItemProcessor": chain(
            ("Add", {"Type": "Pass", "Assign": {"total": 1}}))}))
    assert failure(lambda: run(definition, [1, 2], parallel)).error == RUNTIME


def test_map_iterations_read_outer_variables_in_jsonata() -> None:
    # PDV with TDJ: in JSONata states a variable is $name in any expression.
    definition = chain(
        ("Set", {"Type": "Pass", "Assign": {"factor": 10}}),
        ("Each", {"Type": "Map", "ItemProcessor": chain(
            ("Mul", {"Type": "Pass", "Output": "{% $states.input * $factor %}"}),
            language="JSONata")}),
        language="JSONata")
    assert run(definition, [1, 2, 3], PARALLEL_PROCESSES) == [10, 20, 30]


def test_jsonata_assign_and_output_read_entry_values_and_the_result() -> None:
    # PDV/TDJ: Assign and Output are evaluated together from the same values: Output
    # does not see what the same state assigns; both read $states.result.
    branch = {"StartAt": "B", "States": {"B": {"Type": "Pass", "Output": 5, "End": True}}}
    definition = chain(
        ("Init", {"Type": "Pass", "Assign": {"x": "old"}}),
        ("Par", {"Type": "Parallel", "Branches": [branch],
                 "Assign": {"x": "new", "got": "{% $states.result[0] %}"},
                 "Output": {"x": "{% $x %}"}}),
        ("Show", {"Type": "Pass", "Output": {"before": "{% $states.input.x %}",
                                              "x": "{% $x %}", "got": "{% $got %}"}}),
        language="JSONata")
    assert run(definition, {}) == {"before": "old", "x": "new", "got": 5}


def test_catcher_assign_replaces_the_state_assign() -> None:
    # PDV, Catch: when a Catcher handles the error, its Assign is evaluated (JSONPath:
    # $ is the error output) and the state's own Assign is not.
    failing = chain(("F", {"Type": "Fail", "Error": "Oops", "Cause": "why"}))
    caught = ("Par", {"Type": "Parallel", "Branches": [failing], "Assign": {"ok": True},
                      "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "After",
                                 "ResultPath": "$.error",
                                 "Assign": {"failedWith.$": "$.Error"}}]})
    shown = run(chain(caught, ("After", {"Type": "Pass", "Parameters": {
        "failedWith.$": "$failedWith", "error.$": "$.error"}})), {})
    assert shown == {"failedWith": "Oops", "error": {"Error": "Oops", "Cause": "why"}}
    state_assign = chain(caught, ("After", {"Type": "Pass", "Parameters": {"ok.$": "$ok"}}))
    err = failure(lambda: run(state_assign, {}))
    assert err.error == RUNTIME and "'$ok'" in err.cause


def test_choice_rule_assign_or_state_assign_on_default() -> None:
    # Choice state: a matching rule's Assign applies; the state's Assign applies when
    # the Default is taken.
    definition = {"StartAt": "C", "States": {
        "C": {"Type": "Choice", "Assign": {"path": "default"},
              "Choices": [{"Variable": "$.n", "NumericEquals": 1, "Next": "Show",
                           "Assign": {"path": "rule"}}],
              "Default": "Show"},
        "Show": {"Type": "Pass", "Parameters": {"path.$": "$path"}, "End": True}}}
    assert run(definition, {"n": 1}) == {"path": "rule"}
    assert run(definition, {"n": 2}) == {"path": "default"}
