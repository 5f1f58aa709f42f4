"""``faastlane serve`` through the CLI: a real boto3 Lambda client and plain OpenWhisk REST
calls against it, warm state across calls, and a stop that leaves nothing behind."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

from faastlane.runtime.platforms.shutdown import descendants

from .apps import ROOT, chain, task, write_app

COUNT = """
import os

calls = 0


def handler(event, context):
    global calls
    calls += 1
    if event.get("fail"):
        raise OrderRejected("card declined")
    if event.get("crash"):
        os._exit(3)
    return {"calls": calls, "request": len(context.aws_request_id), **event}


class OrderRejected(Exception):
    pass
"""


@dataclass
class Served:
    process: subprocess.Popen
    url: str
    scratch: Path
    log: Path


def _wait_for_url(log: Path, process: subprocess.Popen) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"on (http://127\.0\.0\.1:\d+)", log.read_text())
        if found:
            return found[1]
        if process.poll() is not None:
            pytest.fail(f"faastlane serve exited: {log.read_text()}")
        time.sleep(0.1)
    pytest.fail("faastlane serve did not start in 60 s")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    app = write_app(tmp_path / "orders", chain(("Count", task("count"))), {"count": COUNT})
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    log = tmp_path / "serve.log"
    with open(log, "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "faastlane", "serve", str(app), "--port", "0"],
            cwd=ROOT, stderr=stderr, stdout=subprocess.DEVNULL,
            env={**os.environ, "TMPDIR": str(scratch)},
            # As `faastlane serve APP &` starts it from a script: SIGINT ignored.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        yield Served(process, _wait_for_url(log, process), scratch, log)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _lambda(url: str):
    return boto3.client("lambda", endpoint_url=url, region_name="us-east-1",
                        aws_access_key_id="testing", aws_secret_access_key="testing",
                        config=Config(retries={"max_attempts": 1}))


def _post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_boto3_invoke_is_warm_across_calls_and_reports_errors(served: Served) -> None:
    client = _lambda(served.url)
    first = client.invoke(FunctionName="orders", Payload=json.dumps({"n": 1}))
    assert first["StatusCode"] == 200 and "FunctionError" not in first
    assert json.loads(first["Payload"].read()) == {"calls": 1, "request": 36, "n": 1}
    second = client.invoke(FunctionName="orders", Payload=b'{"n": 2}')
    assert json.loads(second["Payload"].read())["calls"] == 2  # the same warm module
    failed = client.invoke(FunctionName="orders", Payload=b'{"fail": true}')
    assert failed["StatusCode"] == 200 and failed["FunctionError"] == "Unhandled"
    error = json.loads(failed["Payload"].read())
    assert error["errorType"] == "OrderRejected"
    assert json.loads(error["errorMessage"])["errorMessage"] == "card declined"
    arn = "arn:aws:lambda:us-east-1:123456789012:function:orders"
    assert client.invoke(FunctionName=arn, InvocationType="Event")["StatusCode"] == 202
    with pytest.raises(client.exceptions.ResourceNotFoundException, match="Function not found"):
        client.invoke(FunctionName="nope")
    request = urllib.request.Request(f"{served.url}/2015-03-31/functions/nope/invocations",
                                     data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=10)
    assert raised.value.code == 404
    assert raised.value.headers["x-amzn-ErrorType"] == "ResourceNotFoundException"
    assert json.loads(raised.value.read()) == {
        "Type": "User",
        "Message": "Function not found: arn:aws:lambda:us-east-1:000000000000:function:nope"}
    log = served.log.read_text()
    assert "POST /2015-03-31/functions/orders/invocations lambda 200" in log
    assert "POST /2015-03-31/functions/nope/invocations lambda 404" in log


def test_openwhisk_rest_calls_as_wsk_makes_them(served: Served) -> None:
    base = f"{served.url}/api/v1/namespaces/_/actions/orders"
    status, result = _post(f"{base}?blocking=true&result=true", {"n": 5})
    assert (status, result["n"]) == (200, 5)
    status, record = _post(f"{base}?blocking=true", {"n": 6})
    assert status == 200 and record["response"]["success"] is True
    assert record["response"]["result"]["calls"] == result["calls"] + 1
    status, failure = _post(f"{base}?blocking=true&result=true", {"fail": True})
    assert status == 502 and failure["error"]["Error"] == "OrderRejected"
    status, queued = _post(base, {"n": 7})
    assert status == 202
    activation = f"{served.url}/api/v1/namespaces/_/activations/{queued['activationId']}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(activation, timeout=10) as response:
                assert json.loads(response.read())["response"]["result"]["n"] == 7
                break
        except urllib.error.HTTPError as exc:
            assert exc.code == 404 and time.monotonic() < deadline
            time.sleep(0.1)
    status, missing = _post(f"{served.url}/api/v1/namespaces/_/actions/other", {})
    assert status == 404 and missing["error"] == "The requested resource does not exist."
    assert "POST /api/v1/namespaces/_/actions/orders openwhisk 502" in served.log.read_text()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_it_leaving_no_process_or_file(served: Served, signum: int) -> None:
    assert _lambda(served.url).invoke(FunctionName="orders")["StatusCode"] == 200
    children = descendants(served.process.pid)
    assert children  # the warm Orchestrator
    served.process.send_signal(signum)
    assert served.process.wait(30) == 128 + signum
    assert not any(os.path.exists(f"/proc/{pid}") for pid in children)
    assert list(served.scratch.iterdir()) == []


def test_a_call_that_kills_the_orchestrator_fails_and_the_next_starts_it_again(
        served: Served) -> None:
    client = _lambda(served.url)
    assert json.loads(client.invoke(FunctionName="orders")["Payload"].read())["calls"] == 1
    crashed = client.invoke(FunctionName="orders", Payload=b'{"crash": true}')
    assert crashed["FunctionError"] == "Unhandled"
    assert json.loads(crashed["Payload"].read())["errorType"] == "Runtime.ExitError"
    again = client.invoke(FunctionName="orders")  # a fresh Orchestrator: a cold start
    assert json.loads(again["Payload"].read())["calls"] == 1


def test_a_template_is_served_with_its_resources_on_an_embedded_local_aws(
        tmp_path: Path) -> None:
    # No endpoint in the environment: serve starts moto for its own life, creates the
    # template's table and topic there, and the workflow's putItem and publish reach them.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_ENDPOINT_URL")}
    log = tmp_path / "serve.log"
    template = ROOT / "examples" / "stock-trader" / "template.yaml"
    with open(log, "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "faastlane", "serve", str(template), "--port", "0"],
            cwd=ROOT, stderr=stderr, stdout=subprocess.DEVNULL,
            env={**env, "TMPDIR": str(tmp_path)})
    try:
        url = _wait_for_url(log, process)
        name = re.search(r"/2015-03-31/functions/([^/]+)/invocations", log.read_text())[1]
        assert "local AWS (moto) at http://127.0.0.1:" in log.read_text()
        answer = _lambda(url).invoke(FunctionName=name, Payload=b"{}")
        assert "FunctionError" not in answer, answer["Payload"].read()
        output = json.loads(answer["Payload"].read())
        assert output["SdkHttpMetadata"]["HttpStatusCode"] == 200 and output["MessageId"]
        started = descendants(process.pid)
        assert started  # the warm action and the embedded moto
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        time.sleep(0.5)
        assert [pid for pid in started if os.path.exists(f"/proc/{pid}")] == []
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_request_over_openwhisks_limit_is_refused_as_the_controller_does(
        served: Served) -> None:
    base = f"{served.url}/api/v1/namespaces/_/actions/orders?blocking=true&result=true"
    limit = 1024 * 1024
    status, answer = _post(base, {"pad": "x" * (limit - 20)})  # just inside: it runs
    assert status == 200 and len(answer["pad"]) == limit - 20
    status, answer = _post(base, {"pad": "x" * limit})
    size = len(json.dumps({"pad": "x" * limit}))
    assert status == 413
    assert answer["error"] == f"Request larger than allowed: {size} > {limit} bytes."


def test_a_burst_of_clients_is_queued_not_reset(served: Served) -> None:
    from concurrent.futures import ThreadPoolExecutor

    base = f"{served.url}/api/v1/namespaces/_/actions/orders?blocking=true&result=true"
    with ThreadPoolExecutor(50) as pool:
        answers = list(pool.map(lambda n: _post(base, {"n": n}), range(50)))
    assert sorted(result["n"] for _, result in answers) == list(range(50))
    assert {status for status, _ in answers} == {200}


def test_a_crash_of_a_shared_orchestrator_names_the_state_that_ran(tmp_path: Path) -> None:
    # Under a thread mode the function's crash ends the warm copy's Orchestrator: the
    # error says which state and function were running (its flight record).
    app = write_app(tmp_path / "orders", chain(("Count", task("count"))), {"count": COUNT})
    log = tmp_path / "serve.log"
    with open(log, "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "faastlane", "serve", str(app), "--port", "0",
             "--isolation", "none"], cwd=ROOT, stderr=stderr, stdout=subprocess.DEVNULL)
    try:
        client = _lambda(_wait_for_url(log, process))
        crashed = client.invoke(FunctionName="orders", Payload=b'{"crash": true}')
        error = json.loads(crashed["Payload"].read())
        assert error["errorType"] == "Runtime.ExitError"
        assert "while running state 'Count' (function 'count')" in error["errorMessage"]
    finally:
        process.kill()
        process.wait()
