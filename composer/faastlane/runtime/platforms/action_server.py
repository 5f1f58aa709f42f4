"""An OpenWhisk action container: the ``/init`` and ``/run`` protocol on port 8080.

This is what the Faastlane runtime image runs (``wsk action create NAME --docker IMAGE``
points OpenWhisk at it). It follows the Go "action loop" proxy that OpenWhisk's own
Python runtimes use (apache/openwhisk-runtime-go, ``openwhisk/initHandler.go`` and
``runHandler.go``), status codes and messages included:

``POST /init`` ``{"value": {"main", "code", "binary", "env"}}``
    once: a base64 zip (``binary``) or plain Python source; the action is extracted, the
    ``env`` values exported, and a child process (``action_launcher.py``) imports it and
    stays warm. ``{"ok": true}``; a second init is ``403 Cannot initialize the action more
    than once.``; no code ``403``; bad JSON or base64 ``400``; an action that does not load
    ``502``.
``POST /run`` ``{"value": ..., "activation_id", "action_name", "namespace", "deadline",
"api_key", ...}``
    every key but ``value`` reaches the action as ``__OW_<KEY>``; the result (a JSON
    object; ``{"error": ...}`` for an application error) is the response body. Before
    init ``500 no action defined yet``; a child that died ``500``/``400 command exited``.

After each activation the sentinel ``XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX`` is written on
standard output and standard error, which is how the invoker cuts an activation's logs.
Activations are serialised (one child, one pipe, as in the action loop): concurrent
requests queue and each gets its own result.

Standard library only: this file (with ``action_launcher.py``) is copied into the image.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO, Any

try:
    from ..engine.fault_reports import new_log, read_fault
except ImportError:  # run as a script: the runtime image holds fault_reports.py beside it
    from fault_reports import new_log, read_fault  # type: ignore[no-redef, import-not-found]

SENTINEL = "XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX"
ENTRY_FILE = "__main__.py"
LAUNCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "action_launcher.py")


class ProtocolError(Exception):
    """A request the proxy answers with ``{"error": message}`` and an HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def write_sentinels() -> None:
    """Mark the end of an activation's logs on both streams, as the invoker expects."""
    for stream in (sys.stdout, sys.stderr):
        stream.write(SENTINEL + "\n")
        stream.flush()


def extract_action(code: str, binary: bool, target: str) -> None:
    """Unpack init's ``code`` into ``target``: a base64 zip, or the source of __main__.py."""
    os.makedirs(target)
    if not binary:
        with open(os.path.join(target, ENTRY_FILE), "w", encoding="utf-8") as handle:
            handle.write(code)
        return
    try:
        data = base64.b64decode(code, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ProtocolError(HTTPStatus.BAD_REQUEST, f"cannot decode the request: {exc}") from None
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            _check_members(archive)
            archive.extractall(target)
    except zipfile.BadZipFile as exc:
        raise ProtocolError(HTTPStatus.BAD_GATEWAY, f"invalid action: {exc}") from None
    if not os.path.isfile(os.path.join(target, ENTRY_FILE)):
        raise ProtocolError(HTTPStatus.BAD_GATEWAY, f"Zip file does not include {ENTRY_FILE}")


def _check_members(archive: zipfile.ZipFile) -> None:
    for name in archive.namelist():
        if name.startswith("/") or ".." in name.split("/"):
            raise ProtocolError(HTTPStatus.BAD_GATEWAY,
                                f"invalid action: zip member {name!r} leaves the action folder")


class Launcher:
    """The warm child process running one action (see ``action_launcher.py``)."""

    def __init__(self, action_dir: str, main: str, env: dict[str, str],
                 command: Sequence[str] = (sys.executable, LAUNCHER)) -> None:
        """``command`` starts the child (``faastlane serve`` starts its own, which
        speaks the same protocol)."""
        read_fd, write_fd = os.pipe()
        # Where the child reports protection-key faults (isolation mpk), so that an
        # activation it dies of can name the functions (fault_reports.py).
        self.fault_log = new_log()
        try:
            self.process = subprocess.Popen(
                [*command, action_dir, "--main", main, "--result-fd", str(write_fd)],
                stdin=subprocess.PIPE, pass_fds=(write_fd, self.fault_log),
                env={**os.environ, **env, "FAASTLANE_FAULT_LOG": str(self.fault_log)},
                cwd=action_dir)
        finally:
            os.close(write_fd)
        assert self.process.stdin is not None
        self.requests: IO[bytes] = self.process.stdin
        self.results = os.fdopen(read_fd, "rb")
        if self._answer() is None:  # the ack: the action imported and found its main
            self.process.wait()
            raise ProtocolError(HTTPStatus.BAD_GATEWAY,
                                "cannot start action: Command exited abruptly during "
                                "initialization.")

    def exited(self) -> bool:
        return self.process.poll() is not None

    def _answer(self) -> bytes | None:
        line = self.results.readline()
        return line if line.endswith(b"\n") else None

    def interact(self, request: bytes) -> bytes | None:
        """Send one request line; the result line, or None if the child died."""
        try:
            self.requests.write(request.replace(b"\n", b"") + b"\n")
            self.requests.flush()
        except BrokenPipeError:
            return None
        return self._answer()

    def fault(self) -> str | None:
        """The isolation violation the child died of, as ``Error: Cause``, if any."""
        text = os.pread(self.fault_log, 1 << 20, 0).decode(errors="replace")
        if "faastlane-fault:" not in text:
            return None
        found = read_fault(self.fault_log)
        return None if found is None else ": ".join(found.error())

    def stop(self) -> None:
        if not self.exited():
            self.process.kill()
        self.process.wait()
        self.results.close()
        os.close(self.fault_log)


class ActionProxy:
    """The state of one action container: initialised at most once, then warm."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.launcher: Launcher | None = None
        self.initialized = False
        # One child and one pipe: activations take turns (OpenWhisk sends one at a time
        # to a Python container; anything concurrent waits rather than interleaving).
        self.lock = threading.Lock()

    def init(self, body: bytes) -> dict[str, Any]:
        with self.lock:
            if self.initialized:
                raise ProtocolError(HTTPStatus.FORBIDDEN,
                                    "Cannot initialize the action more than once.")
            value = _decode(body).get("value") or {}
            if not isinstance(value, dict):
                raise ProtocolError(HTTPStatus.BAD_REQUEST,
                                    "Error unmarshaling request: value is not an object")
            code = value.get("code") or ""
            if not isinstance(code, str) or not code:
                raise ProtocolError(HTTPStatus.FORBIDDEN, "Missing main/no code to execute.")
            action_dir = tempfile.mkdtemp(prefix="action-", dir=self.root)
            target = os.path.join(action_dir, "src")
            try:
                extract_action(code, bool(value.get("binary")), target)
                self.launcher = Launcher(target, str(value.get("main") or "main"),
                                         _environment(value.get("env") or {}))
            except ProtocolError:
                shutil.rmtree(action_dir, ignore_errors=True)
                raise
            self.initialized = True
            return {"ok": True}

    def run(self, body: bytes) -> bytes:
        request = _decode(body)
        with self.lock:
            if self.launcher is None:
                raise ProtocolError(HTTPStatus.INTERNAL_SERVER_ERROR, "no action defined yet")
            if self.launcher.exited():
                raise ProtocolError(HTTPStatus.INTERNAL_SERVER_ERROR, "command exited")
            try:
                response = self.launcher.interact(json.dumps(request).encode())
            finally:
                write_sentinels()
            if response is None:
                self.launcher.process.wait()
                fault = self.launcher.fault()
                self.launcher.stop()
                self.launcher = None
                if fault is not None:  # the action's error; the container is retired
                    return json.dumps({"error": fault}).encode()
                raise ProtocolError(HTTPStatus.BAD_REQUEST, "command exited")
        if not isinstance(json.loads(response), (dict, list)):
            raise ProtocolError(HTTPStatus.BAD_GATEWAY,
                                "The action did not return a dictionary or array.")
        return response

    def stop(self) -> None:
        if self.launcher is not None:
            self.launcher.stop()


def _decode(body: bytes) -> dict[str, Any]:
    try:
        request = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(HTTPStatus.BAD_REQUEST, f"Error unmarshaling request: {exc}") from None
    if not isinstance(request, dict):
        raise ProtocolError(HTTPStatus.BAD_REQUEST,
                            "Error unmarshaling request: the body is not a JSON object")
    return request


def _environment(env: Any) -> dict[str, str]:
    """init's ``env``: strings as they are, anything else as JSON (as the Go proxy does)."""
    if not isinstance(env, dict):
        raise ProtocolError(HTTPStatus.BAD_REQUEST,
                            "Error unmarshaling request: env is not an object")
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in env.items()}


class _Handler(BaseHTTPRequestHandler):
    server: ActionServer
    protocol_version = "HTTP/1.1"  # keep-alive, as the invoker's HTTP client expects
    # Headers and body go out in separate writes: with Nagle's algorithm on, the body
    # waits for the client's delayed ACK (~40 ms per activation on a kept-alive socket).
    disable_nagle_algorithm = True

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        proxy = self.server.proxy
        try:
            if self.path == "/init":
                self._send(HTTPStatus.OK, json.dumps(proxy.init(body)).encode())
            elif self.path == "/run":
                self._send(HTTPStatus.OK, proxy.run(body))
            else:
                raise ProtocolError(HTTPStatus.NOT_FOUND, f"no such endpoint: {self.path}")
        except ProtocolError as err:
            self._send(err.status, json.dumps({"error": err.message}).encode())

    def do_GET(self) -> None:  # noqa: N802
        self._send(HTTPStatus.METHOD_NOT_ALLOWED,
                   json.dumps({"error": "use POST /init and POST /run"}).encode())

    def _send(self, status: int, body: bytes) -> None:
        if not body.endswith(b"\n"):
            body += b"\n"
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the container's stdout and stderr are the action's logs."""


class ActionServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], proxy: ActionProxy) -> None:
        super().__init__(address, _Handler)
        self.proxy = proxy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="OpenWhisk action container for Faastlane.")
    parser.add_argument("--host", default=os.environ.get("FAASTLANE_ACTION_HOST", "0.0.0.0"),
                        help="address to listen on (default 0.0.0.0, as OpenWhisk expects)")
    parser.add_argument("--port", type=int,
                        default=int(os.environ.get("FAASTLANE_ACTION_PORT", "8080")))
    parser.add_argument("--root", default=os.environ.get("FAASTLANE_ACTION_ROOT"),
                        help="where actions are extracted (default: a temporary folder)")
    args = parser.parse_args(argv)
    root = args.root or tempfile.mkdtemp(prefix="faastlane-action-")
    os.makedirs(root, exist_ok=True)
    proxy = ActionProxy(root)
    server = ActionServer((args.host, args.port), proxy)
    sys.stderr.write(f"faastlane action server listening on {args.host}:{server.server_port}\n")
    sys.stderr.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        proxy.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
