"""The claim-check pattern: large parts of a JSON state travel through S3.

A platform with a payload limit (OpenWhisk: 1 MB per activation; Step Functions: 256 KB
per state) cannot carry a large state between functions. What users do instead is put
the large value in object storage and pass its key. :func:`offload` replaces the largest
values of a document by references ``{"faastlane-claim-check": "s3://bucket/key", ...}``
until the document fits; :func:`resolve` fetches them back. Small fields stay in place,
so ASL paths and Choice rules on them still work.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Protocol

from faastlane.runtime.parallel.invokers import OPENWHISK_PAYLOAD_LIMIT

MARKER = "faastlane-claim-check"
BUCKET = "faastlane-bench-state"
OPENWHISK_LIMIT = OPENWHISK_PAYLOAD_LIMIT  # OpenWhisk's default maximum activation payload
STEP_FUNCTIONS_LIMIT = 256 * 1024  # Step Functions' maximum state / input size


class ObjectStore(Protocol):
    def put(self, data: bytes) -> str: ...
    def get(self, url: str) -> bytes: ...


class S3Store:
    """A bucket on the S3 endpoint of the usual AWS configuration (moto_server here:
    ``AWS_ENDPOINT_URL_S3``, else ``AWS_ENDPOINT_URL``, as boto3 resolves them)."""

    def __init__(self, bucket: str = BUCKET) -> None:
        import boto3  # only the processes that move large state need boto3

        self.bucket = bucket
        self.client = boto3.client("s3")

    def create_bucket(self) -> None:
        try:
            self.client.create_bucket(Bucket=self.bucket)
        except self.client.exceptions.BucketAlreadyOwnedByYou:
            pass

    def put(self, data: bytes) -> str:
        key = f"state/{uuid.uuid4().hex}.json"
        self.client.put_object(Bucket=self.bucket, Key=key, Body=data)
        return f"s3://{self.bucket}/{key}"

    def get(self, url: str) -> bytes:
        bucket, _, key = url.removeprefix("s3://").partition("/")
        data: bytes = self.client.get_object(Bucket=bucket, Key=key)["Body"].read()
        return data


def encoded_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


def is_reference(value: Any) -> bool:
    return isinstance(value, dict) and MARKER in value


def offload(value: Any, limit: int, store: ObjectStore) -> Any:
    """``value`` with its largest parts moved to ``store`` until it encodes in ``limit``."""
    if encoded_size(value) <= limit:
        return value
    if not isinstance(value, (dict, list)) or not value:
        return _reference(value, store)
    parts = dict(value) if isinstance(value, dict) else dict(enumerate(value))
    sizes = {key: encoded_size(part) for key, part in parts.items()}
    total = encoded_size(value)
    for key in sorted(sizes, key=sizes.__getitem__, reverse=True):
        if total <= limit:
            break
        # Descend into a container that alone is too big; otherwise store it whole.
        inner = offload(parts[key], max(limit // 2, 1024), store)
        parts[key] = inner if encoded_size(inner) < sizes[key] else _reference(parts[key], store)
        total += encoded_size(parts[key]) - sizes[key]
    if total > limit:
        return _reference(value, store)
    return parts if isinstance(value, dict) else [parts[i] for i in range(len(value))]


def _reference(value: Any, store: ObjectStore) -> dict[str, Any]:
    data = json.dumps(value, separators=(",", ":")).encode()
    return {MARKER: store.put(data), "bytes": len(data)}


def resolve(value: Any, store: ObjectStore) -> Any:
    """``value`` with every reference replaced by what it stands for."""
    if is_reference(value):
        return resolve(json.loads(store.get(value[MARKER])), store)
    if isinstance(value, dict):
        return {k: resolve(v, store) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, store) for v in value]
    return value


def has_references(value: Any) -> bool:
    if is_reference(value):
        return True
    if isinstance(value, dict):
        return any(has_references(v) for v in value.values())
    if isinstance(value, list):
        return any(has_references(v) for v in value)
    return False
