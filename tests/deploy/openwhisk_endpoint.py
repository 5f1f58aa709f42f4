"""A local stand-in for OpenWhisk's controller: records the REST calls and runs actions.

No OpenWhisk controller can run here (it needs CouchDB, Kafka and an invoker), so this
endpoint implements the part of the documented REST API that ``faastlane deploy`` and
``invoke`` use, and records every request for the tests to inspect:

``PUT  /api/v1/namespaces/{ns}/actions/{name}[?overwrite=true]``  stores the action
    (``409`` if it exists without ``overwrite``); ``401`` for a wrong key. Limits the
    PUT leaves out are the defaults for a new action and kept on an update, as the
    controller's ``updateWhiskAction`` keeps them; so are its ``parameters`` when the
    PUT has none.
``POST /api/v1/namespaces/{ns}/actions/{name}?blocking=true&result=true``
    runs it as the invoker would: in an idle warm container of the action, or a fresh
    one (``/init`` with the stored code, and as ``env`` the parameters marked ``init``
    and ``__OW_API_HOST``, then ``/run`` with the other parameters under the request's
    (``Parameters.merge``: the request's win), ``activation_id``, ``action_name``,
    ``namespace``, ``deadline``, and ``api_key`` when the action is annotated
    ``provide-api-key``), answering the result, or ``502``
    with it when it holds ``error``; ``404`` for an unknown action. Concurrent
    activations get containers of their own, as the invoker gives them (an action
    that invokes itself needs that). A Docker action (``exec.kind`` ``blackbox``) runs
    in a container of its ``exec.image``, made by the ``images`` factory, which pulls
    the image by name first as the invoker does.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .deploy_servers import ActionServer

# OpenWhisk's default action limits (memory MB, timeout ms, log MB).
DEFAULT_LIMITS = {"memory": 256, "timeout": 60_000, "logs": 10}


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a CLI run against this endpoint: no ~/.wskprops and no __OW_*
    of the machine running the tests, only what the command line (or ``extra``) gives."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("__OW_")}
    env["WSK_CONFIG_FILE"] = str(tmp_path / "no-wskprops")
    return {**env, **extra}


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass
class OpenWhiskEndpoint:
    auth: str
    container: Callable[[], ActionServer]  # a fresh action container per action
    images: Callable[[str], ActionServer] | None = None  # a container of a blackbox image
    calls: list[Recorded] = field(default_factory=list)
    actions: dict[str, dict[str, Any]] = field(default_factory=dict)
    warm: dict[str, list[ActionServer]] = field(default_factory=dict)  # every container
    idle: dict[str, list[ActionServer]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def handle(self, call: Recorded) -> tuple[int, Any]:
        token = base64.b64encode(self.auth.encode()).decode()
        if call.headers.get("authorization") != f"Basic {token}":
            return 401, {"error": "The supplied authentication is invalid",
                         "code": uuid.uuid4().hex}
        parts = call.path.split("/")
        if len(parts) < 7 or parts[1:4] != ["api", "v1", "namespaces"] or parts[5] != "actions":
            return 404, {"error": "The requested resource does not exist."}
        namespace, name = urllib.parse.unquote(parts[4]), "/".join(parts[6:])
        key = f"{namespace}/{name}"
        if call.method == "PUT":
            if key in self.actions and call.query.get("overwrite") != "true":
                return 409, {"error": "resource already exists", "code": uuid.uuid4().hex}
            version = f"0.0.{len([c for c in self.calls if c.method == 'PUT'])}"
            # As the controller stores limits: a new action gets the defaults for what it
            # does not give, an update keeps the action's own (updateWhiskAction).
            kept = self.actions[key]["limits"] if key in self.actions else DEFAULT_LIMITS
            earlier = self.actions.get(key, {})
            self.actions[key] = dict(call.body, version=version,
                                     limits={**kept, **call.body.get("limits", {})},
                                     parameters=call.body.get(
                                         "parameters", earlier.get("parameters", [])))
            self.warm.pop(key, None)
            self.idle.pop(key, None)
            stored = {k: v for k, v in self.actions[key].items() if k != "exec"}
            exec_ = {k: v for k, v in call.body["exec"].items() if k in ("kind", "image")}
            return 200, dict(stored, exec=dict(exec_, binary=True))
        if call.method == "POST":
            if key not in self.actions:
                return 404, {"error": "The requested resource does not exist."}
            return self._invoke(key, namespace, name, call.body)
        return 405, {"error": "method not allowed"}

    def _container(self, key: str) -> tuple[ActionServer | None, Any]:
        """An idle warm container of the action, or a new one initialised with it."""
        with self.lock:
            idle = self.idle.setdefault(key, [])
            if idle:
                return idle.pop(), None
        exec_ = self.actions[key]["exec"]
        if exec_["kind"] == "blackbox":
            if self.images is None:
                return None, "this endpoint runs no Docker actions"
            container = self.images(exec_["image"])
        else:
            container = self.container()
        # ContainerProxy: the init parameters as env (values not strings as JSON), the
        # __OW_ variables over them.
        env = {p["key"]: p["value"] if isinstance(p["value"], str) else json.dumps(p["value"])
               for p in self.actions[key]["parameters"] if p.get("init")}
        status, answer = container.init({"value": {
            "main": exec_.get("main", "main"), "code": exec_["code"],
            "binary": exec_.get("binary", False),
            "env": {**env, "__OW_API_HOST": self.url}}})
        if status != 200:
            return None, answer
        with self.lock:
            self.warm.setdefault(key, []).append(container)
        return container, None

    def _invoke(self, key: str, namespace: str, name: str, params: Any) -> tuple[int, Any]:
        container, failure = self._container(key)
        if container is None:
            return 502, {"error": f"init failed: {failure}"}
        annotations = {a["key"]: a["value"] for a in self.actions[key].get("annotations", [])}
        extra = {"api_key": self.auth} if annotations.get("provide-api-key") else {}
        defaults = {p["key"]: p["value"] for p in self.actions[key]["parameters"]
                    if not p.get("init")}
        if defaults and isinstance(params, dict):
            params = {**defaults, **params}
        status, result = container.run(
            params, activation_id=uuid.uuid4().hex, action_name=f"/{namespace}/{name}",
            namespace=namespace, deadline=str(int(time.time() * 1000) + 60_000), **extra)
        if status == 200:  # the invoker retires a container whose activation broke it
            with self.lock:
                self.idle[key].append(container)
        if status != 200:
            return 502, {"error": f"The action did not produce a valid response: {result}"}
        return (502 if isinstance(result, dict) and "error" in result else 200), result


def _handler(endpoint: OpenWhiskEndpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            call = Recorded(self.command, url.path, dict(urllib.parse.parse_qsl(url.query)),
                            {k.lower(): v for k, v in self.headers.items()},
                            json.loads(raw) if raw else None)
            endpoint.calls.append(call)
            status, answer = endpoint.handle(call)
            body = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_PUT = do_POST = do_GET = _serve

    return Handler
