"""Behaviours that follow what AWS answered, where the documentation is silent or says
otherwise: executions recorded on real AWS by LocalStack's Step Functions snapshot tests
(``tests/aws/services/stepfunctions/`` in localstack/localstack, ``*.snapshot.json``).
Each test names the recorded test it follows; the expected causes are AWS's own words.

Workflows run in-process (no composed action): the interpreter, the validator and the
context object are what these behaviours live in.
"""

from __future__ import annotations

from typing import Any

import pytest

from faastlane.runtime.asl.errors import QUERY_EVALUATION_ERROR, RUNTIME, StatesError
from faastlane.runtime.asl.model import machine_from_asl
from faastlane.runtime.engine.execution import Execution
from faastlane.runtime.engine.functions import FunctionRegistry
from faastlane.runtime.interpreter.states import run_machine
from faastlane.runtime.options import Options
from faastlane.validation import validate
from faastlane.validation.unsupported import unsupported_features

PREFIX = "An error occurred while executing the state '{}' (entered at the event id #{}). "


def run(definition: dict, data: Any) -> Any:
    execution = Execution("wf", data, FunctionRegistry("/nonexistent", {}), Options())
    return run_machine(machine_from_asl(definition), data, execution)


def failure(definition: dict, data: Any) -> StatesError:
    with pytest.raises(StatesError) as caught:
        run(definition, data)
    return caught.value


def one(state: dict, language: str | None = None) -> dict:
    definition = {"StartAt": "S", "States": {"S": {**state, "End": True}}}
    if language:
        definition["QueryLanguage"] = language
    return definition


PASS_ITERATION = {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}


def dynamic_map(**fields: Any) -> dict:
    return one({"Type": "Map", "ItemsPath": "$.Items", "ItemProcessor": {
        "ProcessorConfig": {"Mode": "INLINE"}, **PASS_ITERATION}, **fields})


# ------------------------------------------------------------------ Map *Path limits


def test_map_limit_paths_are_accepted_and_run() -> None:
    # test_max_concurrency_path[1], test_map_state_tolerated_failure_*_path[0|1|100|1.1]
    definition = dynamic_map(MaxConcurrencyPath="$.M", ToleratedFailureCountPath="$.C",
                             ToleratedFailurePercentagePath="$.P")
    assert validate(definition) == [] and unsupported_features(definition) == []
    assert run(definition, {"Items": [0, 1], "M": 1, "C": "1", "P": 1.1}) == [0, 1]


@pytest.mark.parametrize("field, value, cause", [
    ("MaxConcurrencyPath", "NoNumber",
     'The MaxConcurrencyPath field refers to value "NoNumber" which is not a valid integer: $.V'),
    ("MaxConcurrencyPath", {},
     'The MaxConcurrencyPath field refers to value "{}" which is not a valid integer: $.V'),
    ("ToleratedFailureCountPath", "NoNumber",
     'The ToleratedFailureCountPath field refers to value "NoNumber" which is not a valid '
     "integer: $.V"),
    ("ToleratedFailureCountPath", -1, "ToleratedFailureCount cannot be negative."),
    ("ToleratedFailurePercentagePath", {},
     'The ToleratedFailurePercentagePath field refers to value "{}" which is not a valid '
     "float: $.V"),
    ("ToleratedFailurePercentagePath", 100.1,
     "ToleratedFailurePercentage must be between 0 and 100."),
    ("ToleratedFailurePercentagePath", -1,
     "ToleratedFailurePercentage must be between 0 and 100."),
])
def test_map_limit_paths_to_invalid_values_fail_in_aws_words(field: str, value: Any,
                                                             cause: str) -> None:
    err = failure(dynamic_map(**{field: "$.V"}), {"Items": [0], "V": value})
    assert (err.error, err.cause) == (RUNTIME, PREFIX.format("S", 2) + cause)


def test_the_legacy_iterator_takes_a_processor_config() -> None:
    # test_map_state_legacy_config_inline / _distributed: AWS runs these definitions.
    for mode in ({"Mode": "INLINE"}, {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}):
        definition = one({"Type": "Map", "Iterator": {"ProcessorConfig": mode,
                                                      **PASS_ITERATION}})
        assert validate(definition) == []
        assert run(definition, ["Hello", "World"]) == ["Hello", "World"]


# ------------------------------------------------------------------ Wait


@pytest.mark.parametrize("data, cause", [
    ({}, "The SecondsPath parameter does not reference an input value: $.input.waitSeconds"),
    ({"input": {"waitSeconds": -1}},
     "The SecondsPath parameter references a negative value: $.input.waitSeconds == -1"),
    ({"input": {"waitSeconds": 1.5}},
     "The SecondsPath parameter cannot be parsed as a long value: $.input.waitSeconds == 1.5"),
])
def test_wait_seconds_path_errors(data: dict, cause: str) -> None:
    # test_base_wait_seconds_path[-1], [1.5]; the logs tests' wait_seconds_path with {}.
    err = failure(one({"Type": "Wait", "SecondsPath": "$.input.waitSeconds"}), data)
    assert (err.error, err.cause) == (RUNTIME, PREFIX.format("S", 2) + cause)


@pytest.mark.parametrize("value", [
    "2016-12-05 21:29:29Z", "2016-12-05T21:29:29", "2016-13-05T21:29:29Z",
    "2016-12-05T25:29:29Z", "05-12-2016T21:29:29Z",
])
def test_wait_timestamps_that_aws_refuses(value: str) -> None:
    # test_wait_timestamp_path[NO_T|NO_Z|INVALID_DATE|INVALID_TIME|INVALID_ISO] and
    # test_wait_timestamp_jsonata[...]: States.Runtime for the path, and
    # States.QueryEvaluationError for a JSONata expression.
    err = failure(one({"Type": "Wait", "TimestampPath": "$.T"}), {"T": value})
    assert (err.error, err.cause) == (RUNTIME, PREFIX.format("S", 2) + (
        "The TimestampPath parameter does not reference a valid ISO-8601 extended offset "
        f"date-time format string: $.T == {value}"))
    err = failure(one({"Type": "Wait", "Timestamp": "{% $states.input.T %}"}, "JSONata"),
                  {"T": value})
    assert (err.error, err.cause) == (QUERY_EVALUATION_ERROR, PREFIX.format("S", 2) + (
        f"The Timestamp field cannot be parsed as an ISO-8601 extended offset date-time "
        f"format string: {value}"))


@pytest.mark.parametrize("value", ["2016-12-05T21:29:29Z", "2016-12-05T21:29:29.000000Z",
                                   "2016-12-05T21:29:29.00Z", "2016-12-05T22:29:29+01:00"])
def test_wait_timestamps_in_the_past_go_on_at_once(value: str) -> None:
    # test_wait_timestamppath[Z|.000000Z|.00Z]; offsets are RFC 3339.
    assert run(one({"Type": "Wait", "TimestampPath": "$.T"}), {"T": value}) == {"T": value}


# ------------------------------------------------------------------ context object


def test_only_task_states_have_a_retry_count() -> None:
    # test_context_object's test_input_path / test_output_path: a Pass state's $$.State
    # is {"EnteredTime", "Name"}.
    out = run(one({"Type": "Pass", "Parameters": {"s.$": "$$.State"}}), {})
    assert sorted(out["s"]) == ["EnteredTime", "Name"]
    out = run(one({"Type": "Map", "ItemSelector": {"s.$": "$$.State"},
                   "ItemProcessor": PASS_ITERATION}), [1])
    assert sorted(out[0]["s"]) == ["EnteredTime", "Name"]


# ------------------------------------------------------------------ causes


def test_fail_paths_to_nothing() -> None:
    # test_invalid_jsonpath[INVALID_JSONPATH_IN_ERRORPATH], [..._IN_CAUSEPATH]
    err = failure(one({"Type": "Fail", "ErrorPath": "$.ErrorX"}), {"Error": "e"})
    assert err.error == RUNTIME and err.cause == PREFIX.format("S", 2) + (
        "The JSONPath '$.ErrorX' specified for the field 'ErrorPath' could not be found in "
        'the input \'{"Error":"e"}\'')
    err = failure(one({"Type": "Fail", "ErrorPath": "$.Error", "CausePath": "$.C"}),
                  {"Error": "e"})
    assert "specified for the field 'CausePath' could not be found" in err.cause


def test_jsonata_causes_quote_the_bare_expression_and_a_slash_separated_field() -> None:
    # test_undefined_reference[BASE_UNDEFINED_ASSIGN]; test_math_random_seeded (JSONata).
    err = failure(one({"Type": "Pass", "Assign": {"result": "{% $doesNotExist %}"}},
                      "JSONata"), {})
    assert (err.error, err.cause) == (QUERY_EVALUATION_ERROR, PREFIX.format("S", 2) + (
        "The JSONata expression '$doesNotExist' specified for the field 'Assign/result' "
        "returned nothing (undefined)."))
    err = failure(one({"Type": "Pass", "Output": {"R": "{% $randomSeeded(1) %}"}},
                      "JSONata"), {})
    assert err.cause == PREFIX.format("S", 2) + (
        "The JSONata expression '$randomSeeded(1)' specified for the field 'Output/R' threw "
        "an error during evaluation. T1006: Attempted to invoke a non-function")


@pytest.mark.parametrize("items, data, cause", [
    ("{% {'foo': 'bar'} %}", {}, "The JSONata expression '{'foo': 'bar'}' specified for the "
     "field 'Items' returned an unexpected result type. Expected 'array', but was 'object' "
     'for value: {"foo":"bar"}'),
    ("{% null %}", {}, "The JSONata expression 'null' specified for the field 'Items' "
     "returned an unexpected result type. Expected 'array', but was 'null' for value: null"),
    ("{% $fn := function($x){$x} %}", {}, "The JSONata expression '$fn := function($x){$x}' "
     "specified for the field 'Items' returned an unsupported result type."),
    (None, "string", 'Map state input must be an array but was: "string"'),
])
def test_jsonata_map_items_that_are_not_an_array(items: str | None, data: Any,
                                                 cause: str) -> None:
    # test_map_state_items_eval_jsonata_fail_*, test_map_state_items_input_types_*
    state = {"Type": "Map", "ItemProcessor": PASS_ITERATION}
    if items is not None:
        state["Items"] = items
    err = failure(one(state, "JSONata"), data)
    assert (err.error, err.cause) == (QUERY_EVALUATION_ERROR, PREFIX.format("S", 2) + cause)


def test_jsonata_range_of_one_element_is_that_element() -> None:
    # test_array_range (JSONata) with (1, 9, 9): AWS answered 1, not [1].
    definition = one({"Type": "Pass", "Output": "{% $range($states.input.a, 9, "
                                                "$states.input.step) %}"}, "JSONata")
    assert run(definition, {"a": 1, "step": 9}) == 1
    assert run(definition, {"a": 1, "step": 4}) == [1, 5, 9]


def test_a_backslash_before_another_character_stays_in_a_bracket_name() -> None:
    # test_escape_sequence_parsing[ESCAPE_SEQUENCES_JSONPATH]: $['Test\""Name"'] read
    # the key Test\""Name"; \' and \\ still escape.
    definition = one({"Type": "Pass", "Parameters": {
        "a.$": """$['Test\\""Name"']""", "b.$": "$['it\\'s']", "c.$": "$['back\\\\slash']"}})
    data = {'Test\\""Name"': 1, "it's": 2, "back\\slash": 3}
    assert run(definition, data) == {"a": 1, "b": 2, "c": 3}
