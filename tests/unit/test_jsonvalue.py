"""Function results: checked as Lambda's JSON encoder would, and detached."""

import decimal

import pytest

from deep_json import nested
from faastlane.runtime.asl.jsonvalue import NotJSONSerializable, copy_event, detach


def test_containers_are_copied_and_strings_shared() -> None:
    blob = "x" * 1000
    value = {"a": [1, {"b": blob}], "c": None}
    copy = detach(value)
    assert copy == value
    assert copy is not value and copy["a"] is not value["a"]
    assert copy["a"][1]["b"] is blob


def test_tuples_decimals_and_key_types_follow_json_dumps() -> None:
    assert detach((1, 2)) == [1, 2]
    assert detach({1: "a", None: "b", 2.5: "d"}) == {"1": "a", "null": "b", "2.5": "d"}
    assert detach({True: "c", False: "e"}) == {"true": "c", "false": "e"}
    assert detach(decimal.Decimal("3")) == 3
    assert detach(decimal.Decimal("3.25")) == 3.25


def test_unserialisable_values_are_reported_with_their_place() -> None:
    with pytest.raises(NotJSONSerializable) as failure:
        detach({"rows": [1, {2, 3}]})
    assert failure.value.message == "Object of type set is not JSON serializable"
    assert failure.value.where == "$.rows[1]"


def test_a_bad_key_is_reported_at_the_object_holding_it() -> None:
    with pytest.raises(NotJSONSerializable) as failure:
        detach({"ok": [1, 2], "inner": {"fine": 1, (1, 2): "tuple key"}})
    assert failure.value.message == "Object of type tuple is not JSON serializable"
    assert failure.value.where == "$.inner"


def test_the_first_bad_value_in_visiting_order_is_the_one_reported() -> None:
    shared = (1, 2)  # valid as a value (a list), invalid as a key
    with pytest.raises(NotJSONSerializable) as failure:
        detach({"a": shared, "b": [{"c": object()}], "d": {2, 3}})
    assert failure.value.where == "$.b[0].c"
    assert failure.value.__context__ is None


def test_string_subclass_keys_and_values_are_kept() -> None:
    class Name(str):
        pass

    assert detach({Name("k"): Name("v")}) == {"k": "v"}


def test_copy_event_copies_containers_shares_leaves_and_falls_back_to_detach() -> None:
    text = "x" * 100
    event = {"a": [text, 1, 2.5, None, True, {"b": []}], "n": 10**30}
    copy = copy_event(event)
    assert copy == event and copy is not event
    assert copy["a"] is not event["a"] and copy["a"][5] is not event["a"][5]
    assert copy["a"][0] is text and copy["n"] is event["n"]
    # What JSON cannot hold as is goes through detach: its conversions and its errors.
    assert copy_event({"t": (1, 2), "d": decimal.Decimal("2.5")}) == {"t": [1, 2], "d": 2.5}
    with pytest.raises(NotJSONSerializable) as failure:
        copy_event({"ok": [1], "bad": {1, 2}})
    assert failure.value.where == "$.bad"


# Issue 18: a value nested past the Python stack (CPython 3.13's json reads ~10,000 levels
# of arrays or objects) is copied, not a RecursionError; the walks go on iteratively.
# Built in Python, these values need no parser: they run on every interpreter.

def _assert_copied_chain(copy: object, original: object, depth: int) -> None:
    """Level by level (``==`` on such values is itself limited by the C stack on 3.11):
    the same shape and leaf, every container a new one."""
    for _ in range(depth):
        assert type(copy) is type(original) and copy is not original
        assert len(copy) == len(original) == 1  # type: ignore[arg-type]
        step = "a" if isinstance(original, dict) else 0
        copy, original = copy[step], original[step]  # type: ignore[index]
    assert copy is original


@pytest.mark.parametrize("depth", [1_000, 4_000, 20_000])
def test_values_nested_past_the_python_stack_are_copied(depth: int) -> None:
    value = nested(depth)
    _assert_copied_chain(detach(value), value, depth)
    _assert_copied_chain(copy_event(value), value, depth)


def test_deep_values_keep_tuples_decimals_and_key_rules() -> None:
    value = nested(3_000, leaf=({1: decimal.Decimal("2.5")}, (True,)))
    copy = detach(value)
    for _ in range(3_000):
        copy = copy["a"] if isinstance(copy, dict) else copy[0]
    assert copy == [{"1": 2.5}, [True]]


def test_a_deep_unserialisable_value_is_reported_with_its_place() -> None:
    value = {"rows": nested(2_000, leaf={1, 2})}
    with pytest.raises(NotJSONSerializable) as failure:
        detach(value)
    assert failure.value.message == "Object of type set is not JSON serializable"
    assert failure.value.where == "$.rows" + "[0].a" * 1_000
    assert failure.value.__context__ is None


def test_a_value_holding_itself_is_refused_as_json_dumps_refuses_it() -> None:
    # json.dumps: "ValueError: Circular reference detected"; awslambdaric reports its
    # words as the MarshalError's message.
    loop: dict = {"ok": [1, 2]}
    loop["inner"] = [{"back": loop}]
    with pytest.raises(NotJSONSerializable) as failure:
        detach(loop)
    assert failure.value.message == "Circular reference detected"
    assert failure.value.where == "$.inner[0].back"
    with pytest.raises(ValueError, match=failure.value.message):
        import json
        json.dumps(loop)


def test_a_value_shared_twice_is_not_a_cycle() -> None:
    shared = nested(1_500)
    copy = detach({"x": shared, "y": [shared]})
    _assert_copied_chain(copy["x"], shared, 1_500)
    _assert_copied_chain(copy["y"][0], shared, 1_500)
    assert copy["x"] is not copy["y"][0]
