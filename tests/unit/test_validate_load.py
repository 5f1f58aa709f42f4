"""load_definition: strict JSON with pointers for duplicate keys, positions for syntax."""

from __future__ import annotations

import pytest

from faastlane.validation import Problem, load_definition


def test_valid_json_is_returned_as_plain_data() -> None:
    text = '{"StartAt": "A", "States": {"A": {"Type": "Succeed", "x": [1, {"y": null}]}}}'
    definition, problems = load_definition(text)
    assert problems == []
    assert definition == {
        "StartAt": "A",
        "States": {"A": {"Type": "Succeed", "x": [1, {"y": None}]}},
    }
    assert type(definition) is dict and type(definition["States"]["A"]["x"][1]) is dict


def test_syntax_error_has_root_pointer_line_and_column() -> None:
    # A missing ':' (json reports a trailing comma at different columns in 3.11 and 3.13).
    text = '{\n  "StartAt": "A",\n  "States": {\n    "A" {"Type": "Succeed"}\n  }\n}'
    definition, problems = load_definition(text)
    assert definition is None
    assert len(problems) == 1
    assert problems[0].pointer == ""
    assert "line 4, column 9" in problems[0].message


def test_empty_text_is_a_syntax_error() -> None:
    definition, problems = load_definition("")
    assert definition is None and [p.pointer for p in problems] == [""]
    assert "line 1, column 1" in problems[0].message


def test_duplicate_keys_are_reported_at_every_depth() -> None:
    text = """{
      "StartAt": "A",
      "States": {
        "A": {"Type": "Pass", "Next": "B", "Next": "C", "Parameters": {"k": [{"z": 1, "z": 2}]}},
        "B": {"Type": "Succeed"},
        "A": {"Type": "Fail"}
      },
      "StartAt": "B"
    }"""
    definition, problems = load_definition(text)
    assert [p.pointer for p in problems] == ["/StartAt", "/States/A"]
    # the duplicate inside the first "A" is lost with it: the last value wins, as in JSON
    assert definition["States"]["A"] == {"Type": "Fail"}
    assert all("duplicate key" in p.message for p in problems)


def test_duplicate_key_inside_arrays_uses_the_index() -> None:
    _, problems = load_definition('{"a": [0, {"b~/c": 1, "b~/c": 2}]}')
    assert problems == [
        Problem("/a/1/b~0~1c", "duplicate key 'b~/c': JSON object keys must be unique")
    ]


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_standard_constants_are_rejected(constant: str) -> None:
    _, problems = load_definition(f'{{"TimeoutSeconds": {constant}}}')
    assert [p.pointer for p in problems] == [""]
    assert constant.lstrip("-") in problems[0].message
