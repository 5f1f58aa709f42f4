"""Intrinsic functions: parsing, checking and every States.* function.

Expected values are the examples of the Step Functions developer guide ("Intrinsic
functions") and the Amazon States Language specification, quoted next to each test;
where the guide's own example is wrong it says so and why.
"""

from __future__ import annotations

import uuid

import pytest

from deep_json import json_reads, nested
from faastlane.runtime.asl.errors import INTRINSIC_FAILURE, StatesError
from faastlane.runtime.asl.intrinsics import (
    IntrinsicSyntaxError,
    check,
    evaluate,
    is_intrinsic,
)
from faastlane.runtime.asl.jsonpath import PathNotFound

CONTEXT = {"Execution": {"Id": "exec-1", "Name": "run"}, "State": {"Name": "S"}}


def run(text: str, data: object = None) -> object:
    return evaluate(text, {} if data is None else data, CONTEXT)


def fails(text: str, data: object = None) -> str:
    with pytest.raises(StatesError) as caught:
        run(text, data)
    assert caught.value.error == INTRINSIC_FAILURE
    return caught.value.cause


# ----------------------------------------------------------------------------- syntax


def test_is_intrinsic_tells_calls_from_paths() -> None:
    assert is_intrinsic("States.Array($.Id)")
    assert not is_intrinsic("$.States")
    assert not is_intrinsic("$$.Execution.Id")


@pytest.mark.parametrize("text", [
    "States.UUID()",
    "States.Array()",
    "States.Format('{}.{}', $.a, $$.Execution.Id)",
    "States.Format('a \\{b\\} c\\'s \\\\')",
    "States.Array('Foo', 2020, -1.5e3, true, false, null, $.someJson, $['a b'][0])",
    "States.Array($.a[?(@.x == 1)], $.b[0,1], $.c[?(@.y in ['a', 'b'])])",
])
def test_check_accepts_valid_invocations(text: str) -> None:
    check(text)


def test_a_lone_brace_in_a_string_literal_is_itself() -> None:
    # AWS ran States.StringToJson('{"constant_in_literal": "false"}') (LocalStack's
    # recorded test_json_merge_escaped_argument), though the specification reserves braces.
    assert run("""States.StringToJson('{"a": "false"}')""") == {"a": "false"}
    assert run("States.Array('a { b', 'a } b')") == ["a { b", "a } b"]


@pytest.mark.parametrize("text, fragment", [
    ("States.Nope()", "unknown function"),
    ("States.Array(", "end of text"),
    ("States.Array('a'", "end of text"),
    ("States.Array('a)", "unterminated"),
    ("States.Array('a \\x')", "open escape backslash"),
    ("States.Array(foo)", "unexpected 'f'"),
    ("States.Array(1) extra", "after the call"),
    ("States.UUID(1)", "takes 0 argument"),
    ("States.MathAdd(1)", "takes 2 argument"),
    ("States.MathRandom(1, 2, 3, 4)", "takes 2 to 3 argument"),
    ("States.Format()", "at least 1"),
    ("States.Format(1, 2)", "must be a string"),
    ("States.Format('{} and {}', $.a)", "2 '{}' but 1 value"),
    ("States.JsonToString('{}')", "must be a path"),
    ("States.Array($.a[)", "Invalid path"),
    # Literals of the wrong type are caught before any run.
    ("States.MathAdd(1,'-1')", "argument 2 of States.MathAdd must be a number"),
    ("States.ArrayLength('abc')", "must be an array"),
    ("States.Hash('x', 'SHA-3')", "must be one of MD5, SHA-1"),
    ("States.JsonMerge($.a, $.b, true)", "must be false"),
    ("States.StringSplit($.a, 1)", "must be a string"),
    # The guide's "nine nested intrinsic functions" example has three {} but only two
    # values; the specification says "There MUST be as many remaining arguments ... as
    # there are occurrences of {}", so it cannot be accepted as printed.
    ("States.Format('{}.{}.{}', States.ArrayGetItem(States.StringSplit(States.ArrayGetItem("
     "States.StringSplit($.ImageRecipe.Arn, '/'), 2), '.'), 0), States.ArrayGetItem("
     "States.StringSplit(States.ArrayGetItem(States.StringSplit($.ImageRecipe.Arn, '/'), 2),"
     " '.'), 1))", "3 '{}' but 2 value"),
])
def test_check_rejects_with_a_reason(text: str, fragment: str) -> None:
    with pytest.raises(IntrinsicSyntaxError) as caught:
        check(text)
    assert fragment in str(caught.value)


def test_more_than_ten_functions_in_one_field_are_rejected() -> None:
    # "You can nest up to 10 intrinsic functions within a field."
    ten = "States.Array(" * 10 + ")" * 10
    check(ten)
    with pytest.raises(IntrinsicSyntaxError, match="more than 10"):
        check("States.Array(" * 11 + ")" * 11)


# ----------------------------------------------------------------------------- Format


def test_format_examples() -> None:
    data = {"name": "Arnav", "template": "Hello, my name is {}."}
    # Both "States.Format('Hello, my name is {}.', $.name)" and
    # "States.Format($.template, $.name)" "result in ... Hello, my name is Arnav."
    assert run("States.Format('Hello, my name is {}.', $.name)", data) == \
        "Hello, my name is Arnav."
    assert run("States.Format($.template, $.name)", data) == "Hello, my name is Arnav."
    # Specification: "Your name is {}, we are in the year {}" with $.name = "Foo", 2020.
    assert run("States.Format('Your name is {}, we are in the year {}', $.name, 2020)",
               {"name": "Foo"}) == "Your name is Foo, we are in the year 2020"


def test_format_escapes_and_value_rendering() -> None:
    # \{ and \} are literal braces, not a placeholder; \' is a quote, \\ a backslash.
    assert run("States.Format('\\{\\} {} it\\'s \\\\', 'x')") == "{} x it's \\"
    # Non-string values appear in their natural JSON form, strings without quotes.
    assert run("States.Format('{} {} {} {}', true, null, 1.5, $$.Execution.Id)") == \
        "true null 1.5 exec-1"


def test_format_prints_arrays_and_objects_as_aws_does() -> None:
    # The specification says "The Value MUST NOT be a JSON array or object", but AWS
    # formats them, Java-style (LocalStack's recorded test_format_2: fst={"Arg1": 1,
    # "Arg2": []} gave "fst={Arg1=1, Arg2=[]}").
    data = {"a": {"Arg1": 1, "Arg2": []}, "b": ["x", 2, None, True, {"k": "v"}]}
    assert run("States.Format('fst={} and snd={}.', $.a, $.b)", data) == (
        "fst={Arg1=1, Arg2=[]} and snd=[x, 2, null, true, {k=v}].")


@pytest.mark.parametrize("text", ["", " "])
def test_string_to_json_of_an_empty_or_blank_string_is_null(text: str) -> None:
    # AWS answers null (LocalStack's recorded test_string_to_json with "" and " ").
    assert run("States.StringToJson($.s)", {"s": text}) is None


def test_format_with_path_template_must_match_its_placeholders() -> None:
    assert "1 '{}' but 2" in fails("States.Format($.t, 1, 2)", {"t": "only {}"})


# ----------------------------------------------------------------------------- JSON


def test_string_to_json_example() -> None:
    # {"someString": "{\"number\": 20}"} -> {"number": 20}
    assert run("States.StringToJson($.someString)", {"someString": '{"number": 20}'}) == \
        {"number": 20}
    assert "not valid JSON" in fails("States.StringToJson($.s)", {"s": "{nope"})
    assert "must be a string" in fails("States.StringToJson($.n)", {"n": 1})


def test_json_to_string_example() -> None:
    # {"someJson": {"name": "Foo", "year": 2020}} -> "{\"name\":\"Foo\",\"year\":2020}"
    data = {"someJson": {"name": "Foo", "year": 2020}, "zebra": "stripe"}
    assert run("States.JsonToString($.someJson)", data) == '{"name":"Foo","year":2020}'


def test_json_merge_example_is_shallow() -> None:
    data = {"json1": {"a": {"a1": 1, "a2": 2}, "b": 2},
            "json2": {"a": {"a3": 1, "a4": 2}, "c": 3}}
    # "{ "output": { "a": {"a3": 1, "a4": 2}, "b": 2, "c": 3 } }"
    assert run("States.JsonMerge($.json1, $.json2, false)", data) == \
        {"a": {"a3": 1, "a4": 2}, "b": 2, "c": 3}
    assert data["json1"] == {"a": {"a1": 1, "a2": 2}, "b": 2}  # inputs untouched


def test_json_merge_deep_mode_and_non_objects_fail() -> None:
    # "you must specify the boolean value as false"
    assert "must be false" in fails("States.JsonMerge($.a, $.a, $.t)", {"a": {}, "t": True})
    assert "must be an object" in fails("States.JsonMerge($.a, $.b, false)",
                                        {"a": {}, "b": [1]})


# ----------------------------------------------------------------------------- arrays


def test_array_examples() -> None:
    # Guide: {"Id": 123456} with States.Array($.Id) -> [123456]
    assert run("States.Array($.Id)", {"Id": 123456}) == [123456]
    # Specification: States.Array('Foo', 2020, $.someJson, null)
    data = {"someJson": {"random": "abcdefg"}, "zebra": "stripe"}
    assert run("States.Array('Foo', 2020, $.someJson, null)", data) == \
        ["Foo", 2020, {"random": "abcdefg"}, None]


def test_array_partition_example() -> None:
    # [1..9] in chunks of 4 -> [[1,2,3,4],[5,6,7,8],[9]]
    data = {"inputArray": [1, 2, 3, 4, 5, 6, 7, 8, 9]}
    assert run("States.ArrayPartition($.inputArray,4)", data) == \
        [[1, 2, 3, 4], [5, 6, 7, 8], [9]]
    # "You must specify a non-zero, positive integer for the second argument"
    assert "positive" in fails("States.ArrayPartition($.inputArray, 0)", data)
    assert "must be an array" in fails("States.ArrayPartition($.s, 2)", {"s": "x"})


def test_array_contains_example() -> None:
    data = {"inputArray": [1, 2, 3, 4, 5, 6, 7, 8, 9], "lookingFor": 5}
    assert run("States.ArrayContains($.inputArray, $.lookingFor)", data) is True
    assert run("States.ArrayContains($.inputArray, 10)", data) is False
    assert run("States.ArrayContains($.a, $.o)", {"a": [{"x": 1}], "o": {"x": 1}}) is True


def test_array_range_example_and_limits() -> None:
    # "States.ArrayRange(1, 9, 2)" -> [1,3,5,7,9]
    assert run("States.ArrayRange(1, 9, 2)") == [1, 3, 5, 7, 9]
    # A negative increment counts down; the final element is included when reached.
    assert run("States.ArrayRange(5, 1, -2)") == [5, 3, 1]
    assert run("States.ArrayRange(1, 1000, 1)") == list(range(1, 1001))
    # "You must specify a non-zero value for the third argument."
    assert "zero" in fails("States.ArrayRange(1, 9, 0)")
    # "The newly generated array can't contain more than 1000 items."
    assert "1001 items" in fails("States.ArrayRange(0, 1000, 1)")
    assert "integer" in fails("States.ArrayRange($.s, 9, 1)", {"s": "1"})


def test_array_get_item_example() -> None:
    data = {"inputArray": [1, 2, 3, 4, 5, 6, 7, 8, 9], "index": 5}
    # -> { "item": 6 }
    assert run("States.ArrayGetItem($.inputArray, $.index)", data) == 6
    assert "out of bounds" in fails("States.ArrayGetItem($.inputArray, 9)", data)


def test_array_length_example() -> None:
    # -> { "length": 9 }
    assert run("States.ArrayLength($.inputArray)", {"inputArray": list(range(9))}) == 9


def test_array_unique_example() -> None:
    # [1,2,3,3,3,3,3,3,4] -> [1,2,3,4]
    assert run("States.ArrayUnique($.inputArray)",
               {"inputArray": [1, 2, 3, 3, 3, 3, 3, 3, 4]}) == [1, 2, 3, 4]
    # Equal JSON values are duplicates whatever their key order; first one wins.
    assert run("States.ArrayUnique($.a)", {"a": [{"x": 1, "y": 2}, {"y": 2, "x": 1}, [1]]}) \
        == [{"x": 1, "y": 2}, [1]]


# ----------------------------------------------------------------------------- encoding


def test_base64_examples() -> None:
    # {"input": "Data to encode"} -> {"base64": "RGF0YSB0byBlbmNvZGU="}
    assert run("States.Base64Encode($.input)", {"input": "Data to encode"}) == \
        "RGF0YSB0byBlbmNvZGU="
    # The guide shows "Decoded data" as the decoding of "RGF0YSB0byBlbmNvZGU=", but that
    # string is its own encoding of "Data to encode" (base64 -d agrees).
    assert run("States.Base64Decode($.base64)", {"base64": "RGF0YSB0byBlbmNvZGU="}) == \
        "Data to encode"


def test_base64_input_limit_is_10000_characters() -> None:
    # "takes a data string of up to 10,000 characters"
    assert run("States.Base64Encode($.s)", {"s": "a" * 10_000}).startswith("YWFh")
    assert "10001 characters" in fails("States.Base64Encode($.s)", {"s": "a" * 10_001})
    assert "10001 characters" in fails("States.Base64Decode($.s)", {"s": "A" * 10_001})
    assert "Base64" in fails("States.Base64Decode('not base64!')")


def test_hash_example_and_algorithms() -> None:
    data = {"Data": "input data", "Algorithm": "SHA-1"}
    # The guide prints "aaff4a450a104cd177d28d18d7485e8cae074b7", 39 hex digits: one is
    # missing. `printf 'input data' | sha1sum` gives the 40-digit value below.
    assert run("States.Hash($.Data, $.Algorithm)", data) == \
        "aaff4a450a104cd177d28d18d74485e8cae074b7"
    # md5sum / sha256sum of the same text.
    assert run("States.Hash($.Data, 'MD5')", data) == "812f45842bc6d66ee14572ce20db8e86"
    assert run("States.Hash($.Data, 'SHA-256')", data) == \
        "b4a697a057313163aee33cd8d40c66e9f0f177e00cac2de32475ffff6169c3e3"
    assert len(run("States.Hash($.Data, 'SHA-384')", data)) == 96
    assert len(run("States.Hash($.Data, 'SHA-512')", data)) == 128
    assert "must be one of" in fails("States.Hash($.Data, $.Bad)", {**data, "Bad": "SHA-3"})
    assert "10001 characters" in fails("States.Hash($.s, 'MD5')", {"s": "x" * 10_001})


# ----------------------------------------------------------------------------- math/string


def test_math_add_example() -> None:
    # {"value1": 111, "step": -1} -> {"value1": 110}
    assert run("States.MathAdd($.value1, $.step)", {"value1": 111, "step": -1}) == 110
    # Non-integers are rounded to the nearest integer: 1.5 -> 2, 2.4 -> 2.
    assert run("States.MathAdd(1.5, 2.4)") == 4
    assert "integer" in fails("States.MathAdd($.s, 2)", {"s": "1"})
    assert "outside" in fails("States.MathAdd(2147483648, 0)")


def test_math_random_range_and_seed() -> None:
    # "to generate a random number from between one and 999"
    for _ in range(50):
        assert 1 <= run("States.MathRandom($.start, $.end)", {"start": 1, "end": 999}) <= 999
    # "If you use this function with the same seed value, it returns an identical number."
    first = run("States.MathRandom(1, 1000000, 7)")
    assert all(run("States.MathRandom(1, 1000000, 7)") == first for _ in range(5))
    assert run("States.MathRandom(4, 4)") == 4
    assert "greater than" in fails("States.MathRandom(5, 1)")


def test_string_split_examples() -> None:
    # {"inputString": "1,2,3,4,5", "splitter": ","} -> ["1","2","3","4","5"]
    assert run("States.StringSplit($.inputString, $.splitter)",
               {"inputString": "1,2,3,4,5", "splitter": ","}) == ["1", "2", "3", "4", "5"]
    # "This.is+a,test=string" with ".+,=" -> ["This","is","a","test","string"]
    assert run("States.StringSplit($.s, $.d)", {"s": "This.is+a,test=string", "d": ".+,="}) \
        == ["This", "is", "a", "test", "string"]
    assert "must be a string" in fails("States.StringSplit($.n, ',')", {"n": 1})


def test_uuid_is_a_random_version_4_uuid() -> None:
    first, second = run("States.UUID()"), run("States.UUID()")
    assert uuid.UUID(first).version == 4
    assert first != second


# ----------------------------------------------------------------------------- nesting


def test_nested_calls_from_the_guide() -> None:
    data = {"ImageRecipe": {"Arn": "arn:aws:imagebuilder:us-east-1:123:image-recipe/"
                                   "my-recipe/1.2.3"}}
    # The guide's nine-function example with its Format string fixed to two {}:
    # split on "/" -> ["arn:aws:imagebuilder:us-east-1:123:image-recipe", "my-recipe",
    # "1.2.3"]; item 2 is "1.2.3"; split on "." -> ["1", "2", "3"]; items 0 and 1.
    text = ("States.Format('{}.{}', States.ArrayGetItem(States.StringSplit("
            "States.ArrayGetItem(States.StringSplit($.ImageRecipe.Arn, '/'), 2), '.'), 0), "
            "States.ArrayGetItem(States.StringSplit(States.ArrayGetItem("
            "States.StringSplit($.ImageRecipe.Arn, '/'), 2), '.'), 1))")
    assert run(text, data) == "1.2"


def test_missing_path_argument_raises_path_not_found() -> None:
    with pytest.raises(PathNotFound):
        run("States.Array($.missing)", {"a": 1})


def test_workflow_variables_as_arguments() -> None:
    # Variables are read as "$name" in JSONPath states (the fixture's
    # "States.Format('{}{}', $.field1, $field2)").
    check("States.Format('{}{}', $.field1, $field2)")
    assert evaluate("States.Format('{}{}', $.field1, $field2.x)", {"field1": "a"}, CONTEXT,
                    {"field2": {"x": "b"}}) == "ab"
    with pytest.raises(PathNotFound):
        evaluate("States.Array($undefined)", {}, CONTEXT, {})


def test_format_and_array_functions_take_values_deeper_than_the_python_stack() -> None:
    # Issue 18: States.Format's printer and the equality key of ArrayUnique/ArrayContains
    # recursed per level; any depth json reads works now (a value built here needs no
    # parser; the keys are JSON text, so their json.dumps needs a 3.13-deep encoder).
    depth = 3_000
    deep = nested(depth, leaf=2.0)  # an array outermost
    printed = run("States.Format('v={}', $.d)", {"d": deep})
    assert printed == "v=" + "[{a=" * (depth // 2) + "2.0" + "}]" * (depth // 2)
    if json_reads(depth):
        same = nested(depth, leaf=2)  # 2.0 and 2 are one JSON number
        assert run("States.ArrayContains($.a, $.v)", {"a": [1, same], "v": deep}) is True
        assert len(run("States.ArrayUnique($.a)", {"a": [deep, same, 1]})) == 2
