"""``faastlane serve``'s Step Functions API through a real boto3 ``stepfunctions`` client:
the served workflow as a state machine, executions started, described, listed, stopped,
their histories the events ``faastlane run --history`` writes, and AWS's error shapes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

from .apps import ROOT, chain, faastlane, task, write_app

ORDERS = """
import time

def handler(event, context):
    if event.get("fail"):
        raise ValueError("card declined")
    time.sleep(event.get("sleep", 0))
    return {"total": sum(event.get("items", [])), "sleep": event.get("sleep", 0)}
"""
WORKFLOW = chain(("Price", task("price", ResultPath="$.priced")),
                 ("Done", {"Type": "Pass", "OutputPath": "$.priced", "End": True}))


@pytest.fixture
def states(tmp_path: Path) -> Iterator[tuple[object, str, Path]]:
    app = write_app(tmp_path / "orders", WORKFLOW, {"price": ORDERS})
    yield from _served(app, tmp_path / "serve.log")


def _served(app: Path, log: Path, *options: str) -> Iterator[tuple[object, str, Path]]:
    with open(log, "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "faastlane", "serve", str(app), "--port", "0", *options],
            cwd=ROOT, stderr=stderr, stdout=subprocess.DEVNULL, env=dict(os.environ))
    try:
        url = None
        deadline = time.monotonic() + 60
        while url is None and time.monotonic() < deadline and process.poll() is None:
            found = re.search(r"on (http://127\.0\.0\.1:\d+)", log.read_text())
            url = found[1] if found else None
            time.sleep(0.1)
        assert url is not None, log.read_text()
        # inject_host_prefix: StartSyncExecution's "sync-" host prefix has no local name.
        client = boto3.client("stepfunctions", endpoint_url=url, region_name="us-east-1",
                              aws_access_key_id="testing", aws_secret_access_key="testing",
                              config=Config(inject_host_prefix=False,
                                            retries={"max_attempts": 1}))
        yield client, client.list_state_machines()["stateMachines"][0]["stateMachineArn"], app
    finally:
        process.kill()
        process.wait()


def _finished(client, arn: str) -> dict:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        described = client.describe_execution(executionArn=arn)
        if described["status"] != "RUNNING":
            return described
        time.sleep(0.05)
    raise AssertionError(f"{arn} still running")


def test_the_workflow_is_a_state_machine_whose_executions_run_and_keep_their_history(
        states, tmp_path: Path) -> None:
    client, machine, app = states
    described = client.describe_state_machine(stateMachineArn=machine)
    assert described["name"] == "orders" and described["status"] == "ACTIVE"
    assert json.loads(described["definition"]) == WORKFLOW
    text = '{"items": [1, 2, 39]}'
    started = client.start_execution(stateMachineArn=machine, name="order-1", input=text)
    assert started["executionArn"].endswith(":execution:orders:order-1")
    done = _finished(client, started["executionArn"])
    assert done["status"] == "SUCCEEDED" and json.loads(done["output"]) == {
        "total": 42, "sleep": 0}
    assert done["input"] == text and done["stopDate"] >= done["startDate"]
    # The same events as a local run's history, in order, with the input as given.
    events = client.get_execution_history(executionArn=started["executionArn"])["events"]
    history = tmp_path / "history.json"
    assert faastlane("run", str(app), "--input", text, "--history", str(history)).code == 0
    ran = json.loads(history.read_text())["events"]
    assert [(e["type"], e["id"], e["previousEventId"]) for e in events] == \
        [(e["type"], e["id"], e["previousEventId"]) for e in ran]
    assert events[0]["executionStartedEventDetails"]["input"] == text
    newest_first = client.get_execution_history(executionArn=started["executionArn"],
                                                reverseOrder=True, maxResults=2)
    assert [e["type"] for e in newest_first["events"]] == [
        "ExecutionSucceeded", "PassStateExited"] and newest_first["nextToken"]
    # A second start of the same name and input is the first one, as on AWS.
    again = client.start_execution(stateMachineArn=machine, name="order-1", input=text)
    assert again["executionArn"] == started["executionArn"]
    synced = client.start_sync_execution(stateMachineArn=machine, input='{"items": [5]}')
    assert synced["status"] == "SUCCEEDED" and json.loads(synced["output"])["total"] == 5
    listed = client.list_executions(stateMachineArn=machine)["executions"]
    assert [e["status"] for e in listed] == ["SUCCEEDED", "SUCCEEDED"]
    assert listed[1]["name"] == "order-1"  # newest first
    page = client.list_executions(stateMachineArn=machine, maxResults=1)
    assert len(page["executions"]) == 1 and page["nextToken"]


def test_a_failed_execution_says_why_in_its_description_and_history(states) -> None:
    client, machine, _ = states
    started = client.start_execution(stateMachineArn=machine, input='{"fail": true}')
    done = _finished(client, started["executionArn"])
    assert done["status"] == "FAILED" and done["error"] == "ValueError"
    assert json.loads(done["cause"])["errorMessage"] == "card declined"
    events = client.get_execution_history(executionArn=started["executionArn"])["events"]
    assert events[-1]["type"] == "ExecutionFailed"
    assert events[-1]["executionFailedEventDetails"]["error"] == "ValueError"


def test_a_stopped_execution_is_aborted_and_the_next_one_runs(states) -> None:
    client, machine, _ = states
    slow = client.start_execution(stateMachineArn=machine, input='{"sleep": 30}')
    time.sleep(1)  # running now
    queued = client.start_execution(stateMachineArn=machine, input='{"items": [7]}')
    client.stop_execution(executionArn=queued["executionArn"], error="Changed",
                          cause="customer changed the order")
    client.stop_execution(executionArn=slow["executionArn"])
    stopped = client.describe_execution(executionArn=slow["executionArn"])
    assert stopped["status"] == "ABORTED" and "stopDate" in stopped
    assert client.describe_execution(executionArn=queued["executionArn"])["error"] == "Changed"
    events = client.get_execution_history(executionArn=queued["executionArn"])["events"]
    assert [e["type"] for e in events] == ["ExecutionStarted", "ExecutionAborted"]
    assert events[1]["executionAbortedEventDetails"] == {
        "error": "Changed", "cause": "customer changed the order"}
    started = time.monotonic()
    after = client.start_sync_execution(stateMachineArn=machine, input='{"items": [1]}')
    assert after["status"] == "SUCCEEDED" and time.monotonic() - started < 25
    assert client.describe_execution(executionArn=queued["executionArn"])["status"] == \
        "ABORTED"  # never ran


def test_errors_have_aws_names(states) -> None:
    client, machine, _ = states
    execution = machine.replace(":stateMachine:", ":execution:") + ":nope"
    with pytest.raises(client.exceptions.ExecutionDoesNotExist):
        client.describe_execution(executionArn=execution)
    with pytest.raises(client.exceptions.StateMachineDoesNotExist):
        client.start_execution(stateMachineArn=machine + "-other", input="{}")
    with pytest.raises(client.exceptions.InvalidArn):
        client.describe_state_machine(stateMachineArn="orders")
    with pytest.raises(client.exceptions.InvalidExecutionInput):
        client.start_execution(stateMachineArn=machine, input="{not json")
    with pytest.raises(client.exceptions.InvalidName):
        client.start_execution(stateMachineArn=machine, name="has space", input="{}")
    client.start_execution(stateMachineArn=machine, name="once", input="{}")
    with pytest.raises(client.exceptions.ExecutionAlreadyExists):
        client.start_execution(stateMachineArn=machine, name="once", input='{"x": 1}')


# Two executions that can end only together: each marks that it runs, then waits for the
# other's mark. One warm copy at a time would leave the first waiting in vain.
MEET = """
import os, time

def handler(event, context):
    open(event["mine"], "w").close()
    deadline = time.monotonic() + 60
    while not os.path.exists(event["other"]):
        if time.monotonic() > deadline:
            return {"met": False, "pid": os.getpid()}
        time.sleep(0.02)
    return {"met": True, "pid": os.getpid()}
"""


def test_executions_run_at_once_on_warm_copies_up_to_the_concurrency(tmp_path: Path
                                                                      ) -> None:
    app = write_app(tmp_path / "meet", chain(("Meet", task("meet"))), {"meet": MEET})
    served = _served(app, tmp_path / "serve.log", "--concurrency", "2", "--isolation",
                     "none")
    client, machine, _ = next(served)
    try:
        a, b = str(tmp_path / "a"), str(tmp_path / "b")
        first = client.start_execution(stateMachineArn=machine,
                                       input=json.dumps({"mine": a, "other": b}))
        second = client.start_execution(stateMachineArn=machine,
                                        input=json.dumps({"mine": b, "other": a}))
        outputs = [json.loads(_finished(client, e["executionArn"])["output"])
                   for e in (first, second)]
        assert [o["met"] for o in outputs] == [True, True]
        assert outputs[0]["pid"] != outputs[1]["pid"]  # two copies of the action
    finally:
        served.close()
