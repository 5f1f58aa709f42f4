"""An S3-compatible object store for payloads over a platform's invocation limit.

A spilled group's input or result can exceed what one invocation may carry (1 MB on
OpenWhisk, 6 MB on Lambda). Then the JSON goes to a store the user configured and the
invocation carries its key, the claim-check pattern. Configuration, the AWS tools' own
where there is one:

``FAASTLANE_SPILL_STORE``  ``s3://BUCKET[/PREFIX]``: where payloads go (unset: none)
``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL``  another endpoint (MinIO, moto, ...)
``AWS_REGION`` / ``AWS_DEFAULT_REGION``  the region (default us-east-1)
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``  credentials

Requests use path-style addressing (``ENDPOINT/BUCKET/KEY``), which every S3-compatible
store accepts, signed with :mod:`sigv4`.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Mapping
from typing import Any

from ..asl.errors import RUNTIME, StatesError
from .sigv4 import Credentials, sign

STORE_VARIABLE = "FAASTLANE_SPILL_STORE"
TIMEOUT_SECONDS = 60


_OPENER: urllib.request.OpenerDirector | None = None


def opener() -> urllib.request.OpenerDirector:
    """The runtime's one HTTP(S) opener per process. Building one loads the CA
    certificates (~0.1 s, several times that on a loaded host); made in the Orchestrator
    before it forks (the invokers and the store call this when they are set up), the
    children awaiting remote groups inherit it instead of each building their own."""
    global _OPENER
    if _OPENER is None:
        _OPENER = urllib.request.build_opener()
    return _OPENER


def aws_region(environ: Mapping[str, str] = os.environ) -> str:
    return environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or "us-east-1"


def aws_endpoint(service: str, default: str, environ: Mapping[str, str] = os.environ) -> str:
    """``AWS_ENDPOINT_URL_<SERVICE>``, else ``AWS_ENDPOINT_URL``, else ``default``."""
    specific = environ.get(f"AWS_ENDPOINT_URL_{service.upper()}")
    return (specific or environ.get("AWS_ENDPOINT_URL") or default).rstrip("/")


class ObjectStore:
    """JSON documents under one bucket and prefix."""

    def __init__(self, location: str, endpoint: str, region: str,
                 credentials: Credentials | None) -> None:
        parts = urllib.parse.urlsplit(location)
        if parts.scheme != "s3" or not parts.netloc:
            raise ValueError(f"{STORE_VARIABLE}={location!r}: expected s3://BUCKET[/PREFIX]")
        self.bucket = parts.netloc
        self.prefix = parts.path.strip("/")
        self.endpoint = endpoint
        self.region = region
        self.credentials = credentials
        opener()  # now, before any fork

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] = os.environ) -> ObjectStore | None:
        """The store the user configured, or None."""
        location = environ.get(STORE_VARIABLE)
        if not location:
            return None
        region = aws_region(environ)
        endpoint = aws_endpoint("s3", f"https://s3.{region}.amazonaws.com", environ)
        return cls(location, endpoint, region, Credentials.from_environ(environ))

    def new_key(self, what: str) -> str:
        return "/".join(p for p in (self.prefix, "faastlane", f"{uuid.uuid4().hex}-{what}.json")
                        if p)

    def _request(self, method: str, key: str, body: bytes = b"") -> bytes:
        url = (f"{self.endpoint}/{urllib.parse.quote(self.bucket, safe='')}/"
               f"{urllib.parse.quote(key, safe='/')}")
        headers = {"Content-Type": "application/json"} if method == "PUT" else {}
        if self.credentials is not None:
            headers = sign(method, url, headers, body, "s3", self.region, self.credentials)
        request = urllib.request.Request(url, data=body if method == "PUT" else None,
                                         method=method, headers=headers)
        try:
            with opener().open(request, timeout=TIMEOUT_SECONDS) as response:
                data: bytes = response.read()
                return data
        except urllib.error.HTTPError as err:
            detail = err.read()[:300].decode("utf-8", "replace")
            raise StatesError(RUNTIME, f"the payload store answered {method} s3://"
                                       f"{self.bucket}/{key} with HTTP {err.code}: "
                                       f"{detail}") from None
        except OSError as err:
            raise StatesError(RUNTIME, f"cannot reach the payload store at {self.endpoint}: "
                                       f"{getattr(err, 'reason', err)}") from None

    def put_json(self, value: Any, what: str) -> str:
        """Store ``value``; its key."""
        key = self.new_key(what)
        self._request("PUT", key, json.dumps(value, separators=(",", ":")).encode("utf-8"))
        return key

    def get_json(self, key: str) -> Any:
        return json.loads(self._request("GET", key))

    def delete(self, key: str) -> None:
        self._request("DELETE", key)
