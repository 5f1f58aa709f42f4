"""The HTTP server of ``faastlane serve``: routes each call to the Lambda or OpenWhisk
API and logs one line per call on standard error."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import lambda_api
from .lambda_api import Answer, _json
from .openwhisk_api import ENTITY_LIMIT, PREFIX, OpenWhiskApi
from .stepfunctions_api import TARGET_PREFIX, StepFunctionsApi
from .workflow import WarmWorkflow


class LocalEndpoint(ThreadingHTTPServer):
    daemon_threads = True
    # http.server's default backlog of 5 reset clients of a burst (50 at once: 3-8
    # resets); calls beyond the warm action's wait in their threads, not in the kernel.
    request_queue_size = socket.SOMAXCONN

    def __init__(self, port: int, workflow: WarmWorkflow) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.workflow = workflow
        self.openwhisk = OpenWhiskApi(workflow, self.url)
        with open(os.path.join(workflow.action_dir, "workflow.json"), encoding="utf-8") as f:
            self.states = StepFunctionsApi(workflow, f.read())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"


class _Handler(BaseHTTPRequestHandler):
    server: LocalEndpoint
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def _serve(self) -> None:
        started = time.monotonic()
        url = urllib.parse.urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        api, answer = self._answer(url, body)
        self.send_response(answer.status)
        self.send_header("Content-Type", "application/json")
        for key, value in answer.headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(answer.body)))
        self.end_headers()
        self.wfile.write(answer.body)
        took = (time.monotonic() - started) * 1000
        sys.stderr.write(f"faastlane serve: {self.command} {url.path} {api} "
                         f"{answer.status} {took:.1f} ms\n")
        sys.stderr.flush()

    def _answer(self, url: urllib.parse.SplitResult, body: bytes) -> tuple[str, Answer]:
        target = self.headers.get("X-Amz-Target", "")
        if target.startswith(TARGET_PREFIX) and self.command == "POST":
            return (f"states {target.removeprefix(TARGET_PREFIX)}",
                    self.server.states.handle(target, body))
        found = lambda_api.PATH.match(url.path)
        if found and self.command == "POST":
            return "lambda", lambda_api.invoke(
                self.server.workflow, found["name"],
                self.headers.get("X-Amz-Invocation-Type", ""), body)
        if url.path.startswith(PREFIX):
            if len(body) > ENTITY_LIMIT:  # the controller refuses it before the action
                return "openwhisk", _json(413, {
                    "error": f"Request larger than allowed: {len(body)} > {ENTITY_LIMIT} "
                             f"bytes.", "code": uuid.uuid4().hex})
            params: Any = None
            if body.strip():
                try:
                    params = json.loads(body)
                except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                    return "openwhisk", _json(400, {"error": f"The request content was "
                                                             f"malformed: {exc}"})
            query = dict(urllib.parse.parse_qsl(url.query))
            return "openwhisk", self.server.openwhisk.handle(self.command, url.path, query,
                                                             params)
        return "-", _json(404, {"message": f"no such endpoint: {self.command} {url.path} "
                                           f"(Lambda: POST /2015-03-31/functions/"
                                           f"{self.server.workflow.name}/invocations; "
                                           f"OpenWhisk: POST {PREFIX}_/actions/"
                                           f"{self.server.workflow.name}; Step Functions: "
                                           f"POST / with X-Amz-Target: "
                                           f"{TARGET_PREFIX}OPERATION)"})

    do_GET = do_POST = do_PUT = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """One line per call is written by ``_serve``."""
