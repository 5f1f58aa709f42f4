"""Pre-forked warm workers for Parallel/Map: reuse, crashes, deadlines, cancellation,
trace records, and when a fresh fork per job is kept (isolation, untrusted functions)."""

from __future__ import annotations

import json
import os
import signal
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from faastlane.runtime.asl.model import machine_from_asl
from faastlane.runtime.engine import trace
from faastlane.runtime.engine.functions import FunctionSpec
from faastlane.runtime.options import Options
from faastlane.runtime.orchestrator import Orchestrator

FUNCTIONS = {
    "whoami": "def handler(event, context):\n    return {'pid': os.getpid(), 'in': event}\n",
    "count": ("CALLS = []\n"
              "def handler(event, context):\n"
              "    CALLS.append(1)\n"
              "    return {'pid': os.getpid(), 'calls': len(CALLS)}\n"),
    "big": "def handler(event, context):\n    return event['c'] * (8 * 1024 * 1024)\n",
    "crash": ("def handler(event, context):\n"
              "    if event.get('die'):\n"
              "        os.kill(os.getpid(), signal.SIGKILL)\n"
              "    return event\n"),
    "fail": "def handler(event, context):\n    raise ValueError('no')\n",
    "sleep": ("def handler(event, context):\n"
              "    time.sleep(event.get('s', 30))\n    return os.getpid()\n"),
}


def task(name: str, function: str, end: bool = True, **fields: object) -> dict:
    return {name: {"Type": "Task", "Resource": function, "End": end, **fields}}


def branch(function: str, **fields: object) -> dict:
    return {"StartAt": "T", "States": task("T", function, **fields)}


def map_of(function: str, **fields: object) -> dict:
    return {"StartAt": "M", "States": {"M": {
        "Type": "Map", "End": True, "ItemProcessor": branch(function), **fields}}}


def parallel(*functions: str) -> dict:
    return {"StartAt": "P", "States": {"P": {
        "Type": "Parallel", "End": True, "Branches": [branch(f) for f in functions]}}}


@pytest.fixture
def make(tmp_path: Path) -> Iterator:
    made: list[Orchestrator] = []

    def build(asl: dict, isolation: str = "none", vcpus: int = 2,
              untrusted: tuple[str, ...] = ()) -> Orchestrator:
        root = tmp_path / f"action{len(made)}"
        (root / "functions").mkdir(parents=True)
        specs = {}
        for name, body in FUNCTIONS.items():
            code = "import os, signal, time\n" + textwrap.dedent(body)
            (root / "functions" / f"{name}.py").write_text(code)
            specs[name] = FunctionSpec(name, f"functions/{name}.py", "handler", "lambda")
        plan = {"functions": {n: {"untrusted": n in untrusted} for n in specs}}
        (root / "plan.json").write_text(json.dumps(plan))
        orchestrator = Orchestrator("wf", machine_from_asl(asl), specs, str(root),
                                    Options(isolation=isolation, vcpus=vcpus))
        made.append(orchestrator)
        return orchestrator

    yield build
    for orchestrator in made:
        orchestrator.close()


def pids_of(output: list) -> set[int]:
    return {item["pid"] for item in output}


def test_map_iterations_run_on_the_same_warm_workers_across_instances(make) -> None:
    orchestrator = make(map_of("whoami"))
    warm = {w.pid for w in orchestrator.pool._idle}
    assert len(warm) == 2  # forked when the Orchestrator loaded, one per vCPU
    first = orchestrator.execute([1, 2, 3, 4, 5])
    second = orchestrator.execute([6, 7, 8])
    assert [o["in"] for o in first.output] == [1, 2, 3, 4, 5]
    assert [o["in"] for o in second.output] == [6, 7, 8]
    assert pids_of(first.output) | pids_of(second.output) <= warm
    assert os.getpid() not in warm


def test_results_of_8_mb_come_back(make) -> None:
    orchestrator = make(parallel("big", "big"))
    result = orchestrator.execute({"c": "x"})
    assert result.status == "SUCCEEDED"
    assert [len(v) for v in result.output] == [8 * 1024 * 1024] * 2


def test_a_killed_branch_is_an_exit_error_and_its_worker_is_replaced(make) -> None:
    orchestrator = make({"StartAt": "P", "States": {"P": {
        "Type": "Parallel", "End": True,
        "Branches": [branch("crash"), branch("crash", Parameters={"die": True})]}}})
    result = orchestrator.execute({})
    assert result.error == "Runtime.ExitError"
    assert "branch 1 of Parallel 'P'" in result.cause and "signal: killed" in result.cause
    again = orchestrator.execute({"ok": 1})
    assert again.status == "FAILED" and "signal: killed" in again.cause
    # Replacements are forked as needed; killed workers are reaped, never leaked.
    assert orchestrator.pool._live == len(orchestrator.pool._idle) <= 2


def test_a_worker_killed_while_idle_is_replaced_before_it_gets_a_job(make) -> None:
    orchestrator = make(map_of("whoami"))
    victim = orchestrator.pool._idle[0].pid
    os.kill(victim, signal.SIGKILL)
    time.sleep(0.2)
    result = orchestrator.execute([1, 2, 3])
    assert result.status == "SUCCEEDED" and victim not in pids_of(result.output)


def test_a_tolerated_crash_fails_only_its_own_iteration(make) -> None:
    orchestrator = make(map_of("crash", ToleratedFailureCount=1), vcpus=1)
    result = orchestrator.execute([{"a": 1}, {"die": True}, {"a": 3}])
    assert result.status == "SUCCEEDED"
    assert result.output[0] == {"a": 1} and result.output[2] == {"a": 3}
    assert result.output[1]["Error"] == "Runtime.ExitError"
    assert "iteration 1 of Map 'M'" in result.output[1]["Cause"]


def test_a_failed_branch_cancels_a_slow_sibling(make) -> None:
    orchestrator = make(parallel("fail", "sleep"))
    started = time.monotonic()
    result = orchestrator.execute({"s": 30})
    assert time.monotonic() - started < 10
    assert result.error == "ValueError"
    assert orchestrator.execute({"s": 0}).error == "ValueError"  # the pool still serves


def test_the_workflow_deadline_stops_busy_workers(make) -> None:
    asl = dict(map_of("sleep"), TimeoutSeconds=1)
    orchestrator = make(asl)
    started = time.monotonic()
    result = orchestrator.execute([{"s": 30}, {"s": 30}])
    assert time.monotonic() - started < 10
    assert result.error == "States.Timeout"


def test_trace_records_come_back_from_workers(make) -> None:
    orchestrator = make(map_of("whoami"))
    trace.enable()
    try:
        trace.take()
        result = orchestrator.execute([1, 2])
        records = trace.take()
    finally:
        trace.enabled = False
    functions = [r for r in records if r.get("type") == "Function"]
    assert {r["pid"] for r in functions} == pids_of(result.output)
    assert all(r["function"] == "whoami" for r in functions)


def test_outer_variables_reach_the_worker(make) -> None:
    orchestrator = make({"StartAt": "A", "States": {
        "A": {"Type": "Pass", "Assign": {"greeting.$": "$.g"}, "Next": "M"},
        "M": {"Type": "Map", "End": True, "ItemsPath": "$.items", "ItemProcessor": {
            "StartAt": "Read", "States": {"Read": {
                "Type": "Pass", "End": True, "Parameters": {"g.$": "$greeting",
                                                            "i.$": "$"}}}}}}})
    result = orchestrator.execute({"g": "hello", "items": [1, 2]})
    assert result.output == [{"g": "hello", "i": 1}, {"g": "hello", "i": 2}]


def test_a_reused_worker_keeps_module_state_under_isolation_none(make) -> None:
    # The documented trade: under isolation none a worker is reused, as the
    # Orchestrator's threads are, so module globals persist between jobs.
    orchestrator = make(map_of("count"), vcpus=1)
    calls = [o["calls"] for o in orchestrator.execute([0, 0]).output]
    calls += [o["calls"] for o in orchestrator.execute([0]).output]
    assert calls == [1, 2, 3]


def test_process_isolation_calls_functions_in_their_warm_sandboxes(make) -> None:
    # No function marked: every one is isolated, in its own sandbox, which stays warm
    # across jobs and instances (as a Lambda container); the pool's workers only call it.
    orchestrator = make(map_of("count"), isolation="process", vcpus=1)
    first = orchestrator.execute([0, 0]).output
    second = orchestrator.execute([0]).output
    assert [o["calls"] for o in first + second] == [1, 2, 3]
    assert len(pids_of(first + second)) == 1
    assert pids_of(first).isdisjoint({w.pid for w in orchestrator.pool._idle})


def test_a_section_calling_an_untrusted_function_keeps_a_fresh_fork(make) -> None:
    orchestrator = make(map_of("count"), vcpus=1, untrusted=("count",))
    first = orchestrator.execute([0]).output
    second = orchestrator.execute([0]).output
    assert [o["calls"] for o in first + second] == [1, 1]
    assert pids_of(first).isdisjoint(pids_of(second))


def test_a_section_nested_in_a_job_runs_on_the_workers_threads(make) -> None:
    inner = {"Type": "Parallel", "End": True,
             "Branches": [branch("whoami"), branch("whoami")]}
    orchestrator = make({"StartAt": "M", "States": {"M": {
        "Type": "Map", "End": True,
        "ItemProcessor": {"StartAt": "P", "States": {"P": inner}}}}})
    result = orchestrator.execute([1, 2, 3])
    assert result.status == "SUCCEEDED"
    warm = {w.pid for w in orchestrator.pool._idle}
    for pair in result.output:  # both branches in the pool worker that ran the item
        assert pair[0]["pid"] == pair[1]["pid"] and pair[0]["pid"] in warm
