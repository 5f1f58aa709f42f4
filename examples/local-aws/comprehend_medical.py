"""A local stand-in for Amazon Comprehend Medical's ``DetectPHI``, for offline runs.

Comprehend Medical has no local edition. This server speaks the part of its wire
protocol that the healthcare example uses, so the example's functions call it through an
unmodified ``boto3.client("comprehendmedical")`` with ``AWS_ENDPOINT_URL_COMPREHENDMEDICAL``
pointing here:

- AWS JSON 1.1: ``POST /``, ``X-Amz-Target: ComprehendMedical_20181030.<Operation>``,
  ``Content-Type: application/x-amz-json-1.1``, a SigV4 ``Authorization`` header (its
  presence and service are checked; the signature is not, there is no secret to check
  it with);
- ``DetectPHI``: request ``{"Text": ...}`` (1 to 20,000 characters), response
  ``{"Entities": [{"Id", "BeginOffset", "EndOffset", "Score", "Text", "Category",
  "Type", "Traits"}], "ModelVersion"}`` with offsets in code points, as the service
  documents them;
- errors as the service returns them: HTTP 400 with ``{"__type": "InvalidRequestException",
  "Message": ...}`` (also ``TextSizeLimitExceededException``, ``InvalidEncodingException``,
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
from phi_detector import detect_phi  # a sibling file, not a package

TARGET_PREFIX = "ComprehendMedical_20181030."
MAX_TEXT = 20_000  # BoundedLengthString in the service model
MODEL_VERSION = "0.0.0-local-rules"  # says, in every response, that this is the stand-in
CONTENT_TYPE = "application/x-amz-json-1.1"


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


class Handler(BaseHTTPRequestHandler):
    server_version = "ComprehendMedicalLocal/1"
    protocol_version = "HTTP/1.1"  # keep-alive, as botocore's connection pool expects

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            self._reply(200, self._dispatch(body))
        except ServiceError as error:
            self._reply(error.status, {"__type": error.code, "Message": error.message},
                        error.code)

    def do_GET(self) -> None:
        # Readiness probe for the start script; the service itself has no GET operations.
        self._reply(200, {"service": "comprehendmedical", "model": MODEL_VERSION})

    def _dispatch(self, body: bytes) -> dict[str, Any]:
        auth = self.headers.get("Authorization", "")
        signed = auth.startswith("AWS4-HMAC-SHA256 ")
        if not signed or "/comprehendmedical/aws4_request" not in auth:
            raise ServiceError(403, "MissingAuthenticationTokenException",
                               "Missing Authentication Token")
        target = self.headers.get("X-Amz-Target", "")
        operation = OPERATIONS.get(target.removeprefix(TARGET_PREFIX)) \
            if target.startswith(TARGET_PREFIX) else None
        if operation is None:
            raise ServiceError(400, "UnknownOperationException",
                               f"Operation {target or '(none)'} is not supported by the "
                               f"local Comprehend Medical stand-in")
        try:
            request = json.loads(body.decode("utf-8")) if body else {}
        except UnicodeDecodeError:
            raise ServiceError(400, "InvalidEncodingException",
                               "The input text is not valid UTF-8") from None
        except json.JSONDecodeError as error:
            raise ServiceError(400, "SerializationException", str(error)) from None
        if not isinstance(request, dict):
            raise ServiceError(400, "SerializationException", "Expected a JSON object")
        return operation(request)

    def _reply(self, status: int, payload: dict[str, Any], error: str | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
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
