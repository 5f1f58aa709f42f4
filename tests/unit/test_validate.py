"""Targeted cases for faastlane.validation.validate: each rule, its pointer, and no false alarms."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from faastlane.validation import Problem, validate


def pointers(definition: Any, functions: Any = None) -> list[str]:
    return [problem.pointer for problem in validate(definition, functions)]


def machine(**states: dict[str, Any]) -> dict[str, Any]:
    """A definition starting at the first state given."""
    return {"StartAt": next(iter(states)), "States": states}


def task(resource: str = "Work", **fields: Any) -> dict[str, Any]:
    return {"Type": "Task", "Resource": resource, "End": True, **fields}


def one_state(state: dict[str, Any]) -> dict[str, Any]:
    return machine(S=state)


# ------------------------------------------------------------------- whole documents


def test_a_correct_workflow_has_no_problems() -> None:
    definition = {
        "Comment": "order pipeline",
        "Version": "1.0",
        "TimeoutSeconds": 300,
        "StartAt": "Validate",
        "States": {
            "Validate": {
                "Type": "Task",
                "Resource": "validate",
                "Next": "Route",
                "Retry": [
                    {"ErrorEquals": ["States.Timeout"], "MaxAttempts": 2},
                    {
                        "ErrorEquals": ["States.ALL"],
                        "BackoffRate": 1.5,
                        "JitterStrategy": "FULL",
                        "MaxDelaySeconds": 10,
                    },
                ],
                "Catch": [
                    {"ErrorEquals": ["States.ALL"], "Next": "Failed", "ResultPath": "$.error"}
                ],
            },
            "Route": {
                "Type": "Choice",
                "Default": "Fan",
                "Choices": [{"Variable": "$.retry", "BooleanEquals": True, "Next": "Validate"}],
            },
            "Fan": {
                "Type": "Parallel",
                "Next": "Each",
                "Branches": [{"StartAt": "A", "States": {"A": {"Type": "Pass", "End": True}}}],
            },
            "Each": {
                "Type": "Map",
                "ItemsPath": "$.items",
                "MaxConcurrency": 2,
                "ItemSelector": {"item.$": "$$.Map.Item.Value"},
                "ItemProcessor": {
                    "StartAt": "B",
                    "States": {"B": {"Type": "Wait", "Seconds": 1, "End": True}},
                },
                "Next": "Done",
            },
            "Done": {"Type": "Succeed"},
            "Failed": {"Type": "Fail", "Error": "OrderFailed", "CausePath": "$.error.Cause"},
        },
    }
    assert validate(definition, functions={"validate"}) == []


def test_five_distinct_problems_are_all_reported_with_their_pointers() -> None:
    definition = {
        "StartAt": "First",
        "States": {
            "First": {"Type": "Task", "Resource": "missing_fn", "Next": "Nowhere"},
            "Second": {"Type": "Pass", "InputPath": "no-dollar", "End": True},
            "Third": {"Type": "Wait", "Seconds": "ten", "End": True},
            "Fourth": {"Type": "Pass", "Parameters": {"x.$": 7}, "End": True},
        },
    }
    # Root causes first, by pointer; then the states left unreachable ("Nowhere" is close
    # to no state's name, so they are not attributed to it), by pointer.
    assert pointers(definition, functions={"other_fn"}) == [
        "/States/First/Next",  # unknown Next
        "/States/First/Resource",  # no function code
        "/States/Fourth/Parameters/x.$",  # '.$' key with a non-string value
        "/States/Second/InputPath",  # path that does not parse
        "/States/Third/Seconds",  # wrong field type
        "/States/Fourth",  # unreachable
        "/States/Second",  # unreachable
        "/States/Third",  # unreachable
    ]


def test_problems_are_sorted_by_pointer_with_array_indices_in_numeric_order() -> None:
    branches = [
        {"StartAt": f"B{i}", "States": {f"B{i}": {"Type": "Pass", "Nex": 1}}} for i in range(12)
    ]
    definition = machine(P={"Type": "Parallel", "End": True, "Branches": branches})
    found = pointers(definition)
    indices = [int(p.split("/")[4]) for p in found if p.startswith("/States/P/Branches/")]
    assert indices == sorted(indices) and indices[-1] == 11
    assert found == [
        p.pointer
        for p in sorted(
            validate(definition),
            key=lambda p: (
                [int(t) if t.isdigit() else -1 for t in p.pointer.split("/")[1:5]],
                p.pointer,
            ),
        )
    ]


def test_problem_renders_as_pointer_and_message() -> None:
    assert (
        str(Problem("/States/A/Next", "no state named 'B'")) == "/States/A/Next: no state named 'B'"
    )
    assert str(Problem("", "bad")) == "/: bad"


def test_pointer_tokens_escape_slash_and_tilde() -> None:
    definition = machine(**{"a/b~c": {"Type": "Pass", "Next": "gone"}, "end": {"Type": "Succeed"}})
    assert "/States/a~1b~0c/Next" in pointers(definition)


# ------------------------------------------------------------------------- top level


@pytest.mark.parametrize(
    ("definition", "expected"),
    [
        ([], [""]),
        ({}, ["", ""]),  # no StartAt, no States
        ({"StartAt": 3, "States": {"A": {"Type": "Succeed"}}}, ["/StartAt"]),
        ({"StartAt": "B", "States": {"A": {"Type": "Succeed"}}}, ["/StartAt"]),
        ({"StartAt": "A", "States": []}, ["/StartAt", "/States"]),
        ({"StartAt": "A", "States": {}}, ["/StartAt", "/States"]),
    ],
)
def test_top_level_structure(definition: Any, expected: list[str]) -> None:
    assert pointers(definition) == expected


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("Version", "2.0"),
        ("TimeoutSeconds", 0),
        ("TimeoutSeconds", "60"),
        ("QueryLanguage", "XPath"),
        ("Comment", 5),
        ("Extra", True),
    ],
)
def test_top_level_fields(field: str, value: Any) -> None:
    definition = {**one_state({"Type": "Succeed"}), field: value}
    assert pointers(definition) == ["/" + field]


def test_every_unreachable_state_and_a_missing_terminal_state() -> None:
    definition = machine(
        A={"Type": "Pass", "Next": "B"},
        B={"Type": "Pass", "Next": "A"},
        C={"Type": "Pass", "Next": "A"},
    )
    assert pointers(definition) == ["/States", "/States/C"]


def test_loops_through_a_choice_are_legal() -> None:
    definition = machine(
        Poll={"Type": "Task", "Resource": "poll", "Next": "Ready?"},
        **{
            "Ready?": {
                "Type": "Choice",
                "Default": "Wait",
                "Choices": [{"Variable": "$.done", "BooleanEquals": True, "Next": "Done"}],
            }
        },
        Wait={"Type": "Wait", "Seconds": 5, "Next": "Poll"},
        Done={"Type": "Succeed"},
    )
    assert validate(definition) == []


def test_states_reached_only_through_catch_are_reachable() -> None:
    definition = machine(
        A=task(Catch=[{"ErrorEquals": ["States.ALL"], "Next": "Recover"}]),
        Recover={"Type": "Pass", "End": True},
    )
    assert validate(definition) == []


# ----------------------------------------------------------------- state structure


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({"Next": "X"}, ["/States/S"]),
        ({"Type": "Lambda", "End": True}, ["/States/S/Type"]),
        ({"Type": "Pass", "End": True, "Resource": "x"}, ["/States/S/Resource"]),
        ({"Type": "Pass"}, ["/States", "/States/S"]),
        ({"Type": "Pass", "End": "yes"}, ["/States", "/States/S", "/States/S/End"]),
        ({"Type": "Succeed", "End": True}, ["/States/S/End"]),
        ({"Type": "Fail", "OutputPath": "$"}, ["/States/S/OutputPath"]),
        ({"Type": "Succeed", "Assign": {"x": 1}}, ["/States/S/Assign"]),
        ({"Type": "Pass", "End": True, "Comment": ["no"]}, ["/States/S/Comment"]),
    ],
)
def test_state_type_and_allowed_fields(state: dict[str, Any], expected: list[str]) -> None:
    assert pointers(one_state(state)) == expected


def test_next_and_end_true_are_mutually_exclusive() -> None:
    definition = machine(A={"Type": "Pass", "Next": "B", "End": True}, B={"Type": "Succeed"})
    assert pointers(definition) == ["/States/A"]


def test_a_state_that_is_not_an_object() -> None:
    assert pointers(machine(A="Pass")) == ["/States/A"]


def test_state_names_longer_than_80_characters() -> None:
    name = "N" * 81
    assert pointers(machine(**{name: {"Type": "Succeed"}})) == [f"/States/{name}"]
    assert validate(machine(**{"N" * 80: {"Type": "Succeed"}})) == []


def test_state_names_are_unique_across_nested_machines() -> None:
    branch = {"StartAt": "A", "States": {"A": {"Type": "Succeed"}}}
    definition = machine(A={"Type": "Parallel", "Branches": [branch], "End": True})
    assert pointers(definition) == ["/States/A/Branches/0/States/A"]


# -------------------------------------------------------------------- paths, templates


@pytest.mark.parametrize(
    ("field", "value", "valid"),
    [
        ("InputPath", "$.a.b[0]", True),
        ("InputPath", None, True),
        ("InputPath", "$$.Execution.Input", True),
        ("InputPath", "a.b", False),
        ("InputPath", 3, False),
        ("OutputPath", "$.a[", False),
        ("ResultPath", "$.result", True),
        ("ResultPath", None, True),
        ("ResultPath", "$", True),
        ("ResultPath", "$.a[*]", False),  # not a reference path
        ("ResultPath", "$$.Execution", False),  # the context object is read-only
        ("ResultPath", "result", False),
    ],
)
def test_path_fields(field: str, value: Any, valid: bool) -> None:
    problems = pointers(one_state({"Type": "Pass", "End": True, field: value}))
    assert problems == ([] if valid else [f"/States/S/{field}"])


def test_payload_templates_check_every_dollar_key_at_any_depth() -> None:
    parameters = {
        "static": "$.not-evaluated",
        "ok.$": "$.a",
        "intrinsic.$": "States.Format('{} items', $.count)",
        "list": [{"deep.$": "nope"}],
        "bad_intrinsic.$": "States.Nope($.a)",
        "number.$": 1,
        "twice": 1,
        "twice.$": "$.b",
    }
    state = {
        "Type": "Task",
        "Resource": "f",
        "End": True,
        "Parameters": parameters,
        "ResultSelector": {"r.$": "$.Payload", "s.$": "$["},
    }
    assert pointers(one_state(state)) == [
        "/States/S/Parameters/bad_intrinsic.$",
        "/States/S/Parameters/list/0/deep.$",
        "/States/S/Parameters/number.$",
        "/States/S/Parameters/twice.$",
        "/States/S/ResultSelector/s.$",
    ]


def test_parameters_may_be_any_json_but_result_selector_must_be_an_object() -> None:
    assert validate(one_state({"Type": "Pass", "End": True, "Parameters": [1, "a"]})) == []
    state = task(ResultSelector=["a"])
    assert pointers(one_state(state)) == ["/States/S/ResultSelector"]


# ------------------------------------------------------------------------ Task state


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"TimeoutSeconds": 0}, ["/States/S/TimeoutSeconds"]),
        ({"TimeoutSeconds": 1.5}, ["/States/S/TimeoutSeconds"]),
        ({"TimeoutSeconds": 10, "TimeoutSecondsPath": "$.t"}, ["/States/S/TimeoutSecondsPath"]),
        ({"TimeoutSecondsPath": "$.t[*]"}, ["/States/S/TimeoutSecondsPath"]),
        ({"TimeoutSeconds": 10, "HeartbeatSeconds": 10}, ["/States/S/HeartbeatSeconds"]),
        ({"TimeoutSeconds": 10, "HeartbeatSeconds": 5}, []),
        ({"HeartbeatSeconds": True}, ["/States/S/HeartbeatSeconds"]),
        ({"Credentials": {"RoleArn.$": "$.role"}}, []),
        ({"Credentials": "role"}, ["/States/S/Credentials"]),
    ],
)
def test_task_timeouts_heartbeats_credentials(fields: dict[str, Any], expected: list[str]) -> None:
    assert pointers(one_state(task(**fields))) == expected


def test_task_without_resource() -> None:
    assert pointers(one_state({"Type": "Task", "End": True})) == ["/States/S"]


@pytest.mark.parametrize(
    "resource",
    [
        "ValidateOrder",
        "arn:aws:lambda:us-east-1:123456789012:function:ValidateOrder",
        "arn:aws:lambda:us-east-1:123456789012:function:ValidateOrder:live",
        "arn:aws:states:::sqs:sendMessage",
        "arn:aws:states:us-east-1:123456789012:activity:approve",
        "${ValidateOrderArn}",
    ],
)
def test_well_formed_resources_validate_structurally(resource: str) -> None:
    assert validate(one_state(task(resource))) == []


@pytest.mark.parametrize(
    "resource",
    ["arn:aws:lambda:us-east-1:123456789012:function:", "not a name", "${unclosed", ""],
)
def test_malformed_resources(resource: str) -> None:
    assert pointers(one_state(task(resource))) == ["/States/S/Resource"]


# ------------------------------------------------------------- functions of the app


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (task("ValidateOrder"), []),
        (task("arn:aws:lambda:us-east-1:123456789012:function:ValidateOrder:prod"), []),
        (task("Missing"), ["/States/S/Resource"]),
        (task("arn:aws:lambda:us-east-1:123456789012:function:Missing"), ["/States/S/Resource"]),
        (
            task(
                "arn:aws:states:::lambda:invoke",
                Parameters={"FunctionName": "ValidateOrder", "Payload.$": "$"},
            ),
            [],
        ),
        (
            task("arn:aws:states:::lambda:invoke", Parameters={"FunctionName": "Missing"}),
            ["/States/S/Parameters/FunctionName"],
        ),
        (task("arn:aws:states:::lambda:invoke", Parameters={"FunctionName.$": "$.fn"}), []),
        (task("arn:aws:states:::lambda:invoke"), ["/States/S/Resource"]),
        (task("arn:aws:states:::sqs:sendMessage"), []),  # a service integration: no code
        (task("arn:aws:states:::sqs:receiveMessage"), ["/States/S/Resource"]),
        (task("${ValidateOrderArn}"), ["/States/S/Resource"]),
        (
            task(
                "arn:aws:states:::lambda:invoke",
                QueryLanguage="JSONata",
                Arguments={"FunctionName": "Missing"},
            ),
            ["/States/S/Arguments/FunctionName"],
        ),
        (
            task(
                "arn:aws:states:::lambda:invoke",
                QueryLanguage="JSONata",
                Arguments={"FunctionName": "{% $states.input.fn %}"},
            ),
            [],
        ),
    ],
)
def test_resources_need_function_code_when_functions_are_given(
    state: dict[str, Any], expected: list[str]
) -> None:
    assert pointers(one_state(state), functions=["ValidateOrder"]) == expected


def test_function_check_is_skipped_without_functions_and_reports_nested_tasks() -> None:
    branch = {"StartAt": "T", "States": {"T": task("Ghost")}}
    definition = machine(P={"Type": "Parallel", "Branches": [branch], "End": True})
    assert validate(definition) == []
    problems = validate(definition, functions=[])
    assert [p.pointer for p in problems] == ["/States/P/Branches/0/States/T/Resource"]
    assert "Ghost" in problems[0].message


# ----------------------------------------------------------------------- Choice rules


def choice(*rules: Any, **fields: Any) -> dict[str, Any]:
    return machine(C={"Type": "Choice", "Choices": list(rules), **fields}, Done={"Type": "Succeed"})


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ({"Variable": "$.x", "StringEquals": "a", "Next": "Done"}, []),
        ({"Variable": "$.x", "NumericGreaterThanEqualsPath": "$.y", "Next": "Done"}, []),
        ({"Variable": "$.x", "TimestampLessThan": "2024-01-01T00:00:00Z", "Next": "Done"}, []),
        ({"Variable": "$.x", "IsPresent": False, "Next": "Done"}, []),
        ({"Variable": "$.x", "StringMatches": "log-*.txt", "Next": "Done"}, []),
        ({"Variable": "$.x", "Next": "Done"}, ["/States/C/Choices/0"]),
        ({"StringEquals": "a", "Next": "Done"}, ["/States/C/Choices/0"]),
        (
            {"Variable": "$.x", "StringEquals": "a", "NumericEquals": 1, "Next": "Done"},
            ["/States/C/Choices/0/NumericEquals"],
        ),
        (
            {"Variable": "$.x", "StringEquals": 1, "Next": "Done"},
            ["/States/C/Choices/0/StringEquals"],
        ),
        (
            {"Variable": "$.x", "NumericEquals": "1", "Next": "Done"},
            ["/States/C/Choices/0/NumericEquals"],
        ),
        (
            {"Variable": "$.x", "NumericEquals": True, "Next": "Done"},
            ["/States/C/Choices/0/NumericEquals"],
        ),
        (
            {"Variable": "$.x", "BooleanEquals": "true", "Next": "Done"},
            ["/States/C/Choices/0/BooleanEquals"],
        ),
        ({"Variable": "$.x", "IsNull": 1, "Next": "Done"}, ["/States/C/Choices/0/IsNull"]),
        (
            {"Variable": "$.x", "TimestampEquals": "2024-01-01 00:00:00", "Next": "Done"},
            ["/States/C/Choices/0/TimestampEquals"],
        ),
        (
            {"Variable": "$.x", "StringEqualsPath": "y", "Next": "Done"},
            ["/States/C/Choices/0/StringEqualsPath"],
        ),
        ({"Variable": "x", "StringEquals": "a", "Next": "Done"}, ["/States/C/Choices/0/Variable"]),
        # Without a usable Next, Done is also unreachable.
        ({"Variable": "$.x", "StringEquals": "a"}, ["/States/C/Choices/0", "/States/Done"]),
        (
            {"Variable": "$.x", "StringEquals": "a", "Next": "Gone at all"},
            ["/States/C/Choices/0/Next", "/States/Done"],
        ),
        # A misspelt Next: Done is unreachable only because of it (said in its message).
        ({"Variable": "$.x", "StringEquals": "a", "Next": "Gone"}, ["/States/C/Choices/0/Next"]),
        (
            {"Variable": "$.x", "StringEquals": "a", "Next": "Done", "Weight": 1},
            ["/States/C/Choices/0/Weight"],
        ),
        (
            {"Variable": "$.x", "StringEquals": "a", "Next": "Done", "Condition": "{% true %}"},
            ["/States/C/Choices/0/Condition"],
        ),
    ],
)
def test_choice_rules(rule: dict[str, Any], expected: list[str]) -> None:
    assert pointers(choice(rule)) == expected


def test_boolean_rules_nest_and_only_top_level_rules_have_next() -> None:
    rule = {
        "And": [
            {"Variable": "$.a", "IsPresent": True},
            {"Not": {"Variable": "$.b", "StringEquals": 1}},
            {"Or": [{"Variable": "$.c", "NumericLessThan": 3, "Next": "Done"}]},
            {"Or": []},
        ],
        "Next": "Done",
    }
    assert pointers(choice(rule)) == [
        "/States/C/Choices/0/And/1/Not/StringEquals",
        "/States/C/Choices/0/And/2/Or/0/Next",
        "/States/C/Choices/0/And/3/Or",
    ]


def test_boolean_operator_cannot_be_combined_with_a_comparison() -> None:
    rule = {"Not": {"Variable": "$.a", "IsNull": True}, "Variable": "$.b", "Next": "Done"}
    assert pointers(choice(rule)) == ["/States/C/Choices/0/Variable"]


def test_choice_needs_rules_and_a_valid_default() -> None:
    assert pointers(choice(Default="Nowhere")) == [
        "/States/C/Choices",
        "/States/C/Default",
        "/States/Done",
    ]
    definition = machine(C={"Type": "Choice", "Default": "Done"}, Done={"Type": "Succeed"})
    assert pointers(definition) == ["/States/C"]


def test_choice_cannot_have_next_or_end() -> None:
    rule = {"Variable": "$.x", "IsNull": True, "Next": "Done"}
    definition = choice(rule, Next="Done", End=True)
    assert pointers(definition) == ["/States/C/End", "/States/C/Next"]


# ------------------------------------------------------------------- Retry and Catch


@pytest.mark.parametrize(
    ("retriers", "expected"),
    [
        ([{"ErrorEquals": []}], ["/States/S/Retry/0/ErrorEquals"]),
        ([{"MaxAttempts": 1}], ["/States/S/Retry/0"]),
        ([{"ErrorEquals": ["States.ALL", "X"]}], ["/States/S/Retry/0/ErrorEquals"]),
        (
            [{"ErrorEquals": ["States.ALL"]}, {"ErrorEquals": ["X"]}],
            ["/States/S/Retry/0/ErrorEquals"],
        ),
        ([{"ErrorEquals": ["X"], "MaxAttempts": -1}], ["/States/S/Retry/0/MaxAttempts"]),
        ([{"ErrorEquals": ["X"], "MaxAttempts": 0}], []),
        ([{"ErrorEquals": ["X"], "BackoffRate": 0.5}], ["/States/S/Retry/0/BackoffRate"]),
        ([{"ErrorEquals": ["X"], "BackoffRate": 1}], []),
        ([{"ErrorEquals": ["X"], "IntervalSeconds": 0}], ["/States/S/Retry/0/IntervalSeconds"]),
        ([{"ErrorEquals": ["X"], "MaxDelaySeconds": 0}], ["/States/S/Retry/0/MaxDelaySeconds"]),
        ([{"ErrorEquals": ["X"], "JitterStrategy": "HALF"}], ["/States/S/Retry/0/JitterStrategy"]),
        ([{"ErrorEquals": ["X"], "Next": "S"}], ["/States/S/Retry/0/Next"]),
        ({"ErrorEquals": ["X"]}, ["/States/S/Retry"]),
    ],
)
def test_retriers(retriers: Any, expected: list[str]) -> None:
    assert pointers(one_state(task(Retry=retriers))) == expected


@pytest.mark.parametrize(
    ("catchers", "expected"),
    [
        ([{"ErrorEquals": ["X"], "Next": "H", "ResultPath": "$.err"}], []),
        # H is unreachable: a consequence, listed after the cause.
        ([{"ErrorEquals": ["X"]}], ["/States/S/Catch/0", "/States/H"]),
        ([{"ErrorEquals": ["X"], "Next": "Nope"}], ["/States/S/Catch/0/Next", "/States/H"]),
        (
            [{"ErrorEquals": ["X"], "Next": "H", "ResultPath": "$.a[*]"}],
            ["/States/S/Catch/0/ResultPath"],
        ),
        (
            [{"ErrorEquals": ["States.ALL"], "Next": "H"}, {"ErrorEquals": ["X"], "Next": "H"}],
            ["/States/S/Catch/0/ErrorEquals"],
        ),
        ([{"ErrorEquals": ["X"], "Next": "H", "Output": {}}], ["/States/S/Catch/0/Output"]),
    ],
)
def test_catchers(catchers: Any, expected: list[str]) -> None:
    definition = machine(S=task(Catch=catchers), H={"Type": "Succeed"})
    assert pointers(definition) == expected


# ------------------------------------------------------------------ Wait, Fail, Pass


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"Seconds": 0}, []),
        ({"SecondsPath": "$.wait"}, []),
        ({"Timestamp": "2016-03-14T01:59:00Z"}, []),
        ({"Timestamp": "2016-03-14T01:59:00.123+02:00"}, []),
        ({"TimestampPath": "$.until"}, []),
        ({}, ["/States/S"]),
        ({"Seconds": -1}, ["/States/S/Seconds"]),
        ({"Seconds": 5, "Timestamp": "2016-03-14T01:59:00Z"}, ["/States/S/Timestamp"]),
        ({"Timestamp": "2016-03-14T01:59:00z"}, ["/States/S/Timestamp"]),
        ({"Timestamp": "2016-13-14T01:59:00Z"}, ["/States/S/Timestamp"]),
        ({"Timestamp": "March 14"}, ["/States/S/Timestamp"]),
        ({"SecondsPath": "$.w[0:2]"}, ["/States/S/SecondsPath"]),
    ],
)
def test_wait(fields: dict[str, Any], expected: list[str]) -> None:
    assert pointers(one_state({"Type": "Wait", "End": True, **fields})) == expected


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, []),
        ({"Error": "E", "Cause": "C"}, []),
        ({"ErrorPath": "$.e", "CausePath": "States.Format('bad {}', $.id)"}, []),
        ({"Error": 1}, ["/States/S/Error"]),
        ({"Cause": "C", "CausePath": "$.c"}, ["/States/S/CausePath"]),
        ({"ErrorPath": "e"}, ["/States/S/ErrorPath"]),
        ({"Next": "S"}, ["/States/S/Next"]),
    ],
)
def test_fail(fields: dict[str, Any], expected: list[str]) -> None:
    assert pointers(one_state({"Type": "Fail", **fields})) == expected


def test_pass_result_may_be_any_json() -> None:
    state = {"Type": "Pass", "Result": {"a.$": 1}, "ResultPath": "$.r", "End": True}
    assert validate(one_state(state)) == []


# ------------------------------------------------------------------- Parallel and Map


def test_parallel_branches_are_validated_as_sub_machines() -> None:
    definition = machine(
        P={
            "Type": "Parallel",
            "End": True,
            "Branches": [
                {"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "Z"}}},
                {
                    "StartAt": "B",
                    "States": {"B": {"Type": "Pass", "End": True}, "C": {"Type": "Succeed"}},
                },
                {"States": {"D": {"Type": "Succeed"}}, "Extra": 1},
                "branch",
            ],
        }
    )
    assert pointers(definition) == [
        "/States/P/Branches/0/States",
        "/States/P/Branches/0/States/A/Next",
        "/States/P/Branches/2",
        "/States/P/Branches/2/Extra",
        "/States/P/Branches/3",
        "/States/P/Branches/1/States/C",  # unreachable: listed after the other problems
    ]


@pytest.mark.parametrize("branches", [[], {}, None])
def test_parallel_needs_a_non_empty_branches_array(branches: Any) -> None:
    state = {"Type": "Parallel", "End": True, "Branches": branches}
    assert pointers(one_state(state)) == ["/States/S/Branches"]


def map_state(**fields: Any) -> dict[str, Any]:
    processor = {"StartAt": "I", "States": {"I": {"Type": "Pass", "End": True}}}
    return {"Type": "Map", "End": True, "ItemProcessor": processor, **fields}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"ItemsPath": "$.items", "MaxConcurrency": 0, "ToleratedFailurePercentage": 12.5}, []),
        ({"ItemsPath": "$.items[*]"}, ["/States/S/ItemsPath"]),
        ({"MaxConcurrency": -1}, ["/States/S/MaxConcurrency"]),
        ({"MaxConcurrency": 2, "MaxConcurrencyPath": "$.n"}, ["/States/S/MaxConcurrencyPath"]),
        ({"ToleratedFailurePercentage": 101}, ["/States/S/ToleratedFailurePercentage"]),
        ({"ToleratedFailurePercentage": -1}, ["/States/S/ToleratedFailurePercentage"]),
        ({"ToleratedFailureCount": 1.5}, ["/States/S/ToleratedFailureCount"]),
        (
            {"ItemSelector": {"v.$": "$$.Map.Item.Value"}, "Parameters": {"v.$": "$"}},
            ["/States/S/Parameters"],
        ),
        ({"ItemSelector": "x"}, ["/States/S/ItemSelector"]),
        ({"Items": [1, 2]}, ["/States/S/Items"]),  # JSONata-only field
        (
            {"Iterator": {"StartAt": "J", "States": {"J": {"Type": "Succeed"}}}},
            ["/States/S/Iterator"],
        ),
        ({"Label": "L" * 41}, ["/States/S/Label"]),
    ],
)
def test_map_fields(fields: dict[str, Any], expected: list[str]) -> None:
    assert pointers(one_state(map_state(**fields))) == expected


def test_map_needs_a_processor_and_validates_it_recursively() -> None:
    state = map_state()
    del state["ItemProcessor"]
    assert pointers(one_state(state)) == ["/States/S"]
    state = map_state()
    state["ItemProcessor"]["States"]["I"] = {"Type": "Pass", "Next": "S"}
    state["ItemProcessor"]["ProcessorConfig"] = {"Mode": "PARALLEL"}
    assert pointers(one_state(state)) == [
        "/States/S/ItemProcessor/ProcessorConfig/Mode",
        "/States/S/ItemProcessor/States",
        "/States/S/ItemProcessor/States/I/Next",
    ]


def test_distributed_map_parts() -> None:
    state = map_state(
        ItemReader={
            "Resource": "arn:aws:states:::s3:getObject",
            "ReaderConfig": {"InputType": "CSV", "MaxItems": -1, "Size": 1},
        },
        ItemBatcher={"BatchInput": {"k": "v"}},
        ResultWriter={"Resource": "s3", "Parameters": {"Bucket": "b"}},
    )
    state["ItemProcessor"]["ProcessorConfig"] = {"Mode": "DISTRIBUTED"}
    assert pointers(one_state(state)) == [
        "/States/S/ItemBatcher",
        "/States/S/ItemProcessor/ProcessorConfig",
        "/States/S/ItemReader/ReaderConfig/MaxItems",
        "/States/S/ItemReader/ReaderConfig/Size",
        "/States/S/ResultWriter/Resource",
    ]


# ------------------------------------------------------------- JSONata and variables


def jsonata(**states: dict[str, Any]) -> dict[str, Any]:
    return {"QueryLanguage": "JSONata", **machine(**states)}


def test_jsonata_states_use_arguments_output_and_conditions() -> None:
    definition = jsonata(
        T={
            "Type": "Task",
            "Resource": "f",
            "Arguments": {"x": "{% $states.input.x %}"},
            "Output": "{% $states.result %}",
            "TimeoutSeconds": "{% 30 %}",
            "Assign": {"total": "{% $sum($states.result.items) %}"},
            "Next": "C",
        },
        C={
            "Type": "Choice",
            "Default": "W",
            "Choices": [{"Condition": "{% $total > 3 %}", "Next": "W", "Output": {"big": True}}],
        },
        W={"Type": "Wait", "Seconds": "{% $total %}", "Next": "M"},
        M={
            "Type": "Map",
            "Items": "{% [1, 2, 3] %}",
            "MaxConcurrency": "{% 2 %}",
            "ItemProcessor": {"StartAt": "I", "States": {"I": {"Type": "Succeed"}}},
            "Next": "F",
        },
        F={"Type": "Fail", "Error": "{% 'E' & $total %}", "Cause": "plain text"},
    )
    assert validate(definition) == []


def test_jsonata_reports_jsonpath_fields_bad_expressions_and_missing_conditions() -> None:
    definition = jsonata(
        T={
            "Type": "Task",
            "Resource": "f",
            "InputPath": "$.a",
            "Output": "{% 1 + %}",
            "TimeoutSecondsPath": "$.t",
            "Next": "C",
        },
        C={"Type": "Choice", "Choices": [{"Variable": "$.x", "IsNull": True, "Next": "D"}]},
        D={"Type": "Pass", "Output": {"a": ["{% $x %", "ok"]}, "End": True},
    )
    assert pointers(definition) == [
        "/States/C/Choices/0",  # no Condition
        "/States/C/Choices/0/IsNull",
        "/States/C/Choices/0/Variable",
        "/States/D/Output/a/0",  # not closed with %}
        "/States/T/InputPath",
        "/States/T/Output",
        "/States/T/TimeoutSecondsPath",
    ]


def test_jsonpath_states_cannot_use_jsonata_fields() -> None:
    state = {"Type": "Pass", "Output": {"a": 1}, "End": True}
    assert pointers(one_state(state)) == ["/States/S/Output"]
    state = {"Type": "Pass", "QueryLanguage": "JSONata", "Output": {"a": 1}, "End": True}
    assert validate(one_state(state)) == []


def test_a_state_cannot_switch_back_to_jsonpath_under_a_jsonata_top_level() -> None:
    definition = jsonata(S={"Type": "Pass", "QueryLanguage": "JSONPath", "End": True})
    assert pointers(definition) == ["/States/S/QueryLanguage"]


def test_assign_is_checked_as_a_template_in_jsonpath() -> None:
    state = {
        "Type": "Pass",
        "End": True,
        "Assign": {"x.$": "$.a", "y": {"z.$": "bad"}, "states": 1, "w.$": 2},
    }
    assert pointers(one_state(state)) == [
        "/States/S/Assign/states",
        "/States/S/Assign/w.$",
        "/States/S/Assign/y/z.$",
    ]
    assert pointers(one_state({"Type": "Pass", "End": True, "Assign": []})) == ["/States/S/Assign"]


def test_validation_does_not_modify_the_definition() -> None:
    definition = machine(A=task(Parameters={"a.$": "$"}), B={"Type": "Pass"})
    before = copy.deepcopy(definition)
    validate(definition, functions=["Work"])
    assert definition == before
