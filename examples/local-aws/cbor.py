"""A small CBOR (RFC 8949) codec: what the Smithy RPC v2 CBOR protocol puts on the wire.

The Comprehend Medical stand-in answers both of the service's protocols, AWS JSON 1.1 and
RPC v2 CBOR. The standard library has no CBOR, so this module decodes every well-formed
data item (definite and indefinite lengths, half/single/double floats, tags, simple
values) and encodes the JSON-like values a response holds.
"""

from __future__ import annotations

import struct
from typing import Any


class CBORError(ValueError):
    """Malformed or truncated CBOR."""


_BREAK = object()  # the "break" stop code that ends an indefinite-length item


def decode(data: bytes) -> Any:
    """The single data item in ``data``."""
    try:
        value, end = _item(data, 0)
    except (IndexError, struct.error) as error:
        raise CBORError(f"truncated CBOR: {error}") from None
    if value is _BREAK:
        raise CBORError("unexpected break")
    if end != len(data):
        raise CBORError(f"{len(data) - end} bytes after the data item")
    return value


def _head(data: bytes, pos: int) -> tuple[int, int, int | None, int]:
    initial = data[pos]
    major, info = initial >> 5, initial & 0x1F
    pos += 1
    if info < 24:
        return major, info, info, pos
    if info <= 27:
        size = 1 << (info - 24)
        if pos + size > len(data):
            raise CBORError("truncated argument")
        return major, info, int.from_bytes(data[pos:pos + size], "big"), pos + size
    if info == 31 and major in (2, 3, 4, 5, 7):
        return major, info, None, pos  # indefinite length (or break, for major 7)
    raise CBORError(f"reserved additional information {info} (major type {major})")


def _item(data: bytes, pos: int) -> tuple[Any, int]:
    major, info, arg, pos = _head(data, pos)
    if major == 0:
        return arg, pos
    if major == 1:
        assert arg is not None
        return -1 - arg, pos
    if major in (2, 3):
        return _string(data, pos, major, arg)
    if major == 4:
        items: list[Any] = []
        while arg is None or len(items) < arg:
            value, pos = _item(data, pos)
            if value is _BREAK:
                if arg is None:
                    return items, pos
                raise CBORError("break inside a definite-length array")
            items.append(value)
        return items, pos
    if major == 5:
        mapping: dict[Any, Any] = {}
        while arg is None or len(mapping) < arg:
            key, pos = _item(data, pos)
            if key is _BREAK:
                if arg is None:
                    return mapping, pos
                raise CBORError("break inside a definite-length map")
            value, pos = _item(data, pos)
            if value is _BREAK:
                raise CBORError("map key without a value")
            mapping[key] = value
        return mapping, pos
    if major == 6:  # a tag (e.g. 1, epoch time): the tagged value is what matters here
        return _item(data, pos)
    return _simple(data, pos, info, arg)


def _string(data: bytes, pos: int, major: int, arg: int | None) -> tuple[Any, int]:
    if arg is None:  # indefinite: definite-length chunks of the same type, then break
        chunks: list[bytes] = []
        while data[pos] != 0xFF:
            chunk_major, _, size, pos = _head(data, pos)
            if chunk_major != major or size is None:
                raise CBORError("bad chunk in an indefinite-length string")
            chunks.append(data[pos:pos + size])
            pos += size
        raw, pos = b"".join(chunks), pos + 1
    else:
        if pos + arg > len(data):
            raise CBORError("truncated string")
        raw, pos = data[pos:pos + arg], pos + arg
    if major == 2:
        return raw, pos
    try:
        return raw.decode("utf-8"), pos
    except UnicodeDecodeError:
        raise CBORError("text string is not valid UTF-8") from None


def _simple(data: bytes, pos: int, info: int, arg: int | None) -> tuple[Any, int]:
    if info == 31:
        return _BREAK, pos
    if info == 25:
        return struct.unpack(">e", data[pos - 2:pos])[0], pos
    if info == 26:
        return struct.unpack(">f", data[pos - 4:pos])[0], pos
    if info == 27:
        return struct.unpack(">d", data[pos - 8:pos])[0], pos
    return {20: False, 21: True, 22: None, 23: None}.get(arg if arg is not None else -1), pos


def encode(value: Any) -> bytes:
    out = bytearray()
    _encode(value, out)
    return bytes(out)


def _encode_head(major: int, arg: int, out: bytearray) -> None:
    if arg < 24:
        out.append(major << 5 | arg)
        return
    for info, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if arg < 1 << (8 * size):
            out.append(major << 5 | info)
            out += arg.to_bytes(size, "big")
            return
    raise CBORError(f"integer too large for CBOR: {arg}")


def _encode(value: Any, out: bytearray) -> None:
    if value is None:
        out.append(0xF6)
    elif isinstance(value, bool):  # before int: bool is an int subclass
        out.append(0xF5 if value else 0xF4)
    elif isinstance(value, int):
        _encode_head(0, value, out) if value >= 0 else _encode_head(1, -1 - value, out)
    elif isinstance(value, float):
        out.append(0xFB)
        out += struct.pack(">d", value)
    elif isinstance(value, str):
        raw = value.encode("utf-8")
        _encode_head(3, len(raw), out)
        out += raw
    elif isinstance(value, (bytes, bytearray)):
        _encode_head(2, len(value), out)
        out += value
    elif isinstance(value, (list, tuple)):
        _encode_head(4, len(value), out)
        for item in value:
            _encode(item, out)
    elif isinstance(value, dict):
        _encode_head(5, len(value), out)
        for key, item in value.items():
            _encode(key, out)
            _encode(item, out)
    else:
        raise CBORError(f"cannot encode {type(value).__name__} as CBOR")
