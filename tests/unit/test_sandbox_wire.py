"""The sandbox wire format: values survive both directions exactly, long strings travel
beside the head, a function's own objects are never changed, and a reply's bytes -- which
untrusted code writes -- are refused when malformed rather than trusted."""

from __future__ import annotations

import decimal
import json
import marshal
import struct

import pytest

from deep_json import chain_equal, needs_json_depth, nested
from faastlane.runtime.asl.jsonvalue import NotJSONSerializable
from faastlane.runtime.sandbox import wire

LONG = "x" * (wire.LIFT_MARSHAL + 1)
ACCENTED = "é€😀" * 400  # non-ASCII, past LIFT_JSON
SURROGATE = "\ud800" * 600  # a lone surrogate: JSON escapes it, a lifted string keeps it

VALUES = [
    None, 1, 2.5, "short", LONG, [LONG, "a", {"b": LONG}],
    {"image": LONG, "meta": {"size": 3, "name": ACCENTED}, "list": [1, ACCENTED, [SURROGATE]]},
    {"rows": [{"id": i, "text": ACCENTED} for i in range(300)]},  # past the look-up budget
]


def _reply_round_trip(value):
    return wire.decode_reply(b"".join(wire.encode_reply(
        {"value": wire.encode_value(value), "trace": []})))


def _request_round_trip(request):
    return wire.decode_request(b"".join(wire.encode_request(request)))


@pytest.mark.parametrize("value", VALUES)
def test_values_survive_both_directions(value):
    assert _reply_round_trip(value) == {"value": value, "trace": []}
    request = {"state": "S", "event": value, "timeout": 3.0, "env": {"A": "1"}}
    assert _request_round_trip(request) == request


def test_long_strings_travel_beside_the_head():
    encoded = wire.encode_value({"image": LONG, "name": ACCENTED, "small": "tiny"})
    assert [path for path, _ in encoded.blobs] == [["image"], ["name"]]
    assert LONG.encode() not in encoded.text and b"tiny" in encoded.text
    parts = wire.encode_request({"event": {"image": LONG, "small": "tiny"}})
    assert parts[-1] == LONG.encode()  # the raw bytes are the last part, not marshalled


def test_json_rules_as_lambda():
    value = {"t": (1, 2), 3: "three", "d": decimal.Decimal("2.50"), "i": decimal.Decimal(4)}
    assert _reply_round_trip(value)["value"] == {"t": [1, 2], "3": "three", "d": 2.5, "i": 4}
    with pytest.raises(NotJSONSerializable) as refused:
        wire.encode_value({"ok": [1, {"bad": object()}]})
    assert refused.value.where == "$.ok[1].bad"


def test_the_functions_own_objects_are_not_changed():
    inner = {"image": LONG}
    value = {"inner": inner, "list": [LONG]}
    wire.encode_value(value)
    wire.encode_request({"event": value})
    assert value == {"inner": {"image": LONG}, "list": [LONG]} and value["inner"] is inner


def _frame(head: dict, *blobs: bytes) -> bytes:
    text = json.dumps(head).encode()
    return struct.pack("!I", len(text)) + text + b"".join(blobs)


@pytest.mark.parametrize("frame", [
    b"\x00\x00",  # shorter than its header
    _frame([1, 2]),  # a head that is not an object
    _frame({"value": {"a": None}, "blobs": [[["a"], 10]]}, b"short"),  # past the frame
    _frame({"value": {"a": None}, "blobs": [[["b"], 1]]}, b"x"),  # a path to nothing
    _frame({"value": [None], "blobs": [[[5], 1]]}, b"x"),  # an index out of range
    _frame({"value": [None], "blobs": [[["0"], 1]]}, b"x"),  # a key into a list
    _frame({"value": {"a": None}, "blobs": [["a", 1]]}, b"x"),  # a path not a list
    _frame({"value": {"a": None}, "blobs": [[["a"], -1]]}),  # a negative size
    _frame({"value": None, "blobs": [[[], 2]]}, b"\xff\xfe"),  # not UTF-8
    b"\x00\x00\x00\x03{x}",  # not JSON
])
def test_malformed_replies_are_refused(frame):
    with pytest.raises(ValueError):
        wire.decode_reply(frame)


def test_a_request_nested_past_marshals_limit_goes_as_json():
    # marshal refuses 2,000 levels ("object too deeply nested to marshal"); a Task's
    # event may be as deep as json reads (issue 18).
    needs_json_depth(4_000)
    event = {"deep": nested(4_000), "image": LONG}
    with pytest.raises(ValueError, match="too deeply nested"):
        marshal.dumps(event)
    request = {"state": "S", "event": event, "timeout": 3.0}
    decoded = _request_round_trip(request)
    assert decoded["event"]["image"] == LONG  # still lifted beside the head
    assert chain_equal(decoded["event"]["deep"], event["deep"], 4_000)
    reply = _reply_round_trip(event)["value"]
    assert chain_equal(reply["deep"], event["deep"], 4_000)
