"""JSONata states, field by field, and the JSONata functions Step Functions adds.

Each test names the passage of the Step Functions developer guide it follows:
"Transforming data with JSONata in Step Functions" (TDJ), "JSONata functions provided by
Step Functions" (JFN), and the state type pages (Choice, Wait, Fail, Map, Parallel).
Workflows run in-process through the state executors; Task states (which need function
code) are covered through the CLI in tests/integration/test_jsonata_workflows.py.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from deep_json import chain_equal, nested
from faastlane.runtime.asl.errors import QUERY_EVALUATION_ERROR, StatesError
from faastlane.runtime.asl.jsonata import evaluate_field, is_expression, states_variable
from faastlane.runtime.asl.model import machine_from_asl
from faastlane.runtime.engine.execution import Execution
from faastlane.runtime.engine.functions import FunctionRegistry
from faastlane.runtime.interpreter.states import run_machine
from faastlane.runtime.options import PARALLEL_THREADS, Options


def run(definition: dict, data: Any, parallel: str = PARALLEL_THREADS) -> Any:
    """Run a function-free workflow in this process and return its output."""
    execution = Execution("wf", data, FunctionRegistry("/nonexistent", {}),
                          Options(parallel=parallel))
    return run_machine(machine_from_asl(definition), data, execution)


def jsonata(**states: dict) -> dict:
    """A JSONata workflow (top-level QueryLanguage) whose states run in the order given."""
    names = list(states)
    body = {}
    for i, name in enumerate(names):
        state = dict(states[name])
        if state["Type"] not in ("Choice", "Succeed", "Fail") and "Next" not in state:
            state["Next" if i + 1 < len(names) else "End"] = (
                names[i + 1] if i + 1 < len(names) else True)
        body[name] = state
    return {"QueryLanguage": "JSONata", "StartAt": names[0], "States": body}


def expression(text: str, **variables: Any) -> Any:
    """One ``{% %}`` expression over an empty input, with ``variables`` bound."""
    return evaluate_field(text, "Output", states_variable({}, {}), variables)


def failure(call: Any) -> StatesError:
    with pytest.raises(StatesError) as caught:
        call()
    return caught.value


# --------------------------------------------------------------- expressions (TDJ)


def test_only_strings_wrapped_in_percent_braces_are_expressions() -> None:
    # TDJ: "JSONata expressions are written within {% %} characters"; other strings are
    # literals, wherever they appear in the field's JSON value.
    assert is_expression("{% 1 %}")
    assert not is_expression("{% 1") and not is_expression("1 %}") and not is_expression(3)
    value = {"a": "{% 1 + 1 %}", "b": ["{% 'x' & 'y' %}", "plain", 7, None], "c": "$.a"}
    out = evaluate_field(value, "Output", states_variable({}, {}), {})
    assert out == {"a": 2, "b": ["xy", "plain", 7, None], "c": "$.a"}


def test_an_expression_that_returns_nothing_is_a_query_evaluation_error() -> None:
    # TDJ, errors: an expression that cannot be evaluated, or that evaluates to
    # undefined, fails the state with States.QueryEvaluationError.
    err = failure(lambda: expression("{% $states.input.missing %}"))
    assert err.error == QUERY_EVALUATION_ERROR and "undefined" in err.cause
    err = failure(lambda: expression("{% 1 + 'a' %}"))
    assert err.error == QUERY_EVALUATION_ERROR


def test_null_is_a_value_not_undefined() -> None:
    # JSON null read from the input or a variable is data, not a missing value.
    assert expression("{% $v %}", v=None) is None
    assert evaluate_field("{% $states.input.a %}", "Output",
                          states_variable({"a": None}, {}), {}) is None


# --------------------------------------------------------------- the added functions (JFN)


def test_partition() -> None:
    # JFN: "$partition([1,2,3,4], 2)" returns [[1,2],[3,4]].
    assert expression("{% $partition([1,2,3,4], 2) %}") == [[1, 2], [3, 4]]
    assert expression("{% $partition([1,2,3], 2) %}") == [[1, 2], [3]]
    assert failure(lambda: expression("{% $partition([1], 0) %}")).error \
        == QUERY_EVALUATION_ERROR


def test_range() -> None:
    # JFN: "$range(0, 10, 2)" returns [0, 2, 4, 6, 8, 10] (the end is included).
    assert expression("{% $range(0, 10, 2) %}") == [0, 2, 4, 6, 8, 10]
    assert expression("{% $range(5, 1, -2) %}") == [5, 3, 1]


def test_hash() -> None:
    # JFN: $hash(data, algorithm) with MD5, SHA-1, SHA-256, SHA-384 or SHA-512 -- the
    # intrinsic States.Hash, whose documented example hashes "input data" with SHA-1.
    assert expression("{% $hash('input data', 'SHA-1') %}") \
        == "aaff4a450a104cd177d28d18d74485e8cae074b7"
    assert expression("{% $hash('abc', 'MD5') %}") == "900150983cd24fb0d6963f7d28e17f72"
    assert failure(lambda: expression("{% $hash('abc', 'MD4') %}")).error \
        == QUERY_EVALUATION_ERROR


def test_random() -> None:
    # JFN: $random([seed]) returns a number 0 <= n < 1; the same seed, the same number.
    values = [expression("{% $random() %}") for _ in range(50)]
    assert all(0 <= v < 1 for v in values) and len(set(values)) > 40
    assert expression("{% $random(42) %}") == expression("{% $random(42) %}")
    assert expression("{% $random(42) %}") != expression("{% $random(43) %}")


def test_uuid() -> None:
    # JFN: $uuid() returns a version 4 UUID.
    first, second = expression("{% $uuid() %}"), expression("{% $uuid() %}")
    v4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
    assert v4.match(first) and v4.match(second) and first != second


def test_parse() -> None:
    # JFN: $parse(jsonString) deserialises JSON text.
    assert expression("""{% $parse('{"a": [1, null, "x"]}') %}""") == {"a": [1, None, "x"]}
    assert failure(lambda: expression("{% $parse('{') %}")).error == QUERY_EVALUATION_ERROR


# --------------------------------------------------------------- states, field by field


def test_pass_output_reads_states_input_and_context() -> None:
    # TDJ, "$states": input is the state's original input, context the context object;
    # a Pass state's output is its Output, else its input.
    out = run(jsonata(
        Keep={"Type": "Pass"},
        Shape={"Type": "Pass", "Output": {
            "sum": "{% $states.input.a + $states.input.b %}",
            "state": "{% $states.context.State.Name %}",
            "started_with": "{% $states.context.Execution.Input.a %}"}},
    ), {"a": 2, "b": 3})
    assert out == {"sum": 5, "state": "Shape", "started_with": 2}


def test_output_may_be_any_json_value_or_one_expression() -> None:
    # TDJ: Output "accepts any JSON value"; a whole-field expression is its value.
    assert run(jsonata(P={"Type": "Pass", "Output": "{% $count($states.input) %}"}),
               [1, 2, 3]) == 3
    assert run(jsonata(P={"Type": "Pass", "Output": [1, "{% $states.input %}"]}), "x") \
        == [1, "x"]


def test_choice_condition_rule_output_and_default() -> None:
    # Choice state (JSONata): rules have Condition, a boolean expression, and may have
    # Output; the first true rule's Next is taken, else Default with the state's Output.
    definition = jsonata(
        Route={"Type": "Choice", "Choices": [
            {"Condition": "{% $states.input.n > 10 %}", "Next": "Big",
             "Output": {"size": "big", "n": "{% $states.input.n %}"}},
        ], "Default": "Small", "Output": {"size": "small"}},
        Big={"Type": "Succeed"},
        Small={"Type": "Succeed"},
    )
    assert run(definition, {"n": 11}) == {"size": "big", "n": 11}
    assert run(definition, {"n": 3}) == {"size": "small"}


def test_choice_condition_must_be_boolean_and_no_match_needs_default() -> None:
    not_boolean = jsonata(C={"Type": "Choice", "Choices": [
        {"Condition": "{% $states.input.n %}", "Next": "D"}], "Default": "D"},
        D={"Type": "Succeed"})
    assert failure(lambda: run(not_boolean, {"n": 1})).error == QUERY_EVALUATION_ERROR
    no_default = jsonata(C={"Type": "Choice", "Choices": [
        {"Condition": "{% false %}", "Next": "D"}]}, D={"Type": "Succeed"})
    assert failure(lambda: run(no_default, {})).error == "States.NoChoiceMatched"


def test_wait_seconds_and_timestamp_expressions() -> None:
    # Wait state: in JSONata states Seconds and Timestamp may be expressions; the output
    # is the input.
    assert run(jsonata(W={"Type": "Wait", "Seconds": "{% $states.input.s %}"}), {"s": 0}) \
        == {"s": 0}
    past = jsonata(W={"Type": "Wait", "Timestamp": "{% $states.input.t %}"})
    assert run(past, {"t": "2016-03-14T01:59:00Z"}) == {"t": "2016-03-14T01:59:00Z"}
    negative = jsonata(W={"Type": "Wait", "Seconds": "{% -1 %}"})
    assert failure(lambda: run(negative, {})).error == QUERY_EVALUATION_ERROR


def test_fail_error_and_cause_expressions() -> None:
    # Fail state: "In JSONata states, you can also specify a JSONata expression" for
    # Error and Cause.
    definition = jsonata(F={"Type": "Fail", "Error": "{% 'Bad.' & $states.input.kind %}",
                            "Cause": "{% 'item ' & $string($states.input.id) %}"})
    err = failure(lambda: run(definition, {"kind": "Item", "id": 7}))
    assert (err.error, err.cause) == ("Bad.Item", "item 7")


def test_map_items_item_selector_and_max_concurrency() -> None:
    # Map state (JSONata): Items is an array or an expression (default: the input);
    # ItemSelector reads $states.context.Map.Item.Index and .Value; MaxConcurrency may
    # be an expression; Output reads $states.result, the array of iteration outputs.
    definition = jsonata(M={
        "Type": "Map", "Items": "{% $states.input.xs %}",
        "MaxConcurrency": "{% 2 %}",
        "ItemSelector": {"i": "{% $states.context.Map.Item.Index %}",
                         "v": "{% $states.context.Map.Item.Value %}",
                         "tag": "{% $states.input.tag %}"},
        "ItemProcessor": {"StartAt": "P", "States": {"P": {
            "Type": "Pass", "Output": "{% $states.input.tag & $string($states.input.i * "
                                      "$states.input.v) %}", "End": True}}},
        "Output": {"all": "{% $states.result %}"}})
    assert run(definition, {"xs": [5, 6, 7], "tag": "t"}) == {"all": ["t0", "t6", "t14"]}
    assert run(jsonata(M={"Type": "Map", "ItemProcessor": {"StartAt": "P", "States": {
        "P": {"Type": "Pass", "End": True}}}}), [1, 2]) == [1, 2]


def test_map_items_must_be_an_array() -> None:
    definition = jsonata(M={"Type": "Map", "Items": "{% $states.input %}", "ItemProcessor": {
        "StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}})
    assert failure(lambda: run(definition, {"not": "an array"})).error \
        == QUERY_EVALUATION_ERROR


def test_parallel_arguments_and_output_in_forked_branches() -> None:
    # Parallel state (JSONata): Arguments is the branches' input; Output reads
    # $states.result, the branches' outputs in order. Branches run as forked processes.
    branch = {"StartAt": "B", "States": {"B": {
        "Type": "Pass", "Output": "{% $states.input.x * 10 %}", "End": True}}}
    definition = jsonata(Par={"Type": "Parallel", "Arguments": {"x": "{% $states.input.n %}"},
                              "Branches": [branch, branch],
                              "Output": {"total": "{% $sum($states.result) %}"}})
    assert run(definition, {"n": 4}, parallel="processes") == {"total": 80}


def test_states_mix_languages_per_state() -> None:
    # TDJ / QueryLanguage: a JSONPath workflow may set "QueryLanguage": "JSONata" on
    # single states; JSONPath states around it keep their paths.
    definition = {"StartAt": "Path", "States": {
        "Path": {"Type": "Pass", "Parameters": {"n.$": "$.value"}, "Next": "Ata"},
        "Ata": {"Type": "Pass", "QueryLanguage": "JSONata",
                "Output": {"doubled": "{% $states.input.n * 2 %}"}, "Next": "Path2"},
        "Path2": {"Type": "Pass", "ResultPath": "$.copy", "End": True}}}
    assert run(definition, {"value": 21}) == {"doubled": 42, "copy": {"doubled": 42}}


def test_jsonata_catch_output_reads_error_output() -> None:
    # TDJ, "$states.errorOutput ... only available in a Catch"; a Catcher's Output is
    # the state's output (default: the error output). The error comes from a Fail state
    # in a Parallel branch, so the Parallel state's Catch handles it.
    failing = {"StartAt": "F", "States": {"F": {
        "Type": "Fail", "Error": "Oops", "Cause": "broken"}}}
    definition = jsonata(
        Par={"Type": "Parallel", "Branches": [failing], "Catch": [{
            "ErrorEquals": ["Oops"], "Next": "After",
            "Output": {"err": "{% $states.errorOutput.Error %}",
                       "why": "{% $states.errorOutput.Cause %}",
                       "was": "{% $states.input %}"}}]},
        After={"Type": "Pass"})
    assert run(definition, {"in": 1}) == {"err": "Oops", "why": "broken", "was": {"in": 1}}
    default = jsonata(Par={"Type": "Parallel", "Branches": [failing], "Catch": [{
        "ErrorEquals": ["States.ALL"], "Next": "After"}]}, After={"Type": "Pass"})
    assert run(default, {}) == {"Error": "Oops", "Cause": "broken"}


def test_compose_accepts_jsonata_and_variables_but_still_refuses_what_cannot_run() -> None:
    # What composes: both query languages and Assign. Still refused with a pointer:
    # fields the runtime would otherwise ignore (a distributed Map's ItemReader); the
    # JSONPath Map's MaxConcurrencyPath runs.
    from faastlane.validation.unsupported import unsupported_features

    runs = jsonata(T={"Type": "Task", "Resource": "f", "Arguments": {"a": "{% 1 %}"},
                      "Assign": {"x": 1}, "Output": "{% $states.result %}"})
    assert unsupported_features(runs) == []
    refused = {"StartAt": "M", "States": {"M": {
        "Type": "Map", "End": True, "MaxConcurrencyPath": "$.n",
        "ItemReader": {"Resource": "arn:aws:states:::s3:getObject"},
        "ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}}}}
    assert sorted(p.pointer for p in unsupported_features(refused)) == [
        "/States/M/ItemReader"]


def test_values_deeper_than_jsonatas_stack_come_back_with_their_nulls() -> None:
    # Issue 18: jsonata-python's own null conversion recursed (2 frames a level, past its
    # 10,000-frame limit at 5,000 levels); results and the added functions' arguments
    # are walked iteratively now. Built in Python: no parser limit applies.
    data = {"deep": nested(7_999, leaf=None), "n": 2.0}  # an object outermost
    states = states_variable(data, {})
    result = evaluate_field("{% $states.input.deep %}", "Output", states, {})
    assert chain_equal(result, data["deep"], 7_999)
    # An added function's argument: integral floats become ints, null None, at any depth.
    pair = evaluate_field("{% $partition([$states.input.deep, $states.input.n], 1) %}",
                          "Output", states, {})
    assert chain_equal(pair[0][0], data["deep"], 7_999) and pair[1] == [2]
    assert type(pair[1][0]) is int
