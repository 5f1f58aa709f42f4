"""The result of an optimised integration: the API's response and the HTTP metadata
that the AWS SDK for Java v1 behind Step Functions adds to it.

DynamoDB, SNS, SQS and startExecution answer with the response's members plus
``SdkHttpMetadata`` (``AllHttpHeaders``: each header a list of values; ``HttpHeaders``;
``HttpStatusCode``) and ``SdkResponseMetadata`` (``RequestId``), as recorded from AWS
(LocalStack's test_dynamodb_task_service, test_sns_task_service, test_sqs_task_service,
test_sfn_task_service snapshots). EventBridge ``putEvents`` answers with the response
alone (test_events_task_service), and so does every ``aws-sdk`` integration.
"""

from __future__ import annotations

from typing import Any

from ..asl.integrations import Integration

# Header names as AWS's services send them; botocore hands them over in lower case.
_HEADER_NAMES = {"x-amzn-requestid": "x-amzn-RequestId", "x-amz-crc32": "x-amz-crc32",
                 "x-amz-id-2": "x-amz-id-2", "x-amzn-trace-id": "X-Amzn-Trace-Id"}
_WITHOUT_METADATA = frozenset({"events"})


def header_name(name: str) -> str:
    """``content-type`` -> ``Content-Type``; AWS's own ``x-amzn-RequestId``."""
    lower = name.lower()
    if lower in _HEADER_NAMES:
        return _HEADER_NAMES[lower]
    if lower.startswith("x-amz"):
        return lower
    return "-".join(part.capitalize() for part in lower.split("-"))


def sdk_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """``SdkHttpMetadata`` and ``SdkResponseMetadata`` from botocore's ResponseMetadata."""
    headers = {header_name(k): str(v) for k, v in
               sorted((metadata.get("HTTPHeaders") or {}).items())}
    request_id = metadata.get("RequestId") or headers.get("x-amzn-RequestId", "")
    return {
        "SdkHttpMetadata": {"AllHttpHeaders": {k: [v] for k, v in headers.items()},
                            "HttpHeaders": headers,
                            "HttpStatusCode": metadata.get("HTTPStatusCode", 200)},
        "SdkResponseMetadata": {"RequestId": request_id},
    }


def optimised_result(integration: Integration, shaped: dict[str, Any],
                     metadata: dict[str, Any]) -> dict[str, Any]:
    """An optimised integration's result from the shaped response and the raw
    ResponseMetadata."""
    if integration.service in _WITHOUT_METADATA:
        return shaped
    return dict(sorted({**shaped, **sdk_metadata(metadata)}.items()))
