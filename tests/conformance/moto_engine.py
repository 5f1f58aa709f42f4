"""Run conformance cases on moto's Step Functions engine (the reference).

moto executes state machines itself (``execute_state_machine``: an ASL interpreter
derived from LocalStack's) and calls Lambda through boto3 against its own Lambda
backend. The Docker-free backend (``moto.awslambda_simple``) would answer every
invocation with a canned string; here its ``invoke`` is patched to run the case's own
function file through :mod:`.lambda_emulation`, so moto and Faastlane run the very same
Python code.

One mock serves a whole batch of cases: every case's functions are registered (under
names prefixed with the case name, so that cases may reuse function names), every state
machine is created, all executions are started at once (moto runs each on its own
thread) and ``DescribeExecution`` is polled until all have finished.
"""

from __future__ import annotations

import copy
import io
import json
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
from moto import mock_aws
from moto.awslambda_simple.models import LambdaSimpleBackend

from . import call_log, lambda_emulation
from .cases import Case
from .outcome import Outcome

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's default account
LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"
_FUNCTION_ARN_PREFIX = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:"
_CONFIG = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
_POLL_SECONDS = 0.02


@dataclass(frozen=True)
class _Function:
    name: str  # the name the case's workflow uses
    source: Path


class _Registry:
    """moto function name -> the case's function file, read by the patched invoke."""

    def __init__(self) -> None:
        self.functions: dict[str, _Function] = {}

    def moto_name(self, case: Case, name: str) -> str:
        moto_name = f"{case.name}-{name}"
        assert len(moto_name) <= 64, f"{moto_name}: Lambda names have at most 64 characters"
        return moto_name

    def invoke(
        self,
        backend: LambdaSimpleBackend,
        function_name: str,
        qualifier: str | None,
        body: Any,
        headers: Any,
        response_headers: dict[str, str],
    ) -> bytes:
        moto_function = backend.get_function(function_name, qualifier)
        function = self.functions[moto_function.function_name]
        result = lambda_emulation.invoke(
            function.source,
            function.name,
            moto_function.function_arn,
            body.encode() if isinstance(body, str) else (body or b""),
        )
        if result.failed:
            # What Lambda's Invoke API answers when the function raised.
            response_headers["x-amz-function-error"] = "Unhandled"
        response_headers["Content-Length"] = str(len(result.payload))
        return result.payload


def _function_name_in(reference: str) -> str:
    """The function name in a name, ``NAME:QUALIFIER`` or (partial) Lambda ARN."""
    if ":function:" in reference:
        reference = reference.split(":function:", 1)[1]
    return reference.split(":", 1)[0]


def _rename_functions(states: dict[str, Any], rename: dict[str, str]) -> None:
    """Point every Lambda Task at the prefixed moto function, in place.

    A bare function name becomes a full ARN: Step Functions (and moto) only accept ARNs,
    while Faastlane also accepts the bare name as shorthand for the same function.
    """
    def moto_arn(reference: str) -> str:
        name = _function_name_in(reference)
        assert name in rename, f"{reference!r} names no file in the case's functions/"
        return _FUNCTION_ARN_PREFIX + rename[name]

    for state in states.values():
        if state.get("Type") == "Task":
            resource = state["Resource"]
            if resource.startswith(LAMBDA_INVOKE):
                parameters = state.get("Parameters", {})
                if "FunctionName" in parameters:
                    parameters["FunctionName"] = moto_arn(parameters["FunctionName"])
            else:
                state["Resource"] = moto_arn(resource)
        for branch in state.get("Branches", []):
            _rename_functions(branch["States"], rename)
        for key in ("ItemProcessor", "Iterator"):
            if key in state:
                _rename_functions(state[key]["States"], rename)


def _deployment_package() -> bytes:
    # moto stores but never runs the code: the patched invoke runs the case's file.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("function.py", "def handler(event, context):\n    return event\n")
    return buffer.getvalue()


@contextmanager
def moto_session() -> Iterator[_Registry]:
    registry = _Registry()

    def patched_invoke(backend: LambdaSimpleBackend, *args: Any) -> bytes:
        return registry.invoke(backend, *args)

    with mock_aws(config=_CONFIG), mock.patch.object(
        LambdaSimpleBackend, "invoke", patched_invoke
    ):
        yield registry


def run_cases(cases: list[Case], timeout: float = 90.0) -> dict[str, Outcome]:
    """Run every case on moto at once; each case's outcome, or a harness failure."""
    outcomes: dict[str, Outcome] = {}
    with moto_session() as registry:
        iam = boto3.client("iam", region_name=REGION)
        role = iam.create_role(RoleName="conformance", AssumeRolePolicyDocument="{}")
        role_arn = role["Role"]["Arn"]
        lambda_client = boto3.client("lambda", region_name=REGION)
        sfn = boto3.client("stepfunctions", region_name=REGION)
        package = _deployment_package()

        running: dict[str, str] = {}
        for case in cases:
            rename = {}
            for name, source in case.functions.items():
                moto_name = registry.moto_name(case, name)
                registry.functions[moto_name] = _Function(name, source)
                rename[name] = moto_name
                lambda_client.create_function(
                    FunctionName=moto_name,
                    Runtime="python3.11",
                    Role=role_arn,
                    Handler="function.handler",
                    Code={"ZipFile": package},
                )
            definition = copy.deepcopy(case.workflow)
            _rename_functions(definition["States"], rename)
            try:
                machine = sfn.create_state_machine(
                    name=case.name, definition=json.dumps(definition), roleArn=role_arn
                )
                execution = sfn.start_execution(
                    stateMachineArn=machine["stateMachineArn"],
                    input=json.dumps(case.input_for(call_log.new_scratch())),
                )
            except Exception as error:  # noqa: BLE001 - moto refusing a case is a result
                outcomes[case.name] = Outcome.failure("moto refused the case", str(error))
                continue
            running[case.name] = execution["executionArn"]

        deadline = time.monotonic() + timeout
        while running and time.monotonic() < deadline:
            for name, arn in list(running.items()):
                try:
                    described = sfn.describe_execution(executionArn=arn)
                except Exception as error:  # noqa: BLE001 - moto failing is a result too
                    del running[name]
                    outcomes[name] = Outcome.failure("moto failed", repr(error))
                    continue
                if described["status"] == "RUNNING":
                    continue
                del running[name]
                if described["status"] == "SUCCEEDED":
                    outcomes[name] = Outcome.success(json.loads(described["output"]))
                else:
                    outcomes[name] = Outcome.failure(
                        described.get("error"), described.get("cause")
                    )
            time.sleep(_POLL_SECONDS)
        for name in running:
            outcomes[name] = Outcome.failure("moto did not finish", f"after {timeout} s")
    return outcomes
