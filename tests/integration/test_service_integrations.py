"""AWS service integrations in Task states, run through the CLI against moto's server.

The server is the one ``examples/local-aws/start`` runs (a real ``moto.server`` process
on 127.0.0.1, emptied before each test); the workflows are app folders
(``workflow.json`` + ``functions/``) run with ``faastlane run``, or composed actions run
as their own program. Every result and error is checked in the shape AWS gives it
(LocalStack's recorded snapshots), and what the calls wrote is read back from moto.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .apps import faastlane, write_app
from .local_aws import (
    LocalAws,
    fresh_aws,  # noqa: F401  (a pytest fixture)
    local_aws_endpoints,  # noqa: F401  (a pytest fixture)
)

BUCKET = "faastlane-service-tests"
ACCOUNT = "123456789012"

LABEL = """
def handler(event, context):
    score = sum(1 if w in ("good", "great") else -1 if w in ("bad", "awful") else 0
                for w in event["text"].split())
    return {"label": "positive" if score > 0 else "negative", "score": score}
"""


def _ok(result: Any) -> Any:
    assert result.code == 0, result.stderr
    return result.json


def _http_metadata(result: dict[str, Any]) -> None:
    """The SdkHttpMetadata/SdkResponseMetadata pair of an optimised integration."""
    http = result["SdkHttpMetadata"]
    assert http["HttpStatusCode"] == 200
    assert set(http) == {"AllHttpHeaders", "HttpHeaders", "HttpStatusCode"}
    assert http["AllHttpHeaders"]["Content-Type"] == [http["HttpHeaders"]["Content-Type"]]
    assert result["SdkResponseMetadata"]["RequestId"] == \
        http["HttpHeaders"]["x-amzn-RequestId"]


def _mixed_workflow() -> dict[str, Any]:
    """A Python function, then every supported integration, names taken from the input
    with ``.$`` paths."""
    return {"StartAt": "Label", "States": {
        "Label": {"Type": "Task", "Resource": "label", "ResultPath": "$.label",
                  "Next": "Save"},
        "Save": {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:putItem",
                 "Parameters": {"TableName.$": "$.table",
                                "Item": {"review_id": {"S.$": "$.id"},
                                         "label": {"S.$": "$.label.label"},
                                         "score": {"N.$": "States.Format('{}', $.label.score)"}}},
                 "ResultPath": "$.saved", "Next": "Count"},
        "Count": {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:updateItem",
                  "Parameters": {"TableName.$": "$.table", "Key": {"review_id": {"S.$": "$.id"}},
                                 "UpdateExpression": "SET seen = :one",
                                 "ExpressionAttributeValues": {":one": {"N": "1"}},
                                 "ReturnValues": "ALL_NEW"},
                  "ResultSelector": {"seen.$": "$.Attributes.seen.N"},
                  "ResultPath": "$.counted", "Next": "Read"},
        "Read": {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:getItem",
                 "Parameters": {"TableName.$": "$.table", "Key": {"review_id": {"S.$": "$.id"}}},
                 "ResultPath": "$.read", "Next": "Forget"},
        "Forget": {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:deleteItem",
                   "Parameters": {"TableName.$": "$.table",
                                  "Key": {"review_id": {"S": "stale"}}},
                   "ResultPath": "$.forgot", "Next": "Store"},
        "Store": {"Type": "Task", "Resource": "arn:aws:states:::aws-sdk:s3:putObject",
                  "Parameters": {"Bucket": BUCKET, "Key.$": "$.id", "Body.$": "$.label"},
                  "ResultPath": "$.stored", "Next": "Fetch"},
        "Fetch": {"Type": "Task", "Resource": "arn:aws:states:::aws-sdk:s3:getObject",
                  "Parameters": {"Bucket": BUCKET, "Key.$": "$.id"},
                  "ResultPath": "$.fetched", "Next": "Notify"},
        "Notify": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish",
                   "Parameters": {"TopicArn.$": "$.topic", "Message.$": "$.label",
                                  "Subject": "review"},
                   "ResultPath": "$.notified", "Next": "Queue"},
        "Queue": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage",
                  "Parameters": {"QueueUrl.$": "$.queue", "MessageBody.$": "$.label"},
                  "ResultPath": "$.queued", "Next": "Announce"},
        "Announce": {"Type": "Task", "Resource": "arn:aws:states:::events:putEvents",
                     "Parameters": {"Entries": [{"Source": "faastlane.tests",
                                                 "DetailType": "review",
                                                 "Detail.$": "$.label"}]},
                     "ResultPath": "$.announced", "End": True}}}


def _inputs(aws: LocalAws) -> dict[str, Any]:
    queue = aws.client("sqs").get_queue_url(
        QueueName=aws.exports["SENTIMENT_REVIEW_QUEUE"])["QueueUrl"]
    return {"id": "r-1", "text": "great phone good battery", "table":
            aws.exports["SENTIMENT_TABLE"], "topic": aws.exports["SENTIMENT_TOPIC_ARN"],
            "queue": queue}


def test_a_function_and_every_integration_through_faastlane_run(aws: LocalAws,
                                                                tmp_path: Path) -> None:
    aws.client("s3").create_bucket(Bucket=BUCKET)
    table = aws.exports["SENTIMENT_TABLE"]
    aws.client("dynamodb").put_item(TableName=table, Item={"review_id": {"S": "stale"}})
    app = write_app(tmp_path / "app", _mixed_workflow(), {"label": LABEL})
    request = _inputs(aws)
    out = _ok(faastlane("run", str(app), "--input", json.dumps(request),
                        env=aws.environment()))

    label = {"label": "positive", "score": 2}
    assert out["label"] == label
    _http_metadata(out["saved"])
    assert set(out["saved"]) == {"SdkHttpMetadata", "SdkResponseMetadata"}  # as recorded
    assert out["counted"] == {"seen": "1"}
    _http_metadata(out["read"])
    assert out["read"]["Item"] == {"review_id": {"S": "r-1"}, "label": {"S": "positive"},
                                   "score": {"N": "2"}, "seen": {"N": "1"}}
    assert set(out["forgot"]) == {"SdkHttpMetadata", "SdkResponseMetadata"}
    # aws-sdk: the SDK's response, PascalCase, no metadata; the body read as text.
    assert "ResponseMetadata" not in out["stored"] and out["stored"]["ETag"]
    assert out["fetched"]["Body"] == json.dumps(label, separators=(",", ":"))
    assert out["fetched"]["ContentLength"] == len(out["fetched"]["Body"])
    assert out["fetched"]["ETag"] == out["stored"]["ETag"]
    _http_metadata(out["notified"])
    assert out["notified"]["MessageId"]
    _http_metadata(out["queued"])
    assert {"MD5OfMessageBody", "MessageId"} <= set(out["queued"])
    assert out["announced"]["FailedEntryCount"] == 0
    assert len(out["announced"]["Entries"]) == 1 and "EventId" in out["announced"]["Entries"][0]
    assert set(out["announced"]) == {"Entries", "FailedEntryCount"}

    # What landed: the item (the stale one deleted), the object, the topic, the queue.
    assert aws.items(table) == {"r-1": {"review_id": "r-1", "label": "positive", "score": 2,
                                        "seen": 1}}
    body = aws.client("s3").get_object(Bucket=BUCKET, Key="r-1")["Body"].read()
    assert json.loads(body) == label
    messages = aws.drain_queue(aws.exports["SENTIMENT_REVIEW_QUEUE"])
    envelopes = [m for m in messages if m.get("Type") == "Notification"]
    assert [(e["Subject"], json.loads(e["Message"])) for e in envelopes] == [("review", label)]
    assert label in [m for m in messages if m.get("Type") != "Notification"]


def _catching(*states: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """States run in order, each catching every error into $.<name>."""
    machine: dict[str, Any] = {"StartAt": states[0][0], "States": {}}
    for i, (name, state) in enumerate(states):
        after = states[i + 1][0] if i + 1 < len(states) else None
        state = {**state, **({"Next": after} if after else {"End": True})}
        state["Catch"] = [{"ErrorEquals": state.pop("Catches"), "ResultPath": f"$.{name}",
                           **({"Next": after} if after else {"Next": "Done"})}]
        machine["States"][name] = state
    machine["States"]["Done"] = {"Type": "Succeed"}
    return machine


def test_service_errors_have_aws_names_and_obey_retry_and_catch(aws: LocalAws,
                                                                tmp_path: Path) -> None:
    aws.client("s3").create_bucket(Bucket=BUCKET)
    table = aws.exports["SENTIMENT_TABLE"]
    aws.client("dynamodb").put_item(TableName=table, Item={"review_id": {"S": "taken"}})
    workflow = _catching(
        ("Claim", {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:putItem",
                   "Parameters": {"TableName": table, "Item": {"review_id": {"S": "taken"}},
                                  "ConditionExpression": "attribute_not_exists(review_id)"},
                   "Retry": [{"ErrorEquals": ["DynamoDB.ConditionalCheckFailedException"],
                              "IntervalSeconds": 1, "MaxAttempts": 1}],
                   "Catches": ["DynamoDB.ConditionalCheckFailedException"]}),
        ("Fetch", {"Type": "Task", "Resource": "arn:aws:states:::aws-sdk:s3:getObject",
                   "Parameters": {"Bucket": BUCKET, "Key": "absent"},
                   "Catches": ["S3.NoSuchKeyException"]}),
        ("Notify", {"Type": "Task", "Resource": "arn:aws:states:::sns:publish",
                    "Parameters": {"TopicArn": f"arn:aws:sns:us-east-1:{ACCOUNT}:missing",
                                   "Message": "m"},
                    "Catches": ["SNS.NotFoundException"]}),
        ("Queue", {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage",
                   "Parameters": {"QueueUrl": f"{aws.exports['AWS_ENDPOINT_URL']}/{ACCOUNT}/"
                                              "missing", "MessageBody": "m"},
                   "Catches": ["States.TaskFailed"]}))
    app = write_app(tmp_path / "app", workflow, {"label": LABEL})
    trace = tmp_path / "trace.jsonl"
    out = _ok(faastlane("run", str(app), "--trace", str(trace), env=aws.environment()))

    assert out["Claim"]["Error"] == "DynamoDB.ConditionalCheckFailedException"
    assert out["Claim"]["Cause"].startswith(
        "The conditional request failed (Service: AmazonDynamoDBv2; Status Code: 400; "
        "Error Code: ConditionalCheckFailedException; Request ID: ")
    assert out["Claim"]["Cause"].endswith("; Proxy: null)")
    assert out["Fetch"]["Error"] == "S3.NoSuchKeyException"
    assert out["Fetch"]["Cause"].startswith(
        "The specified key does not exist. (Service: S3, Status Code: 404, Request ID: ")
    assert out["Notify"]["Error"] == "SNS.NotFoundException"
    assert "(Service: AmazonSNS; Status Code: 404; Error Code: NotFound;" in \
        out["Notify"]["Cause"]
    assert out["Queue"]["Error"] == "SQS.QueueDoesNotExistException"

    records = [json.loads(line) for line in trace.read_text().splitlines()[1:]]
    calls = [(r["state"], r["error"]) for r in records if r["type"] == "Service"]
    # The Retrier ran Claim once more; every call was the Orchestrator's.
    assert calls == [("Claim", "DynamoDB.ConditionalCheckFailedException")] * 2 + [
        ("Fetch", "S3.NoSuchKeyException"), ("Notify", "SNS.NotFoundException"),
        ("Queue", "SQS.QueueDoesNotExistException")]
    assert {r["placement"] for r in records if r["type"] == "Service"} == {"orchestrator"}


def test_an_uncaught_service_error_fails_the_run_naming_the_state(aws: LocalAws,
                                                                  tmp_path: Path) -> None:
    workflow = {"StartAt": "Read", "States": {"Read": {
        "Type": "Task", "Resource": "arn:aws:states:::dynamodb:getItem", "End": True,
        "Parameters": {"TableName": "no-such-table", "Key": {"id": {"S": "1"}}}}}}
    app = write_app(tmp_path / "app", workflow, {"label": LABEL})
    result = faastlane("run", str(app), env=aws.environment())
    assert result.code == 1, result.stderr
    assert result.json["Error"] == "DynamoDB.ResourceNotFoundException"
    assert "failed in state 'Read'" in result.stderr
    assert "Traceback" not in result.stderr


def test_jsonata_arguments_and_output(aws: LocalAws, tmp_path: Path) -> None:
    table = aws.exports["SENTIMENT_TABLE"]
    workflow = {"QueryLanguage": "JSONata", "StartAt": "Save", "States": {"Save": {
        "Type": "Task", "Resource": "arn:aws:states:::dynamodb:putItem", "End": True,
        "Arguments": {"TableName": table,
                      "Item": {"review_id": {"S": "{% $states.input.id %}"},
                               "words": {"N": "{% $string($count($split("
                                                   "$states.input.text, ' '))) %}"}}},
        "Output": {"status": "{% $states.result.SdkHttpMetadata.HttpStatusCode %}"}}}}
    app = write_app(tmp_path / "app", workflow, {"label": LABEL})
    out = _ok(faastlane("run", str(app), "--input", '{"id": "j-1", "text": "a b c"}',
                        env=aws.environment()))
    assert out == {"status": 200}
    assert aws.items(table) == {"j-1": {"review_id": "j-1", "words": 3}}


CHILDREN = {
    "Double": {"StartAt": "Twice", "States": {"Twice": {
        "Type": "Pass", "Parameters": {"doubled.$": "States.MathAdd($.n, $.n)"}, "End": True}}},
    f"arn:aws:states:us-east-1:{ACCOUNT}:stateMachine:Refuse": {"StartAt": "No", "States": {
        "No": {"Type": "Fail", "Error": "Refused", "Cause": "not today"}}},
    "Label": {"StartAt": "Run", "States": {"Run": {"Type": "Task", "Resource": "label",
                                                  "End": True}}},
}


def _start(pattern: str, machine: str, **parameters: Any) -> dict[str, Any]:
    return {"Type": "Task", "Resource": f"arn:aws:states:::states:startExecution{pattern}",
            "Parameters": {"StateMachineArn":
                           f"arn:aws:states:us-east-1:{ACCOUNT}:stateMachine:{machine}",
                           **parameters}}


def test_start_execution_runs_the_templates_other_machines_in_process(
        aws: LocalAws, tmp_path: Path) -> None:
    workflow = _catching(
        ("fire", {**_start("", "Double", Input={"n": 1}), "Catches": ["States.ALL"]}),
        ("sync", {**_start(".sync", "Double", **{"Input.$": "$.in", "Name": "d1"}),
                  "Catches": ["States.ALL"]}),
        ("sync2", {**_start(".sync:2", "Label", Input={"text": "awful"}),
                   "Catches": ["States.ALL"]}),
        ("refused", {**_start(".sync", "Refuse", Name="r1"), "Catches": ["States.TaskFailed"]}),
        ("missing", {**_start(".sync", "Nothing"), "Catches": ["States.ALL"]}))
    for name in ("fire", "sync", "sync2"):
        workflow["States"][name]["ResultPath"] = f"$.{name}"
    app = write_app(tmp_path / "app", workflow, {"label": LABEL})
    action = tmp_path / "action"
    _ok_compose = faastlane("compose", str(app), "-o", str(action), env=aws.environment())
    assert _ok_compose.code == 0, _ok_compose.stderr
    (action / "state_machines.json").write_text(json.dumps(CHILDREN))
    run = subprocess.run([sys.executable, str(action), "--input", '{"in": {"n": 21}}'],
                         capture_output=True, text=True, timeout=120, env=aws.environment())
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)

    fire = out["fire"]
    assert fire["ExecutionArn"].startswith(f"arn:aws:states:us-east-1:{ACCOUNT}:execution:Double:")
    assert isinstance(fire["StartDate"], int)
    _http_metadata(fire)
    sync = out["sync"]
    assert sync["Output"] == '{"doubled":42}' and sync["Input"] == '{"n":21}'
    assert {k: sync[k] for k in ("ExecutionArn", "Name", "StateMachineArn", "Status",
                                 "InputDetails", "OutputDetails")} == {
        "ExecutionArn": f"arn:aws:states:us-east-1:{ACCOUNT}:execution:Double:d1",
        "Name": "d1", "StateMachineArn": f"arn:aws:states:us-east-1:{ACCOUNT}:stateMachine:Double",
        "Status": "SUCCEEDED", "InputDetails": {"Included": True},
        "OutputDetails": {"Included": True}}
    assert sync["StartDate"] <= sync["StopDate"]
    # .sync:2 gives Input and Output as JSON; the child called the action's function.
    assert out["sync2"]["Input"] == {"text": "awful"}
    assert out["sync2"]["Output"] == {"label": "negative", "score": -1}
    refused = out["refused"]
    assert refused["Error"] == "States.TaskFailed"
    cause = json.loads(refused["Cause"])
    assert (cause["Error"], cause["Cause"], cause["Status"], cause["Name"]) == (
        "Refused", "not today", "FAILED", "r1")
    assert out["missing"]["Error"] == "StepFunctions.StateMachineDoesNotExistException"


def test_under_process_isolation_services_are_called_by_the_orchestrator(
        aws: LocalAws, tmp_path: Path) -> None:
    """The function runs in its sandbox; the call to DynamoDB is the Orchestrator's, in
    its own process, with its own environment (the endpoint)."""
    table = aws.exports["SENTIMENT_TABLE"]
    workflow = {"StartAt": "Label", "States": {
        "Label": {"Type": "Task", "Resource": "label", "ResultPath": "$.label", "Next": "Save"},
        "Save": {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:putItem", "End": True,
                 "Parameters": {"TableName": table, "Item": {
                     "review_id": {"S.$": "$.id"}, "label": {"S.$": "$.label.label"}}}}}}
    app = write_app(tmp_path / "app", workflow, {"label": LABEL},
                    settings={"untrusted": ["label"]})
    trace = tmp_path / "trace.jsonl"
    _ok(faastlane("run", str(app), "--isolation", "process", "--trace", str(trace),
                  "--input", '{"id": "p-1", "text": "bad"}', env=aws.environment()))
    records = {r["type"]: r for r in map(json.loads, trace.read_text().splitlines()[1:])
               if r.get("type") in ("Function", "Service")}
    assert records["Function"]["placement"] == "sandbox"
    assert records["Service"]["placement"] == "orchestrator"
    assert records["Service"]["pid"] != records["Function"]["pid"]
    assert aws.items(table) == {"p-1": {"review_id": "p-1", "label": "negative"}}

    action = tmp_path / "action"
    composed = faastlane("compose", str(app), "-o", str(action), "--isolation", "process")
    assert composed.code == 0, composed.stderr
    plan = json.loads((action / "plan.json").read_text())
    assert plan["states"]["Save"]["placement"] == "orchestrator"
    assert plan["states"]["Save"]["integration"] == "arn:aws:states:::dynamodb:putItem"
    assert plan["states"]["Label"]["placement"] == "sandbox"


def test_without_boto3_the_run_says_so(aws: LocalAws, tmp_path: Path) -> None:
    """The action's runtime is standard-library only: run without site-packages (-S),
    a service call is a States.Runtime error that says what is missing."""
    workflow = {"StartAt": "Save", "States": {"Save": {
        "Type": "Task", "Resource": "arn:aws:states:::sns:publish", "End": True,
        "Parameters": {"TopicArn": aws.exports["SENTIMENT_TOPIC_ARN"], "Message": "m"}}}}
    app = write_app(tmp_path / "app", workflow, {"label": LABEL})
    action = tmp_path / "action"
    composed = faastlane("compose", str(app), "-o", str(action))
    assert composed.code == 0, composed.stderr
    run = subprocess.run([sys.executable, "-S", str(action)], capture_output=True, text=True,
                         timeout=120, env=aws.environment())
    assert run.returncode == 1
    error = json.loads(run.stdout)
    assert error["Error"] == "States.Runtime"
    assert "needs boto3" in error["Cause"] and "'Save'" in error["Cause"]
    assert "Traceback" not in run.stderr


def test_validate_points_at_what_cannot_run(tmp_path: Path) -> None:
    workflow = {"StartAt": "Ask", "States": {
        "Ask": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                "Parameters": {"QueueUrl": "q", "MessageBody": {"t.$": "$$.Task.Token"}},
                "Next": "Scan"},
        "Scan": {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:scan",
                 "Parameters": {"TableName": "t"}, "End": True}}}
    app = write_app(tmp_path / "app", workflow, {"label": LABEL})
    result = faastlane("validate", str(app))
    assert result.code == 1, result.stderr
    assert "workflow.json: /States/Ask/Resource: " in result.stdout
    assert ".waitForTaskToken" in result.stdout
    assert "workflow.json: /States/Scan/Resource: " in result.stdout
    assert "arn:aws:states:::aws-sdk:dynamodb:scan" in result.stdout
    refused = faastlane("run", str(app))  # a workflow refused as invalid: exit 3
    assert refused.code == 3 and "/States/Ask/Resource" in refused.stderr


def test_a_workflow_starts_itself_and_task_timeouts_apply(tmp_path: Path) -> None:
    """The workflow is among the machines startExecution may run (by its own name); a
    Task's TimeoutSeconds bounds a service call as it bounds a function."""
    workflow = {"StartAt": "Child?", "States": {
        "Child?": {"Type": "Choice", "Default": "Start",
                   "Choices": [{"Variable": "$.child", "IsPresent": True, "Next": "Slow"}]},
        "Slow": {"Type": "Wait", "Seconds": 3, "End": True},
        "Start": {"Type": "Task", "Resource": "arn:aws:states:::states:startExecution.sync:2",
                  "Parameters": {"StateMachineArn": "selfish", "Input": {"child": True}},
                  "TimeoutSeconds": 1,
                  "Catch": [{"ErrorEquals": ["States.Timeout"], "Next": "Gave up"}],
                  "End": True},
        "Gave up": {"Type": "Pass", "End": True}}}
    app = write_app(tmp_path / "selfish", workflow, {"label": LABEL})
    out = _ok(faastlane("run", str(app)))
    assert out == {"Error": "States.Timeout", "Cause": "Task 'Start' timed out after 1 seconds"}


@pytest.mark.parametrize("placement", ["processes", "threads"])
def test_map_iterations_call_services(aws: LocalAws, tmp_path: Path, placement: str) -> None:
    """Iterations in forked processes (the default) make their own clients, never their
    parent's connections; iterations on threads (-Th) share the process's clients."""
    table = aws.exports["SENTIMENT_TABLE"]
    workflow = {"StartAt": "Each", "States": {"Each": {
        "Type": "Map", "ItemsPath": "$.ids", "End": True,
        "ItemSelector": {"id.$": "$$.Map.Item.Value", "table.$": "$.table"},
        "ItemProcessor": {"StartAt": "Save", "States": {"Save": {
            "Type": "Task", "Resource": "arn:aws:states:::dynamodb:putItem", "End": True,
            "Parameters": {"TableName.$": "$.table", "Item": {"review_id": {"S.$": "$.id"}}},
            "ResultSelector": {"status.$": "$.SdkHttpMetadata.HttpStatusCode"}}}}}}}
    app = write_app(tmp_path / "app", workflow, {"label": LABEL})
    ids = [f"m-{i}" for i in range(6)]
    flags = ["--threads-only"] if placement == "threads" else []
    out = _ok(faastlane("run", str(app), *flags, "--input",
                        json.dumps({"ids": ids, "table": table}), env=aws.environment()))
    assert out == [{"status": 200}] * len(ids)
    assert sorted(aws.items(table)) == ids


def test_a_machine_that_starts_itself_forever_is_stopped(tmp_path: Path) -> None:
    """Child executions nest in-process; past 32 the innermost start fails (AWS's
    ExecutionLimitExceeded), and every level's cause is kept to AWS's 32768 characters."""
    workflow = {"StartAt": "Again", "States": {"Again": {
        "Type": "Task", "Resource": "arn:aws:states:::states:startExecution.sync:2",
        "Parameters": {"StateMachineArn": "forever", "Input.$": "$"}, "End": True}}}
    app = write_app(tmp_path / "forever", workflow, {"label": LABEL})
    result = faastlane("run", str(app), timeout=120)
    assert result.code == 1, result.stderr
    assert result.json["Error"] == "States.TaskFailed"
    # DescribeExecution's answer of the failed child, cut to AWS's limit.
    assert result.json["Cause"].startswith('{"Cause":')
    assert len(result.json["Cause"]) == 32768
