"""Paths: syntax, evaluation (Jayway semantics) and the state input/output pipeline.

Expected values come from the Step Functions developer guide ("Paths", "InputPath,
Parameters and ResultSelector", "ResultPath"), the Jayway JsonPath README (Step Functions
paths "follow JsonPath syntax" and link to it) or are worked out by hand in comments.
"""

from __future__ import annotations

import copy

import pytest

from faastlane.runtime.asl.errors import RESULT_PATH_MATCH_FAILURE, RUNTIME, StatesError
from faastlane.runtime.asl.input_output import (
    apply_input_path,
    apply_output_path,
    apply_result_path,
    apply_template,
)
from faastlane.runtime.asl.jsonpath import (
    PathNotFound,
    PathSyntaxError,
    check_path,
    check_reference_path,
    read,
)

# The developer guide's Reference Paths example input.
REFERENCE_INPUT = {"foo": 123, "bar": ["a", "b", "c"], "car": {"cdr": True}}

# The Jayway JsonPath README's store.
STORE = {
    "store": {
        "book": [
            {"category": "reference", "author": "Nigel Rees",
             "title": "Sayings of the Century", "price": 8.95},
            {"category": "fiction", "author": "Evelyn Waugh",
             "title": "Sword of Honour", "price": 12.99},
            {"category": "fiction", "author": "Herman Melville", "title": "Moby Dick",
             "isbn": "0-553-21311-3", "price": 8.99},
            {"category": "fiction", "author": "J. R. R. Tolkien",
             "title": "The Lord of the Rings", "isbn": "0-395-19395-8", "price": 22.99},
        ],
        "bicycle": {"color": "red", "price": 19.95},
    },
    "expensive": 10,
}
BOOKS = STORE["store"]["book"]

CONTEXT = {
    "Execution": {"Id": "arn:aws:states:us-east-1:123456789012:execution:sm:run-1",
                  "Input": {"x": 1}, "Name": "run-1", "RoleArn": "arn:role",
                  "StartTime": "2024-01-01T00:00:00.000Z", "RedriveCount": 0},
    "State": {"EnteredTime": "2024-01-01T00:00:01.000Z", "Name": "Step", "RetryCount": 0},
    "StateMachine": {"Id": "arn:sm", "Name": "sm"},
    "Task": {"Token": "tok"},
    "Map": {"Item": {"Index": 2, "Value": {"k": "v"}}},
}


# ----------------------------------------------------------------------------- syntax


@pytest.mark.parametrize("path", [
    "$", "$.a.b", "$['a b']", '$["a"]', "$.a[0]", "$.a[-1]", "$.a[*]", "$.*", "$..x",
    "$..*", "$..[0]", "$.a[?(@.x > 1)]", "$.a[?(@.x == 'y' && !(@.z))]", "$.a[1:3]",
    "$.a[:2]", "$.a[-2:]", "$.a[0,1]", "$['a','b']", "$.a.length()", "$..price.sum()",
    "$$", "$$.Execution.Input.x", "$$.Map.Item.Value", "$.a[?(@.n =~ /ab.*/i)]",
    "$.a[?(@.tags in ['x', 'y'])]", "$.a-b.c_d", "$.a[ 0 , 1 ]", "$myVar", "$my_var.a[0]",
])
def test_check_path_accepts_what_jsonpath_allows(path: str) -> None:
    check_path(path)


@pytest.mark.parametrize("path, fragment", [
    ("a.b", "must start with '$'"),
    ("", "must start with '$'"),
    ("$.", "missing property name"),
    ("$.a[", "end of path"),
    ("$.a['b", "unterminated"),
    ("$.a[x]", "unexpected 'x'"),
    ("$.a.nosuch()", "unknown function"),
    ("$.a.length().b", "must end the path"),
    ("$.a[?(@.x >)]", "in a filter"),
    ("$.a)", "unexpected ')'"),
])
def test_check_path_rejects_with_what_and_where(path: str, fragment: str) -> None:
    with pytest.raises(PathSyntaxError) as caught:
        check_path(path)
    assert fragment in str(caught.value)
    assert "position" in str(caught.value)


@pytest.mark.parametrize("path", ["$", "$.foo", "$.car.cdr", "$['a b'].c", "$.bar[1]",
                                  "$$.Execution.Input.x"])
def test_reference_paths_accept_single_nodes(path: str) -> None:
    check_reference_path(path)


# "The operators @ .. , : ? * aren't supported. Functions such as length() aren't
# supported." (developer guide, Reference Paths)
@pytest.mark.parametrize("path", ["$.a[*]", "$.*", "$..a", "$.a[0,1]", "$['a','b']",
                                  "$.a[1:2]", "$.a[?(@.x)]", "$.a.length()"])
def test_reference_paths_reject_anything_that_may_match_many(path: str) -> None:
    with pytest.raises(PathSyntaxError):
        check_reference_path(path)


# ----------------------------------------------------------------------------- read


def test_reference_path_examples_from_the_developer_guide() -> None:
    # "$.foo => 123", "$.bar => ["a", "b", "c"]", "$.car.cdr => true"
    assert read(REFERENCE_INPUT, "$.foo") == 123
    assert read(REFERENCE_INPUT, "$.bar") == ["a", "b", "c"]
    assert read(REFERENCE_INPUT, "$.car.cdr") is True
    assert read(REFERENCE_INPUT, "$") is REFERENCE_INPUT


def test_bracket_notation_and_indexes() -> None:
    data = {"a b": {"c": [10, 20, 30]}}
    assert read(data, "$['a b'].c[0]") == 10
    assert read(data, "$['a b']['c'][-1]") == 30  # negative counts from the end


def test_definite_path_returns_shared_node_not_a_copy() -> None:
    assert read(STORE, "$.store.bicycle") is STORE["store"]["bicycle"]


def test_jayway_readme_examples() -> None:
    authors = ["Nigel Rees", "Evelyn Waugh", "Herman Melville", "J. R. R. Tolkien"]
    assert read(STORE, "$.store.book[*].author") == authors
    assert read(STORE, "$..author") == authors
    # "All things, both books and bicycles": the values of store.
    assert read(STORE, "$.store.*") == [BOOKS, STORE["store"]["bicycle"]]
    # "The price of everything": books first (document order), then the bicycle.
    assert read(STORE, "$.store..price") == [8.95, 12.99, 8.99, 22.99, 19.95]
    assert read(STORE, "$..book[2]") == [BOOKS[2]]
    assert read(STORE, "$..book[-2]") == [BOOKS[2]]
    assert read(STORE, "$..book[0,1]") == BOOKS[:2]
    assert read(STORE, "$..book[:2]") == BOOKS[:2]
    assert read(STORE, "$..book[1:2]") == [BOOKS[1]]
    assert read(STORE, "$..book[-2:]") == BOOKS[2:]
    assert read(STORE, "$..book[2:]") == BOOKS[2:]
    assert read(STORE, "$..book[?(@.isbn)]") == [BOOKS[2], BOOKS[3]]
    assert read(STORE, "$.store.book[?(@.price < 10)]") == [BOOKS[0], BOOKS[2]]
    assert read(STORE, "$..book[?(@.price <= $['expensive'])]") == [BOOKS[0], BOOKS[2]]
    assert read(STORE, "$..book[?(@.author =~ /.*REES/i)]") == [BOOKS[0]]
    # "The number of books"
    assert read(STORE, "$..book.length()") == 4


def test_filters_combine_with_and_or_not() -> None:
    fiction_under_10 = "$.store.book[?(@.category == 'fiction' && @.price < 10)].title"
    assert read(STORE, fiction_under_10) == ["Moby Dick"]
    cheap_or_tolkien = "$.store.book[?(@.price < 9 || @.author == 'J. R. R. Tolkien')].price"
    assert read(STORE, cheap_or_tolkien) == [8.95, 8.99, 22.99]
    assert read(STORE, "$.store.book[?(!@.isbn)].price") == [8.95, 12.99]
    assert read(STORE, "$.store.book[?(@.category in ['reference'])].price") == [8.95]
    # Numbers compare with numbers only: the string '8.95' matches nothing.
    assert read(STORE, "$.store.book[?(@.price == '8.95')]") == []


def test_union_of_names_at_the_leaf_makes_one_object() -> None:
    # Jayway: "$['a','b']" on an object yields one object of those properties.
    assert read({"a": 1, "b": 2, "c": 3}, "$['a','b']") == [{"a": 1, "b": 2}]


def test_indefinite_path_with_no_match_is_an_empty_list() -> None:
    assert read(STORE, "$.store.book[?(@.price > 100)]") == []
    assert read(STORE, "$..nothing") == []


def test_functions_on_definite_paths() -> None:
    data = {"numbers": [1, 2, 6], "obj": {"x": 1, "y": 2}}
    assert read(data, "$.numbers.length()") == 3
    assert read(data, "$.obj.length()") == 2
    assert read(data, "$.obj.keys()") == ["x", "y"]
    # Jayway's aggregations compute in doubles.
    assert read(data, "$.numbers.sum()") == 9.0
    assert read(data, "$.numbers.avg()") == 3.0
    assert read(data, "$.numbers.min()") == 1.0
    assert read(data, "$.numbers.max()") == 6.0
    # Population standard deviation of 1, 2, 6: mean 3, variance (4+1+9)/3.
    assert read(data, "$.numbers.stddev()") == pytest.approx((14 / 3) ** 0.5)
    assert read(data, "$.numbers.first()") == 1
    assert read(data, "$.numbers.last()") == 6


def test_context_paths_read_the_context_object() -> None:
    assert read({}, "$$.Execution.Input.x", CONTEXT) == 1
    assert read({}, "$$.Map.Item.Index", CONTEXT) == 2
    assert read({}, "$$.State.Name", CONTEXT) == "Step"
    assert read({}, "$$", CONTEXT) is CONTEXT


@pytest.mark.parametrize("path, message", [
    # Jayway's wording, which AWS quotes in its causes.
    ("$.missing", "No results for path: $['missing']"),
    ("$.car.nope", "No results for path: $['car']['nope']"),
    ("$.bar[7]", "No results for path: $['bar'][7]"),
    ("$.nope.deeper", "Missing property in path $['nope']"),
    ("$.foo.x", "Expected to find an object with property ['x'] in path $['foo']"),
])
def test_definite_path_that_matches_nothing_raises(path: str, message: str) -> None:
    with pytest.raises(PathNotFound) as caught:
        read(REFERENCE_INPUT, path)
    assert str(caught.value).startswith(message)
    assert caught.value.path == path


# ----------------------------------------------------------------------------- InputPath


def test_input_path_example_from_the_developer_guide() -> None:
    data = {
        "comment": "Example for InputPath.",
        "dataset1": {"val1": 1, "val2": 2, "val3": 3},
        "dataset2": {"val1": "a", "val2": "b", "val3": "c"},
    }
    # "InputPath": "$.dataset2" -> {"val1": "a", "val2": "b", "val3": "c"}
    assert apply_input_path(data, "$.dataset2", CONTEXT) == {"val1": "a", "val2": "b",
                                                             "val3": "c"}
    assert apply_input_path(data, "$", CONTEXT) is data


def test_null_input_and_output_paths_give_an_empty_object() -> None:
    # "If the value of InputPath is null ... the effective input for the state is an
    # empty JSON object, {}" and likewise for OutputPath.
    assert apply_input_path({"a": 1}, None, CONTEXT) == {}
    assert apply_output_path({"a": 1}, None, CONTEXT) == {}


def test_input_path_that_matches_nothing_is_states_runtime_with_aws_wording() -> None:
    with pytest.raises(StatesError) as caught:
        apply_input_path({"a": 1}, "$.x", CONTEXT)
    assert caught.value.error == RUNTIME
    assert caught.value.cause == "Invalid path '$.x' : No results for path: $['x']"


def test_output_path_selects_and_can_read_context() -> None:
    assert apply_output_path({"a": {"b": 2}}, "$.a.b", CONTEXT) == 2
    assert apply_output_path({"a": 1}, "$$.Execution.Name", CONTEXT) == "run-1"
    with pytest.raises(StatesError) as caught:
        apply_output_path({"a": 1}, "$.b.c", CONTEXT)
    assert caught.value.cause == "Invalid path '$.b.c' : Missing property in path $['b']"


# ----------------------------------------------------------------------------- templates


def test_parameters_example_from_the_developer_guide() -> None:
    data = {
        "comment": "Example for Parameters.",
        "product": {
            "details": {"color": "blue", "size": "small", "material": "cotton"},
            "availability": "in stock", "sku": "2317", "cost": "$23",
        },
    }
    template = {
        "comment": "Selecting what I care about.",
        "MyDetails": {
            "size.$": "$.product.details.size",
            "exists.$": "$.product.availability",
            "StaticValue": "foo",
        },
    }
    assert apply_template(template, data, CONTEXT) == {
        "comment": "Selecting what I care about.",
        "MyDetails": {"size": "small", "exists": "in stock", "StaticValue": "foo"},
    }


def test_template_reads_context_and_intrinsics_and_lists() -> None:
    template = {
        "token.$": "$$.Task.Token",
        "item.$": "$$.Map.Item.Value",
        "all.$": "$.n[*]",
        "greeting.$": "States.Format('Hello, {}', $.name)",
        "rows": [{"first.$": "$.n[0]"}, "literal", 3],
    }
    data = {"n": [4, 5], "name": "Ann"}
    assert apply_template(template, data, CONTEXT) == {
        "token": "tok", "item": {"k": "v"}, "all": [4, 5], "greeting": "Hello, Ann",
        "rows": [{"first": 4}, "literal", 3],
    }


def test_template_output_does_not_share_containers_with_the_template() -> None:
    template = {"fixed": {"list": [1, 2]}}
    out = apply_template(template, {}, CONTEXT)
    out["fixed"]["list"].append(3)  # a function mutating its input
    assert template == {"fixed": {"list": [1, 2]}}


def test_template_path_not_found_is_states_runtime_naming_the_field() -> None:
    with pytest.raises(StatesError) as caught:
        apply_template({"v.$": "$.missing"}, {"a": 1}, CONTEXT)
    assert caught.value.error == RUNTIME
    assert caught.value.cause == ("The JSONPath '$.missing' specified for the field 'v.$' "
                                  "could not be found in the input '{\"a\":1}'")


def test_template_intrinsic_failure_is_states_intrinsic_failure() -> None:
    with pytest.raises(StatesError) as caught:
        apply_template({"v.$": "States.ArrayLength($.a)"}, {"a": "not an array"}, CONTEXT)
    assert caught.value.error == "States.IntrinsicFailure"


# ----------------------------------------------------------------------------- ResultPath

RESULT_INPUT = {
    "comment": "This is a test of the input and output of a Task state.",
    "details": "Default example",
    "who": "AWS Step Functions",
}
RESULT = "Hello, AWS Step Functions!"


def test_result_path_dollar_replaces_the_input() -> None:
    assert apply_result_path(RESULT_INPUT, RESULT, "$") == RESULT


def test_result_path_null_discards_the_result() -> None:
    assert apply_result_path(RESULT_INPUT, RESULT, None) is RESULT_INPUT


def test_result_path_adds_the_result_to_the_input() -> None:
    # Developer guide: "ResultPath": "$.taskresult" keeps the input and adds the result.
    before = copy.deepcopy(RESULT_INPUT)
    out = apply_result_path(RESULT_INPUT, RESULT, "$.taskresult")
    assert out == {**before, "taskresult": RESULT}
    assert RESULT_INPUT == before  # the input is left alone


def test_result_path_creates_missing_objects_and_keeps_siblings() -> None:
    data = {"a": {"keep": [1]}, "b": 2}
    out = apply_result_path(data, 5, "$.a.x.y")
    assert out == {"a": {"keep": [1], "x": {"y": 5}}, "b": 2}
    assert data == {"a": {"keep": [1]}, "b": 2}
    assert out["a"]["keep"] is data["a"]["keep"]  # untouched parts are shared


def test_result_path_replaces_existing_node_and_array_element() -> None:
    assert apply_result_path({"a": 1}, {"z": 0}, "$.a") == {"a": {"z": 0}}
    data = {"list": [1, 2, 3]}
    assert apply_result_path(data, 9, "$.list[1]") == {"list": [1, 9, 3]}
    assert data == {"list": [1, 2, 3]}


@pytest.mark.parametrize("state_input, path", [
    ("a string", "$.x"),  # the input is not an object
    ({"a": 5}, "$.a.b"),  # an intermediate node is not an object
    ({"list": [1]}, "$.list[3]"),  # no such element
])
def test_result_path_that_cannot_apply_is_result_path_match_failure(state_input, path) -> None:
    with pytest.raises(StatesError) as caught:
        apply_result_path(state_input, 1, path)
    assert caught.value.error == RESULT_PATH_MATCH_FAILURE
    assert path in caught.value.cause


def test_workflow_variables_are_read_from_the_variables() -> None:
    variables = {"inputPayload": {"data": {"firstname": "Ann"}}, "n": 3}
    assert read({}, "$inputPayload.data.firstname", CONTEXT, variables) == "Ann"
    assert read({}, "$n", CONTEXT, variables) == 3
    with pytest.raises(PathNotFound, match="Variable 'other' is not defined"):
        read({}, "$other", CONTEXT, variables)
    template = {"name.$": "$inputPayload.data.firstname", "plain.$": "$.x"}
    assert apply_template(template, {"x": 1}, CONTEXT, variables) == {"name": "Ann", "plain": 1}
    # ResultPath writes the state's output, never a variable.
    with pytest.raises(StatesError) as caught:
        apply_result_path({}, 1, "$n")
    assert caught.value.error == RESULT_PATH_MATCH_FAILURE
