"""Reading template files: CloudFormation's YAML short tags as their long (JSON) form,
the line of every node, and syntax errors at their line."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from faastlane.app.project.documents import DocumentError, parse


def test_every_short_tag_becomes_the_long_form_json_templates_use() -> None:
    doc = parse("""
A: !Ref Param
B: !GetAtt Fn.Arn
C: !GetAtt [Fn, Arn]
D: !Sub "arn:${AWS::Partition}:x"
E: !Sub ["${A}-b", {A: a}]
F: !Join [",", [a, b]]
G: !Select [0, !Split [",", "a,b"]]
H: !If [IsProd, x, y]
I: !Equals [a, b]
J: !And [!Condition C1, !Not [!Condition C2]]
K: !Or [!Condition C1, !Condition C2]
L: !FindInMap [M, k1, k2]
N: !Base64 text
O: !GetAZs ""
""").data
    assert doc == {
        "A": {"Ref": "Param"},
        "B": {"Fn::GetAtt": ["Fn", "Arn"]},
        "C": {"Fn::GetAtt": ["Fn", "Arn"]},
        "D": {"Fn::Sub": "arn:${AWS::Partition}:x"},
        "E": {"Fn::Sub": ["${A}-b", {"A": "a"}]},
        "F": {"Fn::Join": [",", ["a", "b"]]},
        "G": {"Fn::Select": [0, {"Fn::Split": [",", "a,b"]}]},
        "H": {"Fn::If": ["IsProd", "x", "y"]},
        "I": {"Fn::Equals": ["a", "b"]},
        "J": {"Fn::And": [{"Condition": "C1"}, {"Fn::Not": [{"Condition": "C2"}]}]},
        "K": {"Fn::Or": [{"Condition": "C1"}, {"Condition": "C2"}]},
        "L": {"Fn::FindInMap": ["M", "k1", "k2"]},
        "N": {"Fn::Base64": "text"},
        "O": {"Fn::GetAZs": ""},
    }


def test_each_node_has_its_line_and_unknown_pointers_take_their_parents() -> None:
    doc = parse("Resources:\n  Fn:\n    Type: T\n    Properties:\n      Handler: app.h\n")
    assert doc.lines["/Resources/Fn"] == 2
    assert doc.line("/Resources/Fn/Properties/Handler") == 5
    assert doc.line("/Resources/Fn/Properties/Missing/Deeper") == 4


def test_a_json_template_is_read_exactly_and_with_lines() -> None:
    doc = parse('{\n  "A": 1.0,\n  "B": {"Fn::Sub": "x"},\n  "C": "on"\n}', json_only=True)
    assert doc.data == {"A": 1.0, "B": {"Fn::Sub": "x"}, "C": "on"}
    assert doc.line("/B/Fn::Sub") == 3


def test_repeated_keys_are_recorded() -> None:
    assert parse("A: 1\nB: 2\nA: 3\n").duplicates == ["/A"]


@pytest.mark.parametrize("text, line, words", [
    ("A:\n  B: !Reff X\n", 2, "unknown tag !Reff"),
    ("A: [1, 2\nB: 3\n", 2, "invalid YAML"),
])
def test_syntax_errors_have_their_line(text: str, line: int, words: str) -> None:
    with pytest.raises(DocumentError) as raised:
        parse(text)
    assert raised.value.line == line and words in str(raised.value)


def test_invalid_json_has_its_line() -> None:
    with pytest.raises(DocumentError) as raised:
        parse('{\n  "A": 1\n  "B": 2\n}', json_only=True)  # (a trailing comma is
        # placed differently by 3.11's and 3.13's parsers)
    assert raised.value.line == 3 and "invalid JSON" in str(raised.value)


def test_dates_stay_the_text_written_so_the_definition_is_json() -> None:
    assert parse("A: 2024-01-31\nB: 2024-01-31T12:00:00Z\n").data == {
        "A": "2024-01-31", "B": "2024-01-31T12:00:00Z"}


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8),
              st.floats(allow_nan=False, allow_infinity=False)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=10)


@settings(deadline=None)  # a loaded shared machine is slow, not wrong
@given(json_values)
def test_any_json_value_reads_back_the_same_from_yaml_and_from_json(value: object) -> None:
    assert parse(yaml.safe_dump(value)).data == value
    assert parse(json.dumps(value), json_only=True).data == value
