"""Requests and results between Step Functions' JSON and boto3, on botocore's real
service models (clients made offline: nothing here sends a request)."""

from __future__ import annotations

import datetime
import io
from typing import Any

import botocore.session
import pytest
from botocore.response import StreamingBody

from faastlane.runtime.asl.integrations import parse
from faastlane.runtime.services import responses, shapes
from faastlane.runtime.services.clients import operation_model
from faastlane.runtime.services.executions import StateMachines


@pytest.fixture(scope="module")
def session() -> Any:
    return botocore.session.get_session()


def _model(session: Any, service: str, operation: str) -> Any:
    client = session.create_client(service, region_name="us-east-1",
                                   aws_access_key_id="testing", aws_secret_access_key="testing")
    return operation_model(client, operation)


def test_pascal_case_parameters_reach_a_camel_case_api(session: Any) -> None:
    model = _model(session, "stepfunctions", "start_execution")
    request = shapes.request({"StateMachineArn": "arn", "Input": {"k": [1, 2]}, "Name": "n"},
                             model.input_shape)
    assert request == {"stateMachineArn": "arn", "input": '{"k":[1,2]}', "name": "n"}


def test_json_given_for_strings_and_blobs_becomes_text(session: Any) -> None:
    sns = _model(session, "sns", "publish")
    assert shapes.request({"TopicArn": "t", "Message": {"a": "é"}}, sns.input_shape) == {
        "TopicArn": "t", "Message": '{"a":"é"}'}
    s3 = _model(session, "s3", "put_object")
    assert shapes.request({"Bucket": "b", "Key": "k", "Body": ["List", "Data"]},
                          s3.input_shape)["Body"] == b'["List","Data"]'
    assert shapes.request({"Bucket": "b", "Key": "k", "Body": "text data"},
                          s3.input_shape)["Body"] == b"text data"


def test_events_detail_objects_are_stringified_inside_the_entries(session: Any) -> None:
    model = _model(session, "events", "put_events")
    request = shapes.request({"Entries": [{"Source": "s", "Detail": {"n": 1}}]},
                             model.input_shape)
    assert request == {"Entries": [{"Source": "s", "Detail": '{"n":1}'}]}


def test_dynamodb_items_keep_their_attribute_names(session: Any) -> None:
    model = _model(session, "dynamodb", "get_item")
    raw = {"Item": {"id": {"S": "1"}, "nested": {"M": {"lower": {"N": "2"}}}},
           "ResponseMetadata": {"RequestId": "r"}}
    assert shapes.response(raw, model.output_shape) == {
        "Item": {"id": {"S": "1"}, "nested": {"M": {"lower": {"N": "2"}}}}}


def test_sdk_responses_are_pascal_cased_with_text_timestamps(session: Any) -> None:
    model = _model(session, "stepfunctions", "describe_execution")
    raw = {"executionArn": "arn", "status": "SUCCEEDED", "inputDetails": {"included": True},
           "startDate": datetime.datetime(2026, 1, 2, 3, 4, 5,
                                          tzinfo=datetime.UTC)}
    assert shapes.response(raw, model.output_shape) == {
        "ExecutionArn": "arn", "Status": "SUCCEEDED", "InputDetails": {"Included": True},
        "StartDate": "2026-01-02T03:04:05Z"}
    # Optimised integrations (the Java SDK v1) write instants as epoch milliseconds.
    assert shapes.response(raw, model.output_shape, epoch_millis=True)["StartDate"] == \
        1767323045000


def test_an_s3_body_is_read_as_text(session: Any) -> None:
    """LocalStack's recorded test_s3_get_object: "Body": "text data"."""
    model = _model(session, "s3", "get_object")
    body = StreamingBody(io.BytesIO(b"text data"), len(b"text data"))
    result = shapes.response({"Body": body, "ContentLength": 9, "ETag": '"e"'},
                             model.output_shape)
    assert result == {"Body": "text data", "ContentLength": 9, "ETag": '"e"'}


def test_optimised_results_carry_the_sdk_http_metadata() -> None:
    """The keys and header spelling of LocalStack's recorded putItem result."""
    metadata = {"RequestId": "RID", "HTTPStatusCode": 200, "HTTPHeaders": {
        "content-type": "application/x-amz-json-1.0", "content-length": "2",
        "x-amzn-requestid": "RID", "x-amz-crc32": "2745614147", "server": "Server",
        "connection": "keep-alive", "date": "D"}}
    result = responses.optimised_result(parse("arn:aws:states:::dynamodb:putItem"), {},
                                        metadata)
    assert list(result) == ["SdkHttpMetadata", "SdkResponseMetadata"]
    http = result["SdkHttpMetadata"]
    assert set(http["HttpHeaders"]) == {"Connection", "Content-Length", "Content-Type", "Date",
                                        "Server", "x-amz-crc32", "x-amzn-RequestId"}
    assert http["AllHttpHeaders"]["Content-Length"] == ["2"]
    assert http["HttpStatusCode"] == 200
    assert result["SdkResponseMetadata"] == {"RequestId": "RID"}
    # putEvents answers with the response alone (test_put_events_base).
    events = responses.optimised_result(parse("arn:aws:states:::events:putEvents"),
                                        {"Entries": [], "FailedEntryCount": 0}, metadata)
    assert events == {"Entries": [], "FailedEntryCount": 0}


def test_state_machines_are_found_by_name_or_arn() -> None:
    definition = {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}
    table = StateMachines({
        "Child": definition,
        "arn:aws:states:us-east-1:123456789012:stateMachine:Other": definition})
    for reference, name in [
            ("Child", "Child"),
            ("arn:aws:states:us-east-1:123456789012:stateMachine:Child", "Child"),
            ("arn:aws:states:us-east-1:123456789012:stateMachine:Child:prod", "Child"),
            ("Other", "Other")]:
        found = table.find(reference)
        assert found is not None and found[0] == name
        assert found[1].start_at == "P"
    assert table.find("arn:aws:states:us-east-1:123456789012:stateMachine:Missing") is None
