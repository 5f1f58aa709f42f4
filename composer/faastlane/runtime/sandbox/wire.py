"""How the Orchestrator and a sandbox talk: length-prefixed frames on a Unix socket.

A request travels as ``marshal`` (the sandbox trusts the Orchestrator; marshal of JSON
values is several times faster than ``json``); a reply as JSON, because it comes from
untrusted code and ``marshal.loads`` is not meant for hostile bytes. Each payload is
serialised once and crosses the socket once.

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
from typing import Any

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


def send(sock: socket.socket, payload: bytes) -> None:
    header = _HEADER.pack(len(payload))
    if len(payload) < 65536:  # one system call; a large payload is not copied again
        sock.sendall(header + payload)
    else:
        sock.sendall(header)
        sock.sendall(payload)


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


def encode_request(request: dict[str, Any]) -> bytes:
    return marshal.dumps(request)


def decode_request(data: bytes | bytearray) -> dict[str, Any]:
    return marshal.loads(data)


def encode_reply(reply: dict[str, Any]) -> bytes:
    return json.dumps(reply, separators=(",", ":"), ensure_ascii=False).encode()


def decode_reply(data: bytes | bytearray) -> dict[str, Any]:
    reply = json.loads(data)
    if not isinstance(reply, dict):
        raise ValueError("a sandbox reply is a JSON object")
    return reply


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

