"""A local stand-in for Amazon Comprehend Medical's ``DetectPHI``, for offline runs.

Comprehend Medical has no local edition. This server speaks the part of its wire
protocols that the healthcare example uses, so the example's functions call it through an
unmodified ``boto3.client("comprehendmedical")`` with ``AWS_ENDPOINT_URL_COMPREHENDMEDICAL``
pointing here. The service model lists two protocols and clients pick one, so both work:

- AWS JSON 1.1 (what botocore picks today): ``POST /``, ``X-Amz-Target:
  ComprehendMedical_20181030.<Operation>``, ``Content-Type: application/x-amz-json-1.1``;
- Smithy RPC v2 CBOR: ``POST /service/ComprehendMedical_20181030/operation/<Operation>``,
  ``smithy-protocol: rpc-v2-cbor``, a CBOR body (``cbor.py``);
- either way a SigV4 ``Authorization`` header for ``comprehendmedical`` (its presence and
  scope are checked; the signature is not, there is no secret to check it with);
- ``DetectPHI``: request ``{"Text": ...}`` (1 to 20,000 characters), response
  ``{"Entities": [{"Id", "BeginOffset", "EndOffset", "Score", "Text", "Category",
  "Type", "Traits"}], "ModelVersion"}`` with offsets in code points, as the service
  documents them;
- errors as the service returns them: HTTP 400 with ``__type`` ``InvalidRequestException``
  (also ``TextSizeLimitExceededException``, ``InvalidEncodingException``,
  ``UnknownOperationException``), 403 ``MissingAuthenticationTokenException``.

Detection is rule-based (``phi_detector.py``), not Amazon's model: it finds names, dates,
identifiers, phone numbers, e-mail addresses, URLs, street addresses and ages in the
formats listed there. Other operations (``DetectEntitiesV2``, ``InferICD10CM``, ...) are
answered with ``UnknownOperationException``.

    python comprehend_medical.py [--host 127.0.0.1] [--port 0] [--port-file FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cbor  # sibling files, not a package
from phi_detector import detect_phi

TARGET_PREFIX = "ComprehendMedical_20181030."
MAX_TEXT = 20_000  # BoundedLengthString in the service model
MODEL_VERSION = "0.0.0-local-rules"  # says, in every response, that this is the stand-in


class ServiceError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def detect_phi_operation(request: dict[str, Any]) -> dict[str, Any]:
    text = request.get("Text")
    if not isinstance(text, str) or not text:
        raise ServiceError(400, "InvalidRequestException",
                           "1 validation error detected: Value at 'text' failed to satisfy "
                           "constraint: Member must have length greater than or equal to 1")
    if len(text) > MAX_TEXT:
        raise ServiceError(400, "TextSizeLimitExceededException",
                           f"Input text size exceeds limit. Max length of request text "
                           f"allowed is {MAX_TEXT} characters. Current request text length "
                           f"is {len(text)} characters.")
    entities = [{"Id": i, "BeginOffset": e.begin, "EndOffset": e.end, "Score": e.score,
                 "Text": e.text, "Category": "PROTECTED_HEALTH_INFORMATION",
                 "Type": e.type, "Traits": []}
                for i, e in enumerate(detect_phi(text))]
    return {"Entities": entities, "ModelVersion": MODEL_VERSION}


OPERATIONS = {"DetectPHI": detect_phi_operation}


class JsonProtocol:
    """AWS JSON 1.1: ``POST /``, the operation in ``X-Amz-Target``, a JSON body."""

    content_type = "application/x-amz-json-1.1"
    extra_headers: dict[str, str] = {}

    @staticmethod
    def operation(path: str, headers: Any) -> str:
        target = headers.get("X-Amz-Target", "")
        if path != "/" or not target.startswith(TARGET_PREFIX):
            raise ServiceError(400, "UnknownOperationException",
                               f"Operation {target or '(none)'} is not supported by the "
                               f"local Comprehend Medical stand-in")
        return str(target.removeprefix(TARGET_PREFIX))

    @staticmethod
    def decode(body: bytes) -> Any:
        try:
            return json.loads(body.decode("utf-8")) if body else {}
        except UnicodeDecodeError:
            raise ServiceError(400, "InvalidEncodingException",
                               "The input text is not valid UTF-8") from None
        except json.JSONDecodeError as error:
            raise ServiceError(400, "SerializationException", str(error)) from None

    @staticmethod
    def encode(payload: dict[str, Any]) -> bytes:
        return json.dumps(payload).encode("utf-8")

    @staticmethod
    def error(code: str, message: str) -> dict[str, Any]:
        return {"__type": code, "Message": message}


class CborProtocol:
    """Smithy RPC v2 CBOR: ``POST /service/<prefix>/operation/<name>``, a CBOR body."""

    content_type = "application/cbor"
    extra_headers = {"smithy-protocol": "rpc-v2-cbor"}

    @staticmethod
    def operation(path: str, headers: Any) -> str:
        prefix = f"/service/{TARGET_PREFIX.rstrip('.')}/operation/"
        if not path.startswith(prefix):
            raise ServiceError(404, "UnknownOperationException",
                               f"{path} is not an operation of this service")
        return path.removeprefix(prefix)

    @staticmethod
    def decode(body: bytes) -> Any:
        try:
            return cbor.decode(body) if body else {}
        except cbor.CBORError as error:
            if "UTF-8" in str(error):
                raise ServiceError(400, "InvalidEncodingException",
                                   "The input text is not valid UTF-8") from None
            raise ServiceError(400, "SerializationException", str(error)) from None

    @staticmethod
    def encode(payload: dict[str, Any]) -> bytes:
        return cbor.encode(payload)

    @staticmethod
    def error(code: str, message: str) -> dict[str, Any]:
        return {"__type": f"com.amazonaws.comprehendmedical#{code}", "message": message}


Protocol = type[JsonProtocol] | type[CborProtocol]


class Handler(BaseHTTPRequestHandler):
    server_version = "ComprehendMedicalLocal/1"
    protocol_version = "HTTP/1.1"  # keep-alive, as botocore's connection pool expects
    # Headers and body are two writes: with Nagle's algorithm on, the body waits for the
    # client's delayed ACK of the headers (40 ms) on every request of a kept-alive
    # connection -- a stall AWS does not have, which distorted the benchmark.
    disable_nagle_algorithm = True

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        protocol: Protocol = (CborProtocol if self.headers.get("smithy-protocol") == "rpc-v2-cbor"
                              else JsonProtocol)
        try:
            self._reply(protocol, 200, self._dispatch(protocol, body))
        except ServiceError as error:
            self._reply(protocol, error.status, protocol.error(error.code, error.message),
                        error.code)

    def do_GET(self) -> None:
        # Readiness probe for the start script; the service itself has no GET operations.
        self._reply(JsonProtocol, 200, {"service": "comprehendmedical", "model": MODEL_VERSION})

    def _dispatch(self, protocol: Protocol, body: bytes) -> dict[str, Any]:
        auth = self.headers.get("Authorization", "")
        signed = auth.startswith("AWS4-HMAC-SHA256 ")
        if not signed or "/comprehendmedical/aws4_request" not in auth:
            raise ServiceError(403, "MissingAuthenticationTokenException",
                               "Missing Authentication Token")
        name = protocol.operation(self.path, self.headers)
        operation = OPERATIONS.get(name)
        if operation is None:
            raise ServiceError(400, "UnknownOperationException",
                               f"Operation {name} is not supported by the local "
                               f"Comprehend Medical stand-in")
        request = protocol.decode(body)
        if not isinstance(request, dict):
            raise ServiceError(400, "SerializationException", "Expected a structure")
        return operation(request)

    def _reply(self, protocol: Protocol, status: int, payload: dict[str, Any],
               error: str | None = None) -> None:
        data = protocol.encode(payload)
        self.send_response(status)
        self.send_header("Content-Type", protocol.content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        for header, value in protocol.extra_headers.items():
            self.send_header(header, value)
        if error:
            self.send_header("x-amzn-ErrorType", error)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"comprehend-medical-local: {format % args}\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--port-file", type=Path,
                        help="write the port here once listening (for scripts)")
    args = parser.parse_args(argv)
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    if args.port_file:
        partial = args.port_file.with_name(args.port_file.name + ".partial")
        partial.write_text(f"{port}\n", encoding="utf-8")
        partial.replace(args.port_file)  # atomic: a reader never sees half a number
    print(f"Comprehend Medical stand-in listening on http://{args.host}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
