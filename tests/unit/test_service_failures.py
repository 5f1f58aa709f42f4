"""A failed service call as the ASL error AWS names: the names and causes of
LocalStack's recorded snapshots (tests/aws/services/stepfunctions/v2/services), from
botocore's own exception classes (made offline)."""

from __future__ import annotations

import sys
from typing import Any

import botocore.session
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from faastlane.runtime.asl.errors import RUNTIME, StatesError
from faastlane.runtime.asl.integrations import parse
from faastlane.runtime.services.clients import boto3_module
from faastlane.runtime.services.failures import failed_entries, from_exception


def _client(service: str) -> Any:
    return botocore.session.get_session().create_client(
        service, region_name="us-east-1", aws_access_key_id="testing",
        aws_secret_access_key="testing")


def _response(code: str, message: str, status: int, **meta: Any) -> dict[str, Any]:
    return {"Error": {"Code": code, "Message": message},
            "ResponseMetadata": {"RequestId": "<request_id>", "HTTPStatusCode": status,
                                 "RetryAttempts": 0, **meta}}


def test_dynamodb_conditional_check() -> None:
    exc = _client("dynamodb").exceptions.ConditionalCheckFailedException(
        _response("ConditionalCheckFailedException", "The conditional request failed", 400),
        "PutItem")
    error = from_exception(parse("arn:aws:states:::dynamodb:putItem"), exc, "DynamoDB")
    assert error is not None
    assert error.error == "DynamoDB.ConditionalCheckFailedException"
    assert error.cause == ("The conditional request failed (Service: AmazonDynamoDBv2; "
                           "Status Code: 400; Error Code: ConditionalCheckFailedException; "
                           "Request ID: <request_id>; Proxy: null)")


def test_sns_errors_as_recorded() -> None:
    """test_fifo_message_attribute and test_publish_base_error_topic_arn."""
    sns = _client("sns")
    publish = parse("arn:aws:states:::sns:publish")
    invalid = from_exception(publish, sns.exceptions.InvalidParameterException(_response(
        "InvalidParameter", "Invalid parameter: The MessageGroupId parameter is required for "
        "FIFO topics", 400), "Publish"), "SNS")
    assert invalid is not None and (invalid.error, invalid.cause) == (
        "SNS.InvalidParameterException",
        "Invalid parameter: The MessageGroupId parameter is required for FIFO topics "
        "(Service: AmazonSNS; Status Code: 400; Error Code: InvalidParameter; "
        "Request ID: <request_id>; Proxy: null)")
    missing = from_exception(publish, sns.exceptions.NotFoundException(_response(
        "NotFound", "Topic does not exist", 404), "Publish"), "SNS")
    assert missing is not None and (missing.error, missing.cause) == (
        "SNS.NotFoundException",
        "Topic does not exist (Service: AmazonSNS; Status Code: 404; Error Code: NotFound; "
        "Request ID: <request_id>; Proxy: null)")


def test_sdk_errors_are_named_after_the_java_v2_sdk() -> None:
    s3 = _client("s3")
    error = from_exception(parse("arn:aws:states:::aws-sdk:s3:getObject"),
                           s3.exceptions.NoSuchKey(_response(
                               "NoSuchKey", "The specified key does not exist.", 404,
                               HostId="<host>"), "GetObject"), "S3")
    assert error is not None and (error.error, error.cause) == (
        "S3.NoSuchKeyException",
        "The specified key does not exist. (Service: S3, Status Code: 404, Request ID: "
        "<request_id>, Extended Request ID: <host>) (SDK Attempt Count: 1)")
    # Sfn.InvalidTokenException, as test_sfn_send_task_outcome_with_no_such_token recorded.
    token = from_exception(parse("arn:aws:states:::aws-sdk:sfn:sendTaskSuccess"),
                           _client("stepfunctions").exceptions.InvalidToken(_response(
                               "InvalidToken", "Invalid Token: 'Invalid token'", 400),
                               "SendTaskSuccess"), "SFN")
    assert token is not None and (token.error, token.cause) == (
        "Sfn.InvalidTokenException",
        "Invalid Token: 'Invalid token' (Service: Sfn, Status Code: 400, Request ID: "
        "<request_id>) (SDK Attempt Count: 1)")
    # An error the API does not model: <Service>.<Service>Exception.
    other = from_exception(parse("arn:aws:states:::aws-sdk:dynamodb:query"),
                           ClientError(_response("Weird", "odd", 400), "Query"), "DynamoDB")
    assert other is not None and other.error == "DynamoDb.DynamoDbException"


def test_a_call_that_got_no_answer_is_an_sdk_client_exception() -> None:
    error = from_exception(parse("arn:aws:states:::dynamodb:getItem"),
                           EndpointConnectionError(endpoint_url="http://127.0.0.1:9"))
    assert error is not None and error.error == "DynamoDB.SdkClientException"
    assert "http://127.0.0.1:9" in (error.cause or "")


def test_other_exceptions_are_left_to_the_interpreter() -> None:
    assert from_exception(parse("arn:aws:states:::sns:publish"), KeyError("x")) is None


def test_failed_event_entries_fail_the_task_with_the_response() -> None:
    error = failed_entries({"Entries": [{"ErrorCode": "MalformedDetail",
                                         "ErrorMessage": "Detail is malformed."}],
                            "FailedEntryCount": 1})
    assert error.error == "EventBridge.FailedEntry"
    assert error.cause == ('{"Entries":[{"ErrorCode":"MalformedDetail","ErrorMessage":'
                           '"Detail is malformed."}],"FailedEntryCount":1}')


def test_boto3_is_imported_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    assert boto3_module("S", "r") is not None
    monkeypatch.setitem(sys.modules, "boto3", None)  # import fails, as if not installed
    with pytest.raises(StatesError) as info:
        boto3_module("Save", "arn:aws:states:::dynamodb:putItem")
    assert info.value.error == RUNTIME
    assert "needs boto3" in str(info.value) and "'Save'" in str(info.value)
