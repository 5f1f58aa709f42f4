"""A local AWS Lambda Runtime API endpoint, for running a packaged function as Lambda does.

Implements the documented Runtime API (version 2018-06-01) that a runtime client
(``awslambdaric``, or any custom ``bootstrap``) polls:

``GET  /2018-06-01/runtime/invocation/next``           the next event; headers
    ``Lambda-Runtime-Aws-Request-Id``, ``Lambda-Runtime-Deadline-Ms``,
    ``Lambda-Runtime-Invoked-Function-Arn``, ``Lambda-Runtime-Trace-Id``
``POST /2018-06-01/runtime/invocation/{id}/response``  the result -> 202
``POST /2018-06-01/runtime/invocation/{id}/error``     ``{errorMessage, errorType,
    stackTrace}`` and header ``Lambda-Runtime-Function-Error-Type`` -> 202
``POST /2018-06-01/runtime/init/error``                initialisation failed -> 202

:meth:`RuntimeApi.invoke` plays the Lambda service: queue an event, wait for its outcome.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PREFIX = "/2018-06-01/runtime"
FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:faastlane-test"


@dataclass
class Outcome:
    kind: str  # "response", "error" or "init-error"
    body: Any
    error_type_header: str | None = None


class RuntimeApi:
    def __init__(self) -> None:
        self.events: queue.Queue[tuple[str, bytes]] = queue.Queue()
        self.outcomes: dict[str, queue.Queue[Outcome]] = {}
        self.init_errors: queue.Queue[Outcome] = queue.Queue()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def address(self) -> str:
        """What AWS_LAMBDA_RUNTIME_API holds: host:port, no scheme."""
        return f"127.0.0.1:{self.server.server_port}"

    # Generous: the first invocation includes a cold start of the runtime on a busy CI host.
    def invoke(self, event: Any, timeout: float = 240) -> Outcome:
        request_id = str(uuid.uuid4())
        self.outcomes[request_id] = queue.Queue()
        self.events.put((request_id, json.dumps(event).encode()))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                return self.outcomes[request_id].get(timeout=0.1)
            except queue.Empty:
                if not self.init_errors.empty():
                    return self.init_errors.get()
        raise TimeoutError(f"no outcome for {request_id} within {timeout} s")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None
                       ) -> None:
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802
                if self.path != f"{PREFIX}/invocation/next":
                    self._reply(404, b'{"errorMessage": "not found"}')
                    return
                request_id, body = api.events.get()  # long poll, as the real API does
                self._reply(200, body, {
                    "Lambda-Runtime-Aws-Request-Id": request_id,
                    "Lambda-Runtime-Deadline-Ms": str(int(time.time() * 1000) + 300_000),
                    "Lambda-Runtime-Invoked-Function-Arn": FUNCTION_ARN,
                    "Lambda-Runtime-Trace-Id": "Root=1-00000000-000000000000000000000000"})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                parts = self.path[len(PREFIX):].strip("/").split("/")
                error_type = self.headers.get("Lambda-Runtime-Function-Error-Type")
                if parts == ["init", "error"]:
                    api.init_errors.put(Outcome("init-error", body, error_type))
                elif len(parts) == 3 and parts[0] == "invocation" \
                        and parts[2] in ("response", "error") and parts[1] in api.outcomes:
                    api.outcomes[parts[1]].put(Outcome(parts[2], body, error_type))
                else:
                    self._reply(404, b'{"errorMessage": "unknown request id or path"}')
                    return
                self._reply(202, b'{"status": "OK"}')

        return Handler
