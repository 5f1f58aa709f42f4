"""A local stand-in for AWS Lambda's Invoke API, running a packaged function as Lambda does.

It stands in for the Lambda service endpoint ``https://lambda.REGION.amazonaws.com``: moto
implements Invoke only by running functions in Docker images from a public registry,
which cannot be reached here. What it implements, from the API reference (Invoke,
2015-03-31) and the SigV4 documentation:

``POST /2015-03-31/functions/{FunctionName}/invocations[?Qualifier=Q]``
    ``X-Amz-Invocation-Type: RequestResponse`` (the default); the payload is the event.
    The request must carry a valid Signature Version 4 for service ``lambda`` in this
    region by known credentials (session token included when the keys are temporary):
    ``403`` ``InvalidSignatureException`` / ``UnrecognizedClientException`` otherwise,
    ``404`` ``ResourceNotFoundException`` for an unknown function. The signature is
    recomputed with botocore's signer, independently of the runtime's ``sigv4.py``.
    ``200`` with the function's result, or with its error document and
    ``X-Amz-Function-Error: Unhandled`` when it raised.

Each invocation runs in an idle warm execution environment of the function, or a new
one when all are busy (Lambda scales out per concurrent request): the package unpacked
into a task root and ``/opt``, the real ``awslambdaric`` polling its own Runtime API
endpoint (``tests/deploy/runtime_api.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import urllib.parse
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from deploy.runtime_api import RuntimeApi

PREFIX = "/2015-03-31/functions/"


@dataclass(frozen=True)
class Keys:
    access_key: str
    secret_key: str
    token: str | None = None


@dataclass
class Call:
    function: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    verdict: str  # "ok", or why the request was refused


@dataclass
class Environment:
    """One execution environment: a Runtime API endpoint and the runtime polling it."""

    api: RuntimeApi
    process: subprocess.Popen

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        self.api.close()


def signature_problem(method: str, url: str, headers: dict[str, str], body: bytes,
                      region: str, keys: dict[str, Keys]) -> str | None:
    """Why a SigV4-signed request is not valid (None: it is)."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    lower = {k.lower(): v for k, v in headers.items()}
    auth = lower.get("authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return "MissingAuthenticationTokenException: no SigV4 Authorization header"
    fields = dict(part.strip().split("=", 1) for part in auth[len("AWS4-HMAC-SHA256 "):]
                  .split(","))
    access_key, day, scope_region, service, terminal = fields["Credential"].split("/")
    known = keys.get(access_key)
    if known is None:
        return "UnrecognizedClientException: The security token included in the request " \
               "is invalid."
    stamp = lower.get("x-amz-date", "")
    if (scope_region, service, terminal) != (region, "lambda", "aws4_request") \
            or not stamp.startswith(day):
        return f"InvalidSignatureException: Credential should be scoped to a valid region " \
               f"and service: {fields['Credential']}"
    when = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    if abs((datetime.now(UTC) - when).total_seconds()) > 300:
        return "InvalidSignatureException: Signature expired"
    if known.token is not None and lower.get("x-amz-security-token") != known.token:
        return "UnrecognizedClientException: The security token included in the request " \
               "is invalid."
    signed = fields["SignedHeaders"].split(";")
    if "host" not in signed or "x-amz-date" not in signed:
        return "InvalidSignatureException: host and x-amz-date must be signed"
    request = AWSRequest(method=method, url=url, data=body,
                         headers={h: lower[h] for h in signed if h in lower})
    signer = SigV4Auth(Credentials(known.access_key, known.secret_key, known.token),
                       "lambda", region)
    request.context["timestamp"] = stamp
    expected = signer.signature(signer.string_to_sign(request,
                                                      signer.canonical_request(request)),
                                request)
    if expected != fields["Signature"]:
        return "InvalidSignatureException: The request signature we calculated does not " \
               "match the signature you provided."
    return None


@dataclass
class LambdaEndpoint:
    """Lambda's Invoke API for functions unpacked under ``root``."""

    region: str
    keys: dict[str, Keys]  # access key -> the credentials the endpoint accepts
    root: Path
    functions: dict[str, tuple[Path, Path, dict[str, str]]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    idle: dict[str, list[Environment]] = field(default_factory=dict)
    started: list[Environment] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def add_function(self, name: str, task: Path, opt: Path, env: dict[str, str]) -> None:
        """A function: its unpacked code and layers, and its configured environment."""
        self.functions[name] = (task, opt, env)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        for environment in self.started:
            environment.stop()

    def _environment(self, name: str) -> Environment:
        with self.lock:
            idle = self.idle.setdefault(name, [])
            if idle:
                return idle.pop()
        task, opt, configured = self.functions[name]
        api = RuntimeApi()
        env = {"PATH": os.environ["PATH"], "AWS_LAMBDA_RUNTIME_API": api.address,
               "LAMBDA_TASK_ROOT": str(task), "_HANDLER": "lambda_function.handler",
               "PYTHONPATH": str(opt / "python"), "AWS_LAMBDA_FUNCTION_NAME": name,
               "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST", "AWS_REGION": self.region,
               "AWS_DEFAULT_REGION": self.region, **configured}
        log = (self.root / f"{name}-{len(self.started)}.log").open("wb")
        process = subprocess.Popen([sys.executable, "-m", "awslambdaric",
                                    "lambda_function.handler"], env=env, cwd=task,
                                   stdout=log, stderr=subprocess.STDOUT)
        environment = Environment(api, process)
        with self.lock:
            self.started.append(environment)
        return environment

    def invoke(self, name: str, payload: Any) -> tuple[int, dict[str, str], Any]:
        environment = self._environment(name)
        outcome = environment.api.invoke(payload)
        with self.lock:
            self.idle[name].append(environment)
        if outcome.kind == "response":
            return 200, {}, outcome.body
        return 200, {"X-Amz-Function-Error": "Unhandled"}, outcome.body

    def handle(self, method: str, path: str, query: str, headers: dict[str, str],
               raw: bytes) -> tuple[int, dict[str, str], Any]:
        url = f"{self.url}{path}" + (f"?{query}" if query else "")
        body = json.loads(raw or b"null")
        name = urllib.parse.unquote(path[len(PREFIX):].split("/")[0])
        problem = signature_problem(method, url, headers, raw, self.region, self.keys)
        call = Call(name, dict(urllib.parse.parse_qsl(query)),
                    {k.lower(): v for k, v in headers.items()}, body, problem or "ok")
        self.calls.append(call)
        if problem is not None:
            kind, message = problem.split(": ", 1)
            return 403, {"x-amzn-ErrorType": kind}, {"Type": "User", "message": message}
        if method != "POST" or not path.startswith(PREFIX) \
                or not path.endswith("/invocations"):
            return 404, {}, {"message": "unknown operation"}
        if name not in self.functions:
            return 404, {"x-amzn-ErrorType": "ResourceNotFoundException"}, {
                "Type": "User", "message": f"Function not found: {name}"}
        if call.headers.get("x-amz-invocation-type", "RequestResponse") != "RequestResponse":
            return 400, {}, {"message": "only RequestResponse is implemented here"}
        return self.invoke(name, body)


def _handler(endpoint: LambdaEndpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            parts = urllib.parse.urlsplit(self.path)
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, headers, answer = endpoint.handle(self.command, parts.path, parts.query,
                                                      dict(self.headers.items()), raw)
            data = json.dumps(answer).encode()
            self.send_response(status)
            for key, value in {**headers, "Content-Type": "application/json"}.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
