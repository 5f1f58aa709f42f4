"""A failed service call as the ASL error Step Functions names it.

Retry and Catch match these names, so they follow what AWS reports (LocalStack's
recorded snapshots of the service tasks, tests/aws/services/stepfunctions/v2/services):

- optimised integrations: ``<Service>.<Exception>``, the API's modelled exception or
  else its error code, with ``Exception`` appended when it lacks it
  (``DynamoDB.ConditionalCheckFailedException``, ``SNS.NotFoundException``,
  ``SNS.InvalidParameterException``), the cause ``<message> (Service: AmazonSNS; Status
  Code: 404; Error Code: NotFound; Request ID: ...; Proxy: null)``;
- ``aws-sdk``: ``<Service>.<ExceptionClass>`` named after the AWS SDK for Java v2
  (``S3.NoSuchKeyException``, ``DynamoDb.ConditionalCheckFailedException``,
  ``Sfn.InvalidTokenException``; an error the API does not model is
  ``<Service>.<Service>Exception``), the cause ``<message> (Service: S3, Status Code:
  404, Request ID: ..., Extended Request ID: ...) (SDK Attempt Count: 1)``;
- EventBridge ``putEvents`` with failed entries: ``EventBridge.FailedEntry``, the cause
  the response;
- a call that never got an answer (no endpoint, no credentials, bad parameters):
  ``<Service>.SdkClientException``, the cause the SDK's message.
"""

from __future__ import annotations

from typing import Any

from ..asl.errors import StatesError
from ..asl.integrations import Integration
from ..asl.jsonvalue import compact_json

# Optimised integration -> (error prefix, service name in causes).
_OPTIMISED = {
    "dynamodb": ("DynamoDB", "AmazonDynamoDBv2"),
    "sns": ("SNS", "AmazonSNS"),
    "sqs": ("SQS", "AmazonSQS"),
    "events": ("EventBridge", "AmazonEventBridge"),
    "states": ("StepFunctions", "AWSStepFunctions"),
}
# aws-sdk services whose Java v2 client name is not botocore's service id without spaces.
_SDK_NAMES = {"dynamodb": "DynamoDb", "sfn": "Sfn", "stepfunctions": "Sfn"}
FAILED_ENTRY = "EventBridge.FailedEntry"


def _exception(name: str) -> str:
    return name if name.endswith("Exception") else name + "Exception"


def sdk_service_name(integration: Integration, service_id: str | None) -> str:
    """The service's name in aws-sdk error names: ``S3``, ``DynamoDb``, ``Sfn``."""
    named = _SDK_NAMES.get(integration.service)
    if named is not None:
        return named
    return (service_id or integration.service).replace(" ", "")


def error_prefix(integration: Integration, service_id: str | None = None) -> str:
    if integration.sdk:
        return sdk_service_name(integration, service_id)
    return _OPTIMISED[integration.service][0]


def from_exception(integration: Integration, exc: BaseException,
                   service_id: str | None = None) -> StatesError | None:
    """The ASL error of a boto3/botocore failure; None for any other exception (an
    engine fault, reported as States.Runtime by the interpreter)."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and isinstance(response.get("Error"), dict):
        return _client_error(integration, type(exc).__name__, response, service_id)
    if type(exc).__module__.split(".")[0] in ("botocore", "boto3", "urllib3"):
        prefix = error_prefix(integration, service_id)
        return StatesError(f"{prefix}.SdkClientException", str(exc) or type(exc).__name__)
    return None


def _client_error(integration: Integration, class_name: str, response: dict[str, Any],
                  service_id: str | None) -> StatesError:
    error = response["Error"]
    code = str(error.get("Code") or "Unknown")
    message = str(error.get("Message") or "")
    meta = response.get("ResponseMetadata") or {}
    status, request_id = meta.get("HTTPStatusCode"), meta.get("RequestId", "")
    if not integration.sdk:
        prefix, label = _OPTIMISED[integration.service]
        # The API's modelled exception (SQS's AWS.SimpleQueueService.NonExistentQueue is
        # QueueDoesNotExist), else the code, as the AWS SDK for Java v1 names them.
        modelled = class_name if class_name != "ClientError" else code.rsplit(".", 1)[-1]
        name = f"{prefix}.{_exception(modelled)}"
        cause = (f"{message} (Service: {label}; Status Code: {status}; Error Code: {code}; "
                 f"Request ID: {request_id}; Proxy: null)")
        return StatesError(name, cause)
    label = sdk_service_name(integration, service_id)
    name = f"{label}.{_exception(label if class_name == 'ClientError' else class_name)}"
    details = [f"Service: {label}", f"Status Code: {status}", f"Request ID: {request_id}"]
    if meta.get("HostId"):
        details.append(f"Extended Request ID: {meta['HostId']}")
    attempts = int(meta.get("RetryAttempts") or 0) + 1
    return StatesError(name, f"{message} ({', '.join(details)}) "
                             f"(SDK Attempt Count: {attempts})")


def failed_entries(result: dict[str, Any]) -> StatesError:
    """putEvents answered, but some entries failed: the Task fails (the developer
    guide's EventBridge page; LocalStack's test_put_events_malformed_detail)."""
    return StatesError(FAILED_ENTRY, compact_json(result))
