"""Choice rules: every comparator, type rules, timestamps, StringMatches, And/Or/Not.

Expected values come from the Step Functions developer guide ("Choice workflow state")
and the Amazon States Language specification, quoted where used, or hand reasoning.
"""

from __future__ import annotations

import pytest

from faastlane.runtime.asl.choice import COMPARATORS, choose, evaluate_rule
from faastlane.runtime.asl.errors import NO_CHOICE_MATCHED, RUNTIME, StatesError

CONTEXT = {"State": {"Name": "Decide", "EnteredTime": "2024-01-01T00:00:00Z"},
           "Execution": {"Input": {"limit": 25}}}

# The developer guide's Choice state example.
GUIDE_CHOICES = [
    {"Not": {"Variable": "$.type", "StringEquals": "Private"}, "Next": "Public"},
    {"Variable": "$.value", "NumericEquals": 0, "Next": "ValueIsZero"},
    {"And": [{"Variable": "$.value", "NumericGreaterThanEquals": 20},
             {"Variable": "$.value", "NumericLessThan": 30}],
     "Next": "ValueInTwenties"},
]


def rule(variable: str, name: str, operand: object) -> dict:
    return {"Variable": variable, name: operand}


def test_comparator_table_covers_every_operator() -> None:
    relations = ["Equals", "LessThan", "GreaterThan", "LessThanEquals", "GreaterThanEquals"]
    expected = {}
    for family, kind in (("String", "string"), ("Numeric", "numeric"),
                         ("Timestamp", "timestamp")):
        for relation in relations:
            expected[family + relation] = kind
            expected[family + relation + "Path"] = "path"
    expected.update({"StringMatches": "string", "BooleanEquals": "boolean",
                     "BooleanEqualsPath": "path", "IsNull": "boolean",
                     "IsPresent": "boolean", "IsNumeric": "boolean", "IsString": "boolean",
                     "IsBoolean": "boolean", "IsTimestamp": "boolean"})
    assert COMPARATORS == expected


def test_guide_example_goes_to_value_in_twenties() -> None:
    # Input {"type": "Private", "value": 22}: "Step Functions transitions to the
    # ValueInTwenties state, based on the value field."
    data = {"type": "Private", "value": 22}
    assert choose(GUIDE_CHOICES, "DefaultState", data, CONTEXT) == "ValueInTwenties"
    assert choose(GUIDE_CHOICES, "DefaultState", {"type": "Public", "value": 22},
                  CONTEXT) == "Public"
    assert choose(GUIDE_CHOICES, "DefaultState", {"type": "Private", "value": 0},
                  CONTEXT) == "ValueIsZero"
    # 30 is not < 30: no rule matches, so Default.
    assert choose(GUIDE_CHOICES, "DefaultState", {"type": "Private", "value": 30},
                  CONTEXT) == "DefaultState"


def test_no_match_without_default_is_no_choice_matched() -> None:
    with pytest.raises(StatesError) as caught:
        choose(GUIDE_CHOICES, None, {"type": "Private", "value": 1}, CONTEXT)
    assert caught.value.error == NO_CHOICE_MATCHED
    assert "Decide" in caught.value.cause


def test_missing_variable_is_states_runtime() -> None:
    # Guide: "If the state input doesn't contain the $.type field, the execution fails".
    with pytest.raises(StatesError) as caught:
        choose(GUIDE_CHOICES, "DefaultState", {"value": 22}, CONTEXT)
    assert caught.value.error == RUNTIME
    assert "$.type" in caught.value.cause


@pytest.mark.parametrize("name, operand, expected", [
    ("StringEquals", "MyString", True),
    ("StringEquals", "mystring", False),
    ("StringGreaterThan", "MyStrinf", True),  # 'g' > 'f'
    ("StringGreaterThan", "MyString", False),
    ("StringGreaterThanEquals", "MyString", True),
    ("StringLessThan", "MyStringA", True),  # a proper prefix sorts first
    ("StringLessThanEquals", "MyString", True),
    ("StringLessThanEquals", "Ab", False),  # 'M' > 'A'
])
def test_string_comparisons(name: str, operand: str, expected: bool) -> None:
    assert evaluate_rule(rule("$.foo", name, operand), {"foo": "MyString"}, CONTEXT) is expected


def test_string_order_is_java_compare_to_over_utf16_units() -> None:
    # U+FF5E is one UTF-16 unit 0xFF5E; U+1F600 is the surrogate pair 0xD83D 0xDE00.
    # By code point U+1F600 is greater; by Java's compareTo (0xD83D < 0xFF5E) it is less.
    data = {"s": "\U0001F600"}
    assert evaluate_rule(rule("$.s", "StringLessThan", "\uFF5E"), data, CONTEXT) is True


@pytest.mark.parametrize("name, operand, expected", [
    ("NumericEquals", 1, True),
    ("NumericEquals", 1.0, True),  # 1 and 1.0 are the same number
    ("NumericLessThan", 1.5, True),
    ("NumericGreaterThan", 0.5, True),
    ("NumericGreaterThanEquals", 1, True),
    ("NumericLessThanEquals", 0, False),
])
def test_numeric_comparisons(name: str, operand: float, expected: bool) -> None:
    assert evaluate_rule(rule("$.foo", name, operand), {"foo": 1}, CONTEXT) is expected


@pytest.mark.parametrize("value", ["1", True, None, [1], {"a": 1}])
def test_wrong_type_compares_false_not_error(value: object) -> None:
    # "Step Functions doesn't attempt to match a numeric field to a string value."
    data = {"foo": value}
    assert evaluate_rule(rule("$.foo", "NumericEquals", 1), data, CONTEXT) is False
    assert evaluate_rule(rule("$.foo", "NumericLessThan", 5), data, CONTEXT) is False
    if not isinstance(value, str):
        assert evaluate_rule(rule("$.foo", "StringEquals", "1"), data, CONTEXT) is False


def test_boolean_equals() -> None:
    assert evaluate_rule(rule("$.b", "BooleanEquals", True), {"b": True}, CONTEXT) is True
    assert evaluate_rule(rule("$.b", "BooleanEquals", False), {"b": True}, CONTEXT) is False
    # 1 is a number, not true.
    assert evaluate_rule(rule("$.b", "BooleanEquals", True), {"b": 1}, CONTEXT) is False


def test_timestamp_equals_example_and_instants() -> None:
    data = {"foo": "2001-01-01T12:00:00Z"}
    # Guide: "checks whether the timestamp is equal to 2001-01-01T12:00:00Z".
    assert evaluate_rule(rule("$.foo", "TimestampEquals", "2001-01-01T12:00:00Z"), data,
                         CONTEXT) is True
    # The same instant written with an offset and with fractional zeros.
    assert evaluate_rule(rule("$.foo", "TimestampEquals", "2001-01-01T13:00:00+01:00"), data,
                         CONTEXT) is True
    assert evaluate_rule(rule("$.foo", "TimestampEquals", "2001-01-01T12:00:00.000Z"), data,
                         CONTEXT) is True
    # Instants, not text: 13:30+02:00 is 11:30Z, earlier than 12:00Z, and 06:00-07:00 is
    # 13:00Z, later - although as strings "13" > "12" and "06" < "12".
    assert evaluate_rule(rule("$.foo", "TimestampGreaterThan", "2001-01-01T13:30:00+02:00"),
                         data, CONTEXT) is True
    assert evaluate_rule(rule("$.foo", "TimestampLessThan", "2001-01-01T06:00:00-07:00"),
                         data, CONTEXT) is True
    assert evaluate_rule(rule("$.foo", "TimestampLessThanEquals", "2001-01-01T12:00:00Z"),
                         data, CONTEXT) is True
    assert evaluate_rule(rule("$.foo", "TimestampGreaterThanEquals",
                              "2001-01-01T12:00:00.000000001Z"), data, CONTEXT) is False


@pytest.mark.parametrize("text, is_timestamp", [
    ("2016-08-18T17:33:00Z", True),
    ("2016-08-18T17:33:00.123456789+05:30", True),
    ("2016-08-18t17:33:00Z", False),  # "An uppercase T must separate..."
    ("2016-08-18T17:33:00z", False),  # "An uppercase Z must denote..."
    ("2016-08-18 17:33:00Z", False),
    ("2016-08-18T17:33:00", False),  # no zone
    ("2016-02-30T00:00:00Z", False),  # no such day
    (20160818, False),
])
def test_is_timestamp_follows_rfc3339_with_the_asl_restrictions(text, is_timestamp) -> None:
    data = {"t": text}
    assert evaluate_rule(rule("$.t", "IsTimestamp", True), data, CONTEXT) is is_timestamp
    assert evaluate_rule(rule("$.t", "IsTimestamp", False), data, CONTEXT) is not is_timestamp


@pytest.mark.parametrize("pattern, value, expected", [
    ("log-*.txt", "log-2024-01.txt", True),
    ("log-*.txt", "log-2024-01.csv", False),
    ("*", "", True),
    ("a*b*c", "aXXbYYc", True),
    ("a\\*", "a*", True),  # escaped: a literal asterisk
    ("a\\*", "abc", False),
    ("a\\\\*", "a\\anything", True),  # escaped backslash, then a wildcard
    ("a.c", "abc", False),  # only * is special
])
def test_string_matches(pattern: str, value: str, expected: bool) -> None:
    assert evaluate_rule(rule("$.s", "StringMatches", pattern), {"s": value}, CONTEXT) \
        is expected


def test_type_tests() -> None:
    data = {"n": None, "i": 3, "f": 2.5, "s": "x", "b": False, "l": []}
    assert evaluate_rule(rule("$.n", "IsNull", True), data, CONTEXT)
    assert evaluate_rule(rule("$.i", "IsNull", False), data, CONTEXT)
    assert evaluate_rule(rule("$.i", "IsNumeric", True), data, CONTEXT)
    assert evaluate_rule(rule("$.f", "IsNumeric", True), data, CONTEXT)
    assert evaluate_rule(rule("$.b", "IsNumeric", False), data, CONTEXT)  # bool isn't a number
    assert evaluate_rule(rule("$.s", "IsString", True), data, CONTEXT)
    assert evaluate_rule(rule("$.l", "IsString", False), data, CONTEXT)
    assert evaluate_rule(rule("$.b", "IsBoolean", True), data, CONTEXT)
    assert evaluate_rule(rule("$.i", "IsBoolean", False), data, CONTEXT)


def test_is_present_handles_missing_variables() -> None:
    data = {"here": None}
    assert evaluate_rule(rule("$.here", "IsPresent", True), data, CONTEXT) is True
    assert evaluate_rule(rule("$.gone", "IsPresent", True), data, CONTEXT) is False
    assert evaluate_rule(rule("$.gone", "IsPresent", False), data, CONTEXT) is True
    assert evaluate_rule(rule("$.gone.deeper", "IsPresent", False), data, CONTEXT) is True


def test_missing_variable_for_type_tests_is_an_error() -> None:
    with pytest.raises(StatesError) as caught:
        evaluate_rule(rule("$.gone", "IsNull", True), {}, CONTEXT)
    assert caught.value.error == RUNTIME


def test_path_comparators_read_the_second_operand() -> None:
    data = {"a": 5, "b": 7, "s": "x", "t": "x", "flag": True, "yes": True,
            "when": "2020-01-01T00:00:00Z", "later": "2020-01-02T00:00:00Z"}
    assert evaluate_rule(rule("$.a", "NumericLessThanPath", "$.b"), data, CONTEXT)
    assert not evaluate_rule(rule("$.a", "NumericEqualsPath", "$.b"), data, CONTEXT)
    assert evaluate_rule(rule("$.s", "StringEqualsPath", "$.t"), data, CONTEXT)
    assert evaluate_rule(rule("$.flag", "BooleanEqualsPath", "$.yes"), data, CONTEXT)
    assert evaluate_rule(rule("$.when", "TimestampLessThanPath", "$.later"), data, CONTEXT)
    # The second operand may come from the context object.
    assert evaluate_rule(rule("$.a", "NumericLessThanEqualsPath", "$$.Execution.Input.limit"),
                         data, CONTEXT)
    # An operand of the wrong type compares false.
    assert not evaluate_rule(rule("$.a", "NumericEqualsPath", "$.s"), data, CONTEXT)
    with pytest.raises(StatesError) as caught:
        evaluate_rule(rule("$.a", "NumericEqualsPath", "$.nope"), data, CONTEXT)
    assert caught.value.error == RUNTIME
    assert "$.nope" in caught.value.cause


def test_variable_from_the_context_object() -> None:
    assert evaluate_rule(rule("$$.State.Name", "StringEquals", "Decide"), {}, CONTEXT)


def test_or_and_not_nest() -> None:
    nested = {"Or": [{"Variable": "$.x", "NumericEquals": 1},
                     {"Not": {"And": [{"Variable": "$.y", "IsPresent": True},
                                      {"Variable": "$.y", "StringEquals": "keep"}]}}]}
    assert evaluate_rule(nested, {"x": 1}, CONTEXT)  # first branch
    assert evaluate_rule(nested, {"x": 2}, CONTEXT)  # y absent: And false, Not true
    assert evaluate_rule(nested, {"x": 2, "y": "drop"}, CONTEXT)
    assert not evaluate_rule(nested, {"x": 2, "y": "keep"}, CONTEXT)


def test_rule_without_exactly_one_comparator_is_rejected() -> None:
    with pytest.raises(StatesError):
        evaluate_rule({"Variable": "$.x"}, {"x": 1}, CONTEXT)
    with pytest.raises(StatesError):
        evaluate_rule({"Variable": "$.x", "NumericEquals": 1, "StringEquals": "1"}, {"x": 1},
                      CONTEXT)


def test_variables_can_be_compared() -> None:
    variables = {"limit": 10, "mode": {"name": "fast"}}
    assert evaluate_rule(rule("$.n", "NumericLessThanPath", "$limit"), {"n": 3}, CONTEXT,
                         variables)
    assert choose([{**rule("$mode.name", "StringEquals", "fast"), "Next": "Fast"}], None,
                  {}, CONTEXT, variables) == "Fast"
