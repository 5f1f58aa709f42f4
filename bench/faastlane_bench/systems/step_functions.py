"""The Step Functions-style baseline: moto's Step Functions engine runs the same ASL.

moto executes state machines itself (``execute_state_machine``: an ASL interpreter
derived from LocalStack's), and its Task states call Lambda through boto3 and moto's
Lambda API. The Docker-free Lambda backend never runs code; as in the conformance tests
(``tests/conformance/moto_engine.py``), its ``invoke`` is patched — here to send the
payload to the function's own action process (:mod:`.action_pool`), so each function runs
in its own warm process, as on Lambda. Step Functions limits a state (and an execution's
input) to 256 KB: larger parts go to S3 as claim checks, fetched by the function.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any
from unittest import mock

from faastlane.app_source import load
from faastlane.runtime.asl.resources import LAMBDA_INVOKE, function_name_of
from faastlane.runtime.orchestrator import FAILED, SUCCEEDED, Result

from .. import claimcheck
from ..timeline import Span
from .action_pool import ActionPool
from .base import RunResult

if TYPE_CHECKING:  # moto itself is imported only when the system starts (__init__)
    from moto.core.config import DefaultConfig

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's default account, the one the examples' ARNs name
FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:"
MOTO_CONFIG: DefaultConfig = {"stepfunctions": {"execute_state_machine": True},
                              "lambda": {"use_docker": False}}
POLL_SECONDS = 0.001  # DescribeExecution polling, as a client waiting for the result
EXECUTION_TIMEOUT = 600.0


def lambda_arns(states: dict[str, Any]) -> None:
    """Give every Lambda Task a full function ARN, in place: Step Functions (and moto)
    accept only ARNs, while Faastlane also accepts a bare name for the same function."""
    for state in states.values():
        if state.get("Type") == "Task":
            if state["Resource"].startswith(LAMBDA_INVOKE):
                parameters = state.get("Parameters", {})
                if "FunctionName" in parameters:
                    name = function_name_of(parameters["FunctionName"])
                    parameters["FunctionName"] = FUNCTION_ARN + name
            else:
                state["Resource"] = FUNCTION_ARN + function_name_of(state["Resource"])
        for branch in state.get("Branches", []):
            lambda_arns(branch["States"])
        for key in ("ItemProcessor", "Iterator"):
            if key in state:
                lambda_arns(state[key]["States"])


class StepFunctionsSystem:
    def __init__(self, spec: dict[str, Any]) -> None:
        import boto3
        from moto import mock_aws
        from moto.awslambda_simple.models import LambdaSimpleBackend

        app = load(spec["app"], {}).app
        # The functions' processes and the claim-check store use the local endpoints...
        self.pool = ActionPool(spec["app"], spec["pool_size"])
        self.store = claimcheck.S3Store()
        # ...but Step Functions and Lambda are moto's in-process mock here, which only
        # intercepts AWS's own endpoint names.
        for key in [k for k in os.environ if k.startswith("AWS_ENDPOINT_URL")]:
            del os.environ[key]
        self._lock = threading.Lock()
        self._spans: list[Span] = []
        self._external: list[tuple[float, float]] = []
        system = self

        def invoke(backend: LambdaSimpleBackend, function_name: str, qualifier: str | None,
                   body: Any, headers: Any, response_headers: dict[str, str]) -> bytes:
            name = backend.get_function(function_name, qualifier).function_name
            return system._invoke(name, body, response_headers)

        self._mock = mock_aws(config=MOTO_CONFIG)
        self._mock.start()
        self._patch = mock.patch.object(LambdaSimpleBackend, "invoke", invoke)
        self._patch.start()
        iam = boto3.client("iam", region_name=REGION)
        role = iam.create_role(RoleName="faastlane-bench", AssumeRolePolicyDocument="{}")
        lambda_client = boto3.client("lambda", region_name=REGION)
        for name in app.functions:
            lambda_client.create_function(
                FunctionName=name, Runtime="python3.11", Role=role["Role"]["Arn"],
                Handler="function.handler", Code={"ZipFile": _placeholder_package()})
        assert app.workflow_text is not None  # load() refuses an unreadable workflow
        definition = json.loads(app.workflow_text)
        lambda_arns(definition["States"])
        self.sfn = boto3.client("stepfunctions", region_name=REGION)
        self.machine = self.sfn.create_state_machine(
            name=app.name, definition=json.dumps(definition),
            roleArn=role["Role"]["Arn"])["stateMachineArn"]

    def _invoke(self, name: str, body: Any, response_headers: dict[str, str]) -> bytes:
        payload = body.encode() if isinstance(body, str) else (body or b"{}")
        event = json.loads(payload)
        reply = self.pool.invoke(name, {"event": event,
                                        "limit": claimcheck.STEP_FUNCTIONS_LIMIT})
        with self._lock:
            self._spans.append(Span(name, *reply["compute"]))
            self._external.extend(tuple(e) for e in reply["external"])
        if "failure" in reply:
            response_headers["x-amz-function-error"] = "Unhandled"
            document = _error_document(reply["failure"])
            return json.dumps(document).encode()
        return json.dumps(reply["result"]).encode()

    def run(self, execution_input: Any, traced: bool) -> RunResult:
        with self._lock:
            self._spans.clear()
            self._external.clear()
        start = time.time()
        # StartExecution takes at most 256 KB of input: a client stores the rest in S3.
        sent = claimcheck.offload(execution_input, claimcheck.STEP_FUNCTIONS_LIMIT,
                                  self.store)
        arn = self.sfn.start_execution(stateMachineArn=self.machine, name=uuid.uuid4().hex,
                                       input=json.dumps(sent))["executionArn"]
        deadline = time.monotonic() + EXECUTION_TIMEOUT
        while True:
            described = self.sfn.describe_execution(executionArn=arn)
            # moto's engine thread marks an execution SUCCEEDED a moment before it stores
            # the output (seen with concurrent clients on a loaded machine): wait for it.
            if described["status"] != "RUNNING" and (described["status"] != "SUCCEEDED"
                                                     or "output" in described):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"moto's execution {arn} still runs after "
                                   f"{EXECUTION_TIMEOUT:g} s")
            time.sleep(POLL_SECONDS)
        if described["status"] == "SUCCEEDED":
            output = json.loads(described["output"])
            if claimcheck.has_references(output):
                output = claimcheck.resolve(output, self.store)
            result = Result(SUCCEEDED, output=output)
        else:
            result = Result(FAILED, error=described.get("error"), cause=described.get("cause"))
        end = time.time()
        with self._lock:
            spans, external = list(self._spans), list(self._external)
        if not traced:
            spans, external = [], []
        return RunResult(result.status, result.to_json(), start, end, spans, external)

    def close(self) -> None:
        self._patch.stop()
        self._mock.stop()
        self.pool.close()


def _error_document(failure: dict[str, Any]) -> dict[str, Any]:
    """What Lambda's Invoke returns for a function that raised (its cause is that document)."""
    try:
        document = json.loads(failure["Cause"])
    except (TypeError, ValueError):
        document = None
    if isinstance(document, dict) and "errorType" in document:
        return document
    return {"errorMessage": failure.get("Cause"), "errorType": failure["Error"]}


def _placeholder_package() -> bytes:
    import io
    import zipfile

    # moto stores but never runs this code: the patched invoke runs the real function.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("function.py", "def handler(event, context):\n    return event\n")
    return buffer.getvalue()
