"""How the Orchestrator and a sandbox talk: length-prefixed frames on a Unix socket.

A request travels as ``marshal`` (the sandbox trusts the Orchestrator; marshal of JSON
values is several times faster than ``json``), or as JSON when nested too deeply for it;
a reply as JSON, because it comes from untrusted code and ``marshal.loads`` is not meant
for hostile bytes. Long strings (an image in base64, a document) travel beside either as
raw UTF-8 (see "Frames" below).
Each payload is serialised once and crosses the socket once.

Sockets live in the abstract namespace (no file a sandbox could unlink and re-bind) and
every listener checks who connected (:func:`peer_allowed`): a sandbox and every process
it starts carry one seccomp filter more than the Orchestrator (filters are inherited
and cannot be removed), so a function cannot call another function's sandbox or the
zygote, even from a process it re-parented away.
"""

from __future__ import annotations

import json
import marshal
import selectors
import socket
import struct
from collections.abc import Callable
from typing import Any, NamedTuple

from ..asl.jsonvalue import detach, lambda_default

_HEADER = struct.Struct("!I")
MAX_FRAME = 1 << 30  # a payload larger than this is refused (Lambda's limit is 6 MB)
SO_PEERCRED = getattr(socket, "SO_PEERCRED", 17)


class PeerGone(ConnectionError):
    """The other end closed the connection (or died) before a whole frame arrived."""


def address(prefix: str, name: str) -> str:
    """The abstract socket address of ``name`` (a leading NUL: not in the filesystem)."""
    return f"\0{prefix}/{name}"


def listener(addr: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(addr)
    sock.listen(128)
    return sock


def send(sock: socket.socket, payload: bytes | list[bytes]) -> None:
    """One frame: ``payload``, or the concatenation of its parts (written from where
    they are, never joined into one copy)."""
    parts = [payload] if isinstance(payload, (bytes, bytearray)) else payload
    size = sum(len(p) for p in parts)
    if size < 65536:  # one copy into one buffer is cheaper than a scatter list
        sock.sendall(b"".join((_HEADER.pack(size), *parts)))
        return
    views = [memoryview(_HEADER.pack(size))]
    views += [memoryview(p) for p in parts if len(p)]
    while views:
        sent = sock.sendmsg(views)
        while views and sent >= len(views[0]):
            sent -= len(views[0])
            views.pop(0)
        if sent:
            views[0] = views[0][sent:]


def receive(sock: socket.socket) -> bytes | bytearray:
    size = _HEADER.unpack(_exactly(sock, _HEADER.size))[0]
    if size > MAX_FRAME:
        raise PeerGone(f"frame of {size} bytes refused")
    return _exactly(sock, size)


def _exactly(sock: socket.socket, size: int) -> bytearray:
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        count = sock.recv_into(view[got:], size - got)
        if count == 0:
            raise PeerGone("connection closed")
        got += count
    return buffer


# Frames of both directions:  head length (_HEADER) | head | lifted strings
# A request's head is marshal, a reply's JSON; it holds the request's "event" or the
# reply's "value". Long strings reached in the first LIFT_BUDGET elements of that value
# travel after the head as raw UTF-8 ("surrogatepass": any str survives, as through
# JSON's escapes): encoding and decoding them is a copy, where marshal copies several
# times and JSON scans and escapes every character. The head says where they go
# ("blobs": [[path, bytes], ...], a path being keys and indices; the value holds null
# there).

# Shorter strings stay in place: lifting one costs a few microseconds, which JSON spends
# on about half a kilobyte of text and marshal (a copy or three) on tens of kilobytes.
LIFT_JSON = 512
LIFT_MARSHAL = 64 * 1024
LIFT_BUDGET = 256  # container elements looked at: the search costs microseconds at most
_ENCODER = json.JSONEncoder(separators=(",", ":"), default=lambda_default)
Blobs = list[tuple[list[str | int], bytes]]


class Encoded(NamedTuple):
    """A function's result as it travels: its JSON and its lifted strings."""

    text: bytes
    blobs: Blobs


def encode_request(request: dict[str, Any]) -> list[bytes]:
    """A request frame's parts: marshal, its ``event`` lifted."""
    head = dict(request)
    blobs: Blobs = []
    if "event" in head:
        head["event"] = _lift(head["event"], [], blobs, [LIFT_BUDGET], LIFT_MARSHAL)
        if blobs:
            head["blobs"] = _sizes(blobs)
    try:
        encoded = marshal.dumps(head)
    except ValueError:  # nested past marshal's 2,000 levels: JSON goes as deep as json reads
        encoded = _JSON_HEAD + _ENCODER.encode(head).encode("ascii")
    return _frame(encoded, blobs)


# What starts a request head in JSON: no marshal type code (a marshal head, a dict,
# starts with "{" or "{" | FLAG_REF).
_JSON_HEAD = b"J"


def _request_head(view: memoryview) -> Any:
    if view[:1] == _JSON_HEAD:
        return json.loads(str(view[1:], "utf-8"))
    return marshal.loads(view)


def decode_request(data: bytes | bytearray) -> dict[str, Any]:
    return _unframe(data, "event", _request_head)


def encode_value(value: Any) -> Encoded:
    """A function's result as JSON and lifted strings, encoded once, in the sandbox, as
    the function returns (LoadedFunction's ``finish``); NotJSONSerializable (saying
    where, as :func:`~faastlane.runtime.asl.jsonvalue.detach` does) for a value Lambda
    could not return either. The function's own objects are never changed: containers
    on the way to a lifted string are copied."""
    blobs: Blobs = []
    try:
        text = _ENCODER.encode(_lift(value, [], blobs, [LIFT_BUDGET], LIFT_JSON)
                               ).encode("ascii")
    except (TypeError, ValueError):
        detach(value)  # raises NotJSONSerializable with the path (or RecursionError)
        raise
    return Encoded(text, blobs)


def encode_reply(reply: dict[str, Any]) -> list[bytes]:
    """A reply frame's parts; ``reply["value"]``, if there, is :class:`Encoded` (its
    JSON is spliced into the head's, not decoded and encoded again)."""
    meta = dict(reply)
    value: Encoded | None = meta.pop("value", None)
    if value is None:
        return _frame(_ENCODER.encode(meta).encode("ascii"), [])
    if value.blobs:
        meta["blobs"] = _sizes(value.blobs)
    rest = _ENCODER.encode(meta).encode("ascii")
    head = b'{"value":' + value.text + (b"}" if rest == b"{}" else b"," + rest[1:])
    return _frame(head, value.blobs)


def decode_reply(data: bytes | bytearray) -> dict[str, Any]:
    """A reply: ``{"value": ...}`` or ``{"error", "cause"}``, with ``trace``. ValueError
    for anything malformed (a sandbox's bytes are untrusted: only the JSON and UTF-8
    decoders read them)."""
    return _unframe(data, "value", lambda text: json.loads(str(text, "utf-8")))


def _sizes(blobs: Blobs) -> list[list[Any]]:
    return [[path, len(blob)] for path, blob in blobs]


def _frame(head: bytes, blobs: Blobs) -> list[bytes]:
    return [_HEADER.pack(len(head)), head, *(blob for _path, blob in blobs)]


def _unframe(data: bytes | bytearray, field: str,
             loads: Callable[[memoryview], Any]) -> dict[str, Any]:
    view = memoryview(data)
    if len(view) < _HEADER.size:
        raise ValueError("a frame too short for its header")
    at = _HEADER.size + _HEADER.unpack(view[:_HEADER.size])[0]
    head = loads(view[_HEADER.size:at])
    if not isinstance(head, dict):
        raise ValueError("a frame's head is not an object")
    blobs = head.pop("blobs", ())
    if field not in head:
        return head
    value = head[field]
    for path, size in blobs:
        if type(size) is not int or size < 0 or at + size > len(view):
            raise ValueError("a lifted string out of its frame")
        value = _place(value, path, str(view[at:at + size], "utf-8", "surrogatepass"))
        at += size
    head[field] = value
    return head


def _lift(value: Any, path: list[str | int], blobs: Blobs, budget: list[int],
          least: int) -> Any:
    """``value`` with its strings of ``least`` characters or more replaced by null and
    added to ``blobs``."""
    kind = type(value)
    if kind is str:
        if len(value) < least:
            return value
        blobs.append((path, value.encode("utf-8", "surrogatepass")))
        return None
    if kind is dict:
        items = value.items()
    elif kind is list or kind is tuple:
        items = enumerate(value)
    else:
        return value
    budget[0] -= len(value)
    if budget[0] < 0:  # too many elements to look at: they travel whole
        return value
    copy = None
    for key, item in items:
        if kind is dict and type(key) is not str:
            continue  # JSON renames the key: a path could not name it
        new = _lift(item, [*path, key], blobs, budget, least)
        if new is not item:
            if copy is None:
                copy = dict(value) if kind is dict else list(value)
            copy[key] = new
    return value if copy is None else copy


def _place(value: Any, path: Any, text: str) -> Any:
    """``value`` with ``text`` at ``path`` (whose place holds null)."""
    if not isinstance(path, list):
        raise ValueError("a lifted string's path is not a list")
    if not path:
        return text
    container = value
    for step in path[:-1]:
        container = _step(container, step)
    _step(container, path[-1])  # the place must exist
    container[path[-1]] = text
    return value


def _step(container: Any, step: Any) -> Any:
    if isinstance(container, dict) and isinstance(step, str) and step in container:
        return container[step]
    if isinstance(container, list) and type(step) is int and 0 <= step < len(container):
        return container[step]
    raise ValueError("a lifted string's path leads nowhere")


def seccomp_filters(pid: int | str = "self") -> int:
    """How many seccomp filters process ``pid`` runs under (``Seccomp_filters`` in its
    status, Linux 5.9+; before that, 1 for a filtered process: ``Seccomp: 2``)."""
    mode = 0
    with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
        for line in status:
            if line.startswith("Seccomp_filters:"):
                return int(line.split()[1])
            if line.startswith("Seccomp:"):
                mode = int(line.split()[1])
    return 1 if mode == 2 else 0


def peer_pid(sock: socket.socket) -> int:
    pid: int
    pid, _uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, SO_PEERCRED,
                                                          struct.calcsize("3i")))
    return pid


def peer_allowed(sock: socket.socket, trusted_filters: int) -> bool:
    """Whether the connected peer runs with no more seccomp filters than the
    Orchestrator did (``trusted_filters``): not a sandbox, nor anything one started."""
    try:
        return seccomp_filters(peer_pid(sock)) <= trusted_filters
    except (OSError, ValueError):
        return False  # gone already, or unreadable: refused


def admit(listener: socket.socket, selector: selectors.BaseSelector,
          trusted_filters: int) -> None:
    """Accept one connection on ``listener``: watched by ``selector`` if the peer is
    allowed (:func:`peer_allowed`), closed at once if not."""
    connection, _ = listener.accept()
    if peer_allowed(connection, trusted_filters):
        selector.register(connection, selectors.EVENT_READ)
    else:
        connection.close()


def close_quietly(sock: socket.socket | None) -> None:
    if sock is not None:
        try:
            sock.close()
        except OSError:
            pass

