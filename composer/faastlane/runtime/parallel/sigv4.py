"""AWS Signature Version 4 for the two AWS calls an Orchestrator makes itself.

A spilling Orchestrator invokes copies of itself (Lambda ``Invoke``) and parks large
payloads in an S3-compatible store. The runtime ships inside actions with the standard
library only, and the custom runtime has no boto3, so requests are signed here, following
"Create a signed AWS API request" (AWS IAM user guide): canonical request, string to
sign, HMAC-SHA256 key derivation, ``Authorization`` header.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

ALGORITHM = "AWS4-HMAC-SHA256"
UNSIGNED_QUERY_SAFE = "-_.~"


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str
    session_token: str | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] = os.environ) -> Credentials | None:
        """The credentials Lambda (and the AWS tools) put in the environment, if any."""
        key, secret = environ.get("AWS_ACCESS_KEY_ID"), environ.get("AWS_SECRET_ACCESS_KEY")
        if not key or not secret:
            return None
        return cls(key, secret, environ.get("AWS_SESSION_TOKEN") or None)


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def _canonical_query(query: str) -> str:
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
    encoded = sorted((urllib.parse.quote(k, safe=UNSIGNED_QUERY_SAFE),
                      urllib.parse.quote(v, safe=UNSIGNED_QUERY_SAFE)) for k, v in pairs)
    return "&".join(f"{k}={v}" for k, v in encoded)


def _canonical_path(path: str, service: str) -> str:
    # S3 signs the path as sent; other services normalise by encoding each segment twice.
    if service == "s3":
        return path or "/"
    return urllib.parse.quote(path or "/", safe="/" + UNSIGNED_QUERY_SAFE)


def sign(method: str, url: str, headers: Mapping[str, str], body: bytes, service: str,
         region: str, credentials: Credentials, now: datetime | None = None
         ) -> dict[str, str]:
    """``headers`` plus ``Host``, ``X-Amz-Date``, the payload hash and ``Authorization``."""
    parts = urllib.parse.urlsplit(url)
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    payload_hash = hashlib.sha256(body).hexdigest()
    signed = {k.lower(): " ".join(str(v).split()) for k, v in headers.items()}
    signed["host"] = parts.netloc
    signed["x-amz-date"] = stamp
    if service == "s3":
        signed["x-amz-content-sha256"] = payload_hash
    if credentials.session_token:
        signed["x-amz-security-token"] = credentials.session_token
    names = sorted(signed)
    canonical = "\n".join([
        method.upper(),
        _canonical_path(parts.path, service),
        _canonical_query(parts.query),
        "".join(f"{name}:{signed[name]}\n" for name in names),
        ";".join(names),
        payload_hash,
    ])
    scope = f"{stamp[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join([ALGORITHM, stamp, scope,
                         hashlib.sha256(canonical.encode("utf-8")).hexdigest()])
    key = _hmac(("AWS4" + credentials.secret_key).encode("utf-8"), stamp[:8])
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    out = {k: v for k, v in headers.items()}
    out.update({k: v for k, v in signed.items() if k not in {n.lower() for n in headers}})
    out["Authorization"] = (f"{ALGORITHM} Credential={credentials.access_key}/{scope}, "
                            f"SignedHeaders={';'.join(names)}, Signature={signature}")
    return out
