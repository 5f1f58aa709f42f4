"""The sequential hand-off's guarantees, kept while making it cheaper: a function's event
is its own copy, the trace is recorded exactly when asked for, and the lazily made parts
(the ``$$`` object, the Lambda context) hold what they held when made eagerly."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from faastlane.compose.action import prepare
from faastlane.runtime.engine import trace
from faastlane.runtime.engine.lambda_context import LambdaContext
from faastlane.runtime.orchestrator import SUCCEEDED, Orchestrator

MUTATE = '''
def handler(event, context):
    event["items"].append("added by Mutate")
    event["mutated"] = True
    return {"seen": len(event["items"])}
'''
ECHO = "def handler(event, context):\n    return event\n"
FLAKY = '''
import copy

ATTEMPTS = []

def handler(event, context):
    ATTEMPTS.append(copy.deepcopy(event))
    event["items"].clear()
    if len(ATTEMPTS) == 1:
        raise RuntimeError("first attempt fails after emptying its event")
    return {"attempts": ATTEMPTS}
'''
CONTEXT = '''
def handler(event, context):
    return {"request": context.aws_request_id, "again": context.aws_request_id,
            "stream": context.log_stream_name, "arn": context.invoked_function_arn,
            "memory": context.memory_limit_in_mb, "left": context.get_remaining_time_in_millis()}
'''


def orchestrator(tmp_path: Path, states: dict[str, Any], functions: dict[str, str]
                 ) -> Orchestrator:
    """An in-process Orchestrator (isolation none) for a machine of ``states``."""
    app = tmp_path / "app"
    (app / "functions").mkdir(parents=True)
    (app / "workflow.json").write_text(json.dumps({"StartAt": next(iter(states)),
                                                   "States": states}))
    for name, source in functions.items():
        (app / "functions" / f"{name}.py").write_text(source)
    composed = prepare(str(app), isolation="none")
    return Orchestrator("app", composed.workflow, composed.app.functions, str(app),
                        composed.options)


def task(function: str, **fields: Any) -> dict[str, Any]:
    return {"Type": "Task", "Resource": f"arn:aws:lambda:us-east-1:123456789012:function:"
                                        f"{function}", **fields}


def test_a_mutated_event_changes_neither_the_state_input_nor_the_callers_input(
        tmp_path: Path) -> None:
    run = orchestrator(tmp_path, {
        "Mutate": task("Mutate", ResultPath="$.result", Next="Echo"),
        "Echo": task("Echo", End=True),
    }, {"Mutate": MUTATE, "Echo": ECHO})
    given = {"items": ["a"]}
    result = run.execute(given)
    assert result.status == SUCCEEDED
    assert result.output == {"items": ["a"], "result": {"seen": 2}}
    assert given == {"items": ["a"]}
    run.close()


KEEPER = '''
KEPT = {"items": ["kept"]}

def handler(event, context):
    return KEPT  # a module global: the next function must not reach it
'''
APPEND = '''
def handler(event, context):
    event["items"].append(context.function_name)
    return event
'''
def test_direct_tasks_in_a_relay_share_nothing_a_function_or_the_workflow_keeps(
        tmp_path: Path) -> None:
    # Direct Tasks (no paths, Parameters or ResultPath) in a relay hand a result on
    # without a second copy: it was detached from the function that returned it, and its
    # state's input is not needed after the call. Only such a result: a function's own
    # global, the caller's input and a Pass state's Result (the same object in every
    # execution) are copied before a function can change them.
    run = orchestrator(tmp_path, {
        "Keep": task("Keeper", Next="Append"),
        "Append": task("Append", Next="Seed"),
        "Seed": {"Type": "Pass", "Result": {"items": []}, "Next": "AppendAgain"},
        "AppendAgain": task("Append", Next="Report"),
        "Report": task("Report", End=True),
    }, {"Keeper": KEEPER, "Append": APPEND, "Report": ECHO})
    kept = run.functions.get("Keeper").module.KEPT
    for _ in range(3):
        given = {"items": ["given"]}
        result = run.execute(given)
        assert result.status == SUCCEEDED, (result.error, result.cause)
        assert result.output == {"items": ["Append"]}
        assert kept == {"items": ["kept"]}
        assert given == {"items": ["given"]}
    run.close()


def test_a_retried_task_gets_its_state_input_again_not_what_the_failed_attempt_left(
        tmp_path: Path) -> None:
    run = orchestrator(tmp_path, {"Flaky": task("Flaky", End=True, Retry=[
        {"ErrorEquals": ["RuntimeError"], "IntervalSeconds": 1, "MaxAttempts": 1,
         "BackoffRate": 1, "MaxDelaySeconds": 1, "JitterStrategy": "FULL"}])},
        {"Flaky": FLAKY})
    result = run.execute({"items": [1, 2]})
    assert result.status == SUCCEEDED, result
    assert result.output == {"attempts": [{"items": [1, 2]}, {"items": [1, 2]}]}
    run.close()


@pytest.fixture
def tracing() -> Any:
    yield trace
    trace.enabled = False
    trace.take()


def test_trace_records_states_and_functions_only_when_enabled(tmp_path: Path,
                                                              tracing: Any) -> None:
    run = orchestrator(tmp_path, {"A": task("Echo", Next="B"), "B": task("Echo", End=True)},
                       {"Echo": ECHO})
    tracing.enabled = False
    tracing.take()
    assert run.execute({"x": 1}).status == SUCCEEDED
    assert tracing.take() == []
    tracing.enabled = True
    assert run.execute({"x": 1}).status == SUCCEEDED
    records = tracing.take()
    assert [(r["type"], r["state"]) for r in records] == [
        ("Function", "A"), ("Task", "A"), ("Function", "B"), ("Task", "B")]
    for record in records:
        assert record["start"] <= record["end"]
    function = records[0]
    assert function["function"] == "Echo" and function["placement"] == "thread"
    assert function["compute_ms"] >= 0 and function["error"] is None
    run.close()


def test_the_context_object_is_made_when_read_with_the_time_the_state_was_entered(
        tmp_path: Path) -> None:
    run = orchestrator(tmp_path, {"Read": {
        "Type": "Pass", "End": True,
        "Parameters": {"entered.$": "$$.State.EnteredTime", "name.$": "$$.State.Name",
                       "state.$": "$$.State"}}}, {"Echo": ECHO})
    result = run.execute({})
    assert result.status == SUCCEEDED
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", result.output["entered"])
    assert result.output["name"] == "Read"
    # A Pass state's $$.State has no RetryCount: only Task states retry (AWS's recorded
    # answer in LocalStack's test_context_object tests: {"EnteredTime", "Name"}).
    assert sorted(result.output["state"]) == ["EnteredTime", "Name"]
    run.close()


def test_the_lambda_context_makes_its_attributes_on_first_read_and_keeps_them(
        tmp_path: Path) -> None:
    run = orchestrator(tmp_path, {"C": task("C", End=True)}, {"C": CONTEXT})
    first, second = run.execute({}).output, run.execute({}).output
    assert first["request"] == first["again"] != second["request"]
    assert re.fullmatch(r"[0-9a-f-]{36}", first["request"])
    assert re.fullmatch(r"\d{4}/\d\d/\d\d/\[\$LATEST\][0-9a-f]{32}", first["stream"])
    assert first["arn"].endswith(":function:C") and first["memory"] == "1024"
    assert 0 < first["left"] <= 900_000
    run.close()


def test_lambda_context_attributes_can_be_given_and_set() -> None:
    context = LambdaContext("f", 3, request_id="given")
    assert context.aws_request_id == "given"
    context.log_stream_name = "mine"
    assert context.log_stream_name == "mine"
    assert context.function_version == "$LATEST" and context.client_context is None
    assert context.identity.cognito_identity_id is None
    with pytest.raises(AttributeError):
        context.not_an_attribute  # noqa: B018 - the read is the test


# ------------------------------------------------------------------ relays of Tasks

WHERE = '''
import threading

def handler(event, context):
    event["seen"] = event.get("seen", []) + [threading.current_thread().name]
    return event
'''
FAIL = '''
def handler(event, context):
    raise ValueError("no")
'''


def test_relayed_tasks_run_one_after_another_on_one_warm_thread(tmp_path: Path) -> None:
    run = orchestrator(tmp_path, {
        "A": task("Where", Next="B"), "B": task("Where", Next="C"),
        "C": task("Other", End=True)}, {"Where": WHERE, "Other": WHERE})
    before = [t.name for t in threading.enumerate()].count("faastlane:relay")
    for _ in range(20):
        result = run.execute({})
        assert result.output == {"seen": ["faastlane:relay"] * 3}
    # parked before it woke the caller: the next execution's relay found it free (the
    # pool is the process's: an earlier test's relay thread may be the one reused)
    names = [t.name for t in threading.enumerate()]
    assert names.count("faastlane:relay") <= max(before, 1)
    run.close()


# Sets the decimal module's precision (a context variable) and reports what it found.
PRECISION = '''
import decimal

def handler(event, context):
    found = decimal.getcontext().prec
    decimal.getcontext().prec = event["set"]
    return {"found": event.get("found", []) + [found], "set": event.get("next", 1)}
'''


def test_a_function_in_a_relay_keeps_its_own_context_variables(tmp_path: Path) -> None:
    # On its own Lambda, each function's decimal precision is its own and stays set for
    # its next invocation in that container; sharing the relay's thread changes nothing.
    run = orchestrator(tmp_path, {
        "A": task("SetsFive", Next="B"), "B": task("SetsNine", End=True)},
        {"SetsFive": PRECISION, "SetsNine": PRECISION})
    first = run.execute({"set": 5, "next": 9})
    assert first.status == "SUCCEEDED", (first.error, first.cause)
    assert first.output["found"] == [28, 28]  # B did not see A's 5: the default
    second = run.execute({"set": 5, "next": 9})
    assert second.output["found"] == [5, 9]  # each found what it set itself before
    run.close()


def test_a_relay_hands_back_at_other_states_and_goes_on_after_them(tmp_path: Path,
                                                                   tracing: Any) -> None:
    run = orchestrator(tmp_path, {
        "A": task("Where", Next="Mark"),
        "Mark": {"Type": "Pass", "Result": "pass", "ResultPath": "$.mark", "Next": "Caught"},
        "Caught": task("Where", Next="D", Catch=[{"ErrorEquals": ["States.ALL"],
                                                  "Next": "D"}]),
        "D": task("Where", End=True)}, {"Where": WHERE})
    tracing.enabled = True
    tracing.take()
    result = run.execute({})
    # A and D relayed; Caught (with a Catch) on its function's own thread
    assert result.output == {"seen": ["faastlane:relay", "faastlane:Where",
                                      "faastlane:relay"], "mark": "pass"}
    assert [(r["type"], r["state"]) for r in tracing.take()] == [
        ("Function", "A"), ("Task", "A"), ("Pass", "Mark"), ("Function", "Caught"),
        ("Task", "Caught"), ("Function", "D"), ("Task", "D")]
    run.close()


def test_an_error_in_a_relay_fails_the_execution_as_before(tmp_path: Path) -> None:
    run = orchestrator(tmp_path, {"A": task("Where", Next="B"),
                                  "B": task("Fail", Next="C"),
                                  "C": task("Where", End=True)},
                       {"Where": WHERE, "Fail": FAIL})
    result = run.execute({})
    assert (result.status, result.error) == ("FAILED", "ValueError")
    assert json.loads(result.cause)["errorMessage"] == "no"
    run.close()


def test_a_runtime_error_in_a_relay_names_its_state(tmp_path: Path) -> None:
    run = orchestrator(tmp_path, {"A": task("Where", Next="B"),
                                  "B": task("Where", InputPath="$.missing", End=True)},
                       {"Where": WHERE})
    result = run.execute({})
    assert result.error == "States.Runtime"
    assert result.cause.startswith("An error occurred while executing the state 'B'")
    run.close()


def test_a_relay_to_a_function_that_does_not_exist_fails_instead_of_waiting(
        tmp_path: Path) -> None:
    run = orchestrator(tmp_path, {
        "A": task("Where", Next="B"),
        "B": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "End": True,
              "Parameters": {"FunctionName.$": "$.next", "Payload": {}}}}, {"Where": WHERE})
    outcome: list[Any] = []
    runner = threading.Thread(target=lambda: outcome.append(run.execute({"next": "Nope"})),
                              daemon=True)
    runner.start()
    runner.join(30)
    assert outcome and outcome[0].error == "Lambda.ResourceNotFoundException"
    run.close()


def test_an_execution_that_calls_functions_elsewhere_is_not_relayed(tmp_path: Path) -> None:
    """A mode that calls functions elsewhere (the benchmark's OpenWhisk-style controller)."""
    from faastlane.runtime.engine.execution import Execution
    from faastlane.runtime.engine.functions import FunctionRegistry
    from faastlane.runtime.engine.modes import Calls, Mode
    from faastlane.runtime.interpreter.states import run_machine
    from faastlane.runtime.options import Options

    class Elsewhere(Mode):
        def call(self, execution: Calls, state_name: str, function: str, event: Any,
                 timeout_seconds: float | None, planned: str) -> Any:
            return {**event, state_name: f"elsewhere:{function}"}

    workflow = orchestrator(tmp_path, {"A": task("Where", Next="B"),
                                       "B": task("Where", End=True)},
                            {"Where": WHERE}).workflow
    execution = Execution("app", {}, FunctionRegistry(str(tmp_path), {}), Options(),
                          mode=Elsewhere(Options()))
    assert run_machine(workflow, {}, execution) == {"A": "elsewhere:Where",
                                                   "B": "elsewhere:Where"}


def test_concurrent_executions_relay_through_the_same_functions(tmp_path: Path) -> None:
    run = orchestrator(tmp_path, {"A": task("Where", Next="B"), "B": task("Other", Next="C"),
                                  "C": task("Where", End=True)},
                       {"Where": WHERE, "Other": WHERE})
    outputs: list[Any] = []

    def client(index: int) -> None:
        for round_ in range(50):
            outputs.append((index, round_, run.execute({"client": index}).output))

    clients = [threading.Thread(target=client, args=(i,)) for i in range(4)]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join(60)
    assert len(outputs) == 200
    for index, _, output in outputs:
        assert output == {"client": index, "seen": ["faastlane:relay"] * 3}
    run.close()


def test_choice_and_pass_states_between_tasks_run_on_the_relay(tmp_path: Path,
                                                               tracing: Any) -> None:
    run = orchestrator(tmp_path, {
        "A": task("Where", Next="Route"),
        "Route": {"Type": "Choice", "Choices": [
            {"Variable": "$.go", "StringEquals": "b", "Next": "Mark"}]},
        "Mark": {"Type": "Pass", "Result": "pass", "ResultPath": "$.mark", "Next": "B"},
        "B": task("Other", End=True)}, {"Where": WHERE, "Other": WHERE})
    tracing.enabled = True
    tracing.take()
    result = run.execute({"go": "b"})
    assert result.output == {"go": "b", "mark": "pass", "seen": ["faastlane:relay"] * 2}
    records = {(r["type"], r["state"]): r["thread"] for r in tracing.take()}
    assert records[("Choice", "Route")] == records[("Function", "A")]
    assert records[("Pass", "Mark")] == records[("Function", "A")]
    failed = run.execute({"go": "elsewhere"})
    assert (failed.status, failed.error) == ("FAILED", "States.NoChoiceMatched")
    run.close()
