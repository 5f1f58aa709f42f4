"""``faastlane run APP --history FILE``: the execution history of a real run, through the
CLI, with real functions, against histories AWS recorded (LocalStack's Step Functions
snapshot tests; ``tests/fixtures/history-lambda/`` names each source), and with branches
forked and functions in sandboxes (``--isolation process``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from history_normalise import lambda_payloads_dropped, matches, normalised

from .apps import chain, faastlane, task, write_app
from .local_aws import (
    LocalAws,
    fresh_aws,  # noqa: F401  (a pytest fixture)
    local_aws_endpoints,  # noqa: F401  (a pytest fixture)
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "history-lambda"
ARN = "arn:aws:lambda:us-east-1:123456789012:function:"

# The functions of LocalStack's tests (errorhandling/lambdafunctions/raise_exception.py,
# and functions answering the recorded payloads).
RAISE = 'def handler(event, context):\n    raise Exception("Some exception was raised.")\n'
HELLO = 'def handler(event, context):\n    return {"Return": "HelloWorld"}\n'
IDENTITY = "def handler(event, context):\n    return event\n"


def run_with_history(app: Path, tmp_path: Path, *args: str) -> tuple[Any, list[dict]]:
    out = tmp_path / "history.json"
    done = faastlane("run", str(app), "--history", str(out), *args)
    assert done.code in (0, 1), done.stderr
    return done.json, json.loads(out.read_text())["events"]


def recorded_case(name: str, resources: dict[str, str] | None = None,
                  function: str = "") -> tuple[dict, str, list[dict]]:
    case = json.loads((FIXTURES / f"{name}.json").read_text())
    definition = case["definition"]
    for state, resource in (resources or {}).items():
        definition["States"][state]["Resource"] = resource
    text = case["input"].replace("<lambda_function_name>", function)
    return definition, text, case["events"]


def assert_same_history(recorded_events: list[dict], ours: list[dict]) -> None:
    want = lambda_payloads_dropped(normalised(recorded_events))
    got = lambda_payloads_dropped(normalised(ours))
    assert [e["type"] for e in got] == [e["type"] for e in want]
    for w, g in zip(want, got, strict=True):
        assert matches(w, g), f"recorded {json.dumps(w)}\nours     {json.dumps(g)}"


def test_lambda_tasks_by_arn_record_lambda_function_events(tmp_path: Path) -> None:
    # test_lambda_task::test_invoke_pipe: LambdaFunctionScheduled/Started/Succeeded.
    definition, text, events = recorded_case(
        "lambda_pipe", {"step1": ARN + "one", "step2": ARN + "two"})
    app = write_app(tmp_path / "app", definition, {"one": HELLO, "two": HELLO})
    output, ours = run_with_history(app, tmp_path, "--input", text)
    assert output == {"Return": {"Return": "HelloWorld"}}
    assert_same_history(events, ours)


def test_a_failed_lambda_caught_records_lambda_function_failed(tmp_path: Path) -> None:
    # test_task_lambda::test_raise_exception_catch
    definition, text, events = recorded_case("lambda_catch", {"Start": ARN + "boom"}, "boom")
    app = write_app(tmp_path / "app", definition, {"boom": RAISE})
    output, ours = run_with_history(app, tmp_path, "--input", text)
    assert output["task_failed_error"]["Error"] == "Exception"
    assert_same_history(events, ours)


def test_lambda_invoke_records_task_events(tmp_path: Path) -> None:
    # test_lambda_task_service::test_invoke: TaskScheduled (resourceType lambda,
    # resource invoke, region, parameters), TaskStarted, TaskSucceeded.
    definition, text, events = recorded_case("invoke", function="same")
    app = write_app(tmp_path / "app", definition, {"same": IDENTITY})
    _, ours = run_with_history(app, tmp_path, "--input", text)
    assert_same_history(events, ours)


def test_lambda_invoke_failed_and_caught_records_task_failed(tmp_path: Path) -> None:
    # test_task_service_lambda::test_raise_exception_catch
    definition, text, events = recorded_case("invoke_catch", function="boom")
    app = write_app(tmp_path / "app", definition, {"boom": RAISE})
    _, ours = run_with_history(app, tmp_path, "--input", text)
    assert_same_history(events, ours)


def test_the_cause_cites_the_task_state_entered_event(tmp_path: Path) -> None:
    workflow = chain(("First", {"Type": "Pass"}),
                     ("Second", task("echo", InputPath="$.missing")))
    app = write_app(tmp_path / "app", workflow, {"echo": IDENTITY})
    output, events = run_with_history(app, tmp_path, "--input", "{}")
    entered = next(e for e in events if e["type"] == "TaskStateEntered")
    assert entered["id"] == 4
    assert f"(entered at the event id #{entered['id']})" in output["Cause"]
    failed = events[-1]
    assert failed["type"] == "ExecutionFailed" and failed["previousEventId"] == 4
    assert failed["executionFailedEventDetails"]["cause"] == output["Cause"]


def _parallel_app(root: Path) -> Path:
    def branch(name: str) -> dict:
        return {"StartAt": name, "States": {name: task("work")}}

    workflow = chain(("Fan", {"Type": "Parallel",
                              "Branches": [branch("A"), branch("B"), branch("C")]}),
                     ("Items", {"Type": "Map", "ItemsPath": "$", "ItemProcessor": branch("D"),
                                "End": True}))
    return write_app(root, workflow, {"work": "def handler(event, context):\n"
                                              "    return len(str(event))\n"})


def _shape(events: list[dict]) -> list[tuple]:
    """Events without times (and their order within a Parallel, which AWS leaves open)."""
    return [json.dumps(e, sort_keys=True) for e in normalised(events)]


@pytest.mark.parametrize("isolation", ["none", "process"])
def test_forked_branches_and_iterations_send_their_events_back(tmp_path: Path,
                                                               isolation: str) -> None:
    app = _parallel_app(tmp_path / "app")
    output, events = run_with_history(app, tmp_path, "--input", '{"a": 1}',
                                      "--isolation", isolation)
    assert output == [1, 1, 1]
    assert [e["id"] for e in events] == list(range(1, len(events) + 1))
    kinds = [e["type"] for e in events]
    assert kinds.count("TaskStateEntered") == 6 and kinds.count("LambdaFunctionSucceeded") == 6
    assert kinds.count("MapIterationStarted") == 3
    started = next(e["id"] for e in events if e["type"] == "ParallelStateStarted")
    firsts = [e for e in events if e["type"] == "TaskStateEntered"][:3]
    assert all(e["previousEventId"] == started for e in firsts)  # each branch starts there
    if isolation == "process":  # the same history as the functions on threads
        _, plain = run_with_history(app, tmp_path, "--input", '{"a": 1}',
                                    "--isolation", "none")
        assert _shape(events) == _shape(plain)


def test_no_history_without_the_option_a_bad_path_refused_and_graph_reads_it(
        tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", chain(("Only", task("echo"))), {"echo": IDENTITY})
    done = faastlane("run", str(app), "--input", "{}")
    assert done.code == 0 and not list(tmp_path.glob("*.json"))
    missing = faastlane("run", str(app), "--history", str(tmp_path / "no" / "h.json"))
    assert missing.code == 2 and "its folder does not exist" in missing.stderr
    assert "Traceback" not in missing.stderr
    run_with_history(app, tmp_path, "--input", "{}")
    drawn = faastlane("graph", str(app), "-o", str(tmp_path / "g.svg"), "--trace",
                      str(tmp_path / "history.json"))
    assert drawn.code == 0, drawn.stderr
    assert "Only" in (tmp_path / "g.svg").read_text()


def test_service_integrations_record_task_events(aws: LocalAws, tmp_path: Path) -> None:
    # The details AWS recorded for failed service calls (LocalStack's
    # test_put_item_no_such_table, test_no_such_bucket): TaskScheduled with the
    # parameters, region, resource and resourceType, TaskStarted, TaskFailed.
    caught = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Done"}]
    workflow = chain(
        ("Save", {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:putItem",
                  "Parameters": {"TableName": "no-such-table",
                                 "Item": {"id": {"S": "id1"}}}, "Catch": caught}),
        ("Done", {"Type": "Pass"}),
        ("List", {"Type": "Task", "Resource": "arn:aws:states:::aws-sdk:s3:listObjects",
                  "Parameters": {"Bucket": "no-such-bucket"}, "End": True}))
    app = write_app(tmp_path / "app", workflow, {})
    out = tmp_path / "history.json"
    done = faastlane("run", str(app), "--history", str(out), env=aws.environment())
    assert done.code == 1, done.stderr
    events = json.loads(out.read_text())["events"]
    assert [e["type"] for e in events] == [
        "ExecutionStarted", "TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskFailed",
        "TaskStateExited", "PassStateEntered", "PassStateExited", "TaskStateEntered",
        "TaskScheduled", "TaskStarted", "TaskFailed", "ExecutionFailed"]
    assert events[2]["taskScheduledEventDetails"] == {
        "resourceType": "dynamodb", "resource": "putItem", "region": "us-east-1",
        "parameters": '{"TableName":"no-such-table","Item":{"id":{"S":"id1"}}}'}
    assert events[3]["taskStartedEventDetails"] == {"resourceType": "dynamodb",
                                                    "resource": "putItem"}
    failed = events[4]["taskFailedEventDetails"]
    assert failed["error"] == "DynamoDB.ResourceNotFoundException"
    assert (failed["resourceType"], failed["resource"]) == ("dynamodb", "putItem")
    assert failed["cause"].startswith("Requested resource not found (Service: AmazonDynamoDBv2")
    listed = events[11]["taskFailedEventDetails"]
    assert (listed["resourceType"], listed["resource"]) == ("aws-sdk:s3", "listObjects")
    assert listed["error"] == "S3.NoSuchBucketException"
    assert events[12]["executionFailedEventDetails"]["error"] == "S3.NoSuchBucketException"
    assert [e["previousEventId"] for e in events] == [0, 0, *range(2, 13)]


@pytest.mark.parametrize("sections", [[], ["--threads-only"], ["--isolation", "process"]])
def test_a_failed_task_ends_its_failed_branch_aborted(tmp_path: Path,
                                                      sections: list[str]) -> None:
    # test_error_output::test_parallel_catch_error[PARALLEL_CATCH_ERROR_OUTPUT]: the
    # branch's Task fails (TaskFailed), the Task state ends with TaskStateAborted, the
    # Parallel fails and its Catch goes on. In a fork, on a thread, from a sandbox.
    definition, text, events = recorded_case("parallel_catch_error")
    branch = definition["States"]["ParallelState"]["Branches"][0]["States"]
    branch["ExecuteLambdaTask"]["Arguments"]["FunctionName"] = ARN + "boom"
    app = write_app(tmp_path / "app", definition, {"boom": RAISE})
    output, ours = run_with_history(app, tmp_path, "--input", text, *sections)
    assert output["result"]["stateError"]["Error"] == "Exception"
    assert [e["type"] for e in ours].count("TaskStateAborted") == 1
    assert_same_history(events, ours)
