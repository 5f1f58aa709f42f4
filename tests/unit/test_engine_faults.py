"""An unexpected exception in the engine fails its state as States.Runtime, in every
placement of a Parallel branch or Map iteration -- never a dropped branch whose result
silently becomes ``null``.

The fault is injected where each placement runs engine code outside any state: the
thread that detaches a branch's result (-Th), a warm pool worker's job runner, and the
call that sends a group to another container (an invoker whose socket times out).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from faastlane.runtime.asl.errors import RUNTIME
from faastlane.runtime.asl.model import machine_from_asl
from faastlane.runtime.engine import execution as execution_module
from faastlane.runtime.engine.execution import Execution, run_on_threads
from faastlane.runtime.engine.functions import FunctionSpec
from faastlane.runtime.interpreter.states import run_machine
from faastlane.runtime.options import CONTAINERS, PARALLEL_THREADS, Options
from faastlane.runtime.orchestrator import FAILED, Orchestrator
from faastlane.runtime.parallel import forkpool
from faastlane.runtime.parallel.sections import Sections
from faastlane.runtime.parallel.spill import Spiller

ECHO = "def handler(event, context):\n    return event\n"
MAP = {"StartAt": "M", "States": {"M": {
    "Type": "Map", "End": True, "ItemProcessor": {"StartAt": "T", "States": {
        "T": {"Type": "Task", "Resource": "echo", "End": True}}}}}}


def _orchestrator(tmp_path: Path, options: Options, asl: dict = MAP) -> Orchestrator:
    (tmp_path / "functions").mkdir()
    (tmp_path / "functions" / "echo.py").write_text(ECHO)
    (tmp_path / "plan.json").write_text(json.dumps({"functions": {"echo": {}}}))
    specs = {"echo": FunctionSpec("echo", "functions/echo.py", "handler", "lambda")}
    return Orchestrator("wf", machine_from_asl(asl), specs, str(tmp_path), options)


def test_run_on_threads_turns_an_unexpected_exception_into_states_runtime() -> None:
    def broken() -> Any:
        raise KeyError("injected")

    [ok, failed] = run_on_threads([lambda: 1, broken], 2, stop_on_error=False)
    assert ok.value == 1
    assert failed.error is not None and failed.error.error == RUNTIME
    assert "KeyError" in failed.error.cause and "injected" in failed.error.cause
    assert not failed.cancelled


def test_a_thread_placed_branch_that_hits_an_engine_fault_fails_the_state(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def detach(value: Any) -> Any:
        raise RecursionError("injected while detaching a branch result")

    monkeypatch.setattr(execution_module, "detach", detach)
    orchestrator = _orchestrator(tmp_path, Options(parallel=PARALLEL_THREADS, vcpus=2))
    try:
        result = orchestrator.execute([1, 2])
    finally:
        orchestrator.close()
    assert result.status == FAILED
    assert result.error == RUNTIME
    assert "RecursionError" in result.cause and "injected" in result.cause
    assert result.state == "M"


def test_a_pooled_worker_that_hits_an_engine_fault_fails_the_state(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def run_job(self: Any, ctx: dict, job: dict) -> Any:
        raise AttributeError("injected in the worker's job runner")

    # The workers are forked when the Orchestrator loads: patch before.
    monkeypatch.setattr(forkpool.ForkPool, "_run_job", run_job)
    orchestrator = _orchestrator(tmp_path, Options(vcpus=2))
    try:
        assert orchestrator.pool.wanted(orchestrator.options)
        result = orchestrator.execute([1, 2, 3])
    finally:
        orchestrator.close()
    assert result.status == FAILED
    assert result.error == RUNTIME
    assert "AttributeError" in result.cause and "injected" in result.cause


class _TimingOutInvoker:
    """A platform whose socket times out: what ``urllib`` raises then."""

    platform = "openwhisk"
    payload_limit = 1024 * 1024

    def invoke(self, payload: dict[str, Any], timeout: float | None) -> Any:
        raise TimeoutError("timed out")


def test_a_spilled_group_whose_invocation_times_out_fails_the_state(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAASTLANE_SPILL", "always")
    options = Options(vcpus=1, max_containers=2, placements={"M": CONTAINERS})
    orchestrator = _orchestrator(tmp_path, options)
    try:
        spiller = Spiller(orchestrator.workflow, options, orchestrator.pool,
                          _TimingOutInvoker(), None)
        execution = Execution("wf", [1, 2], orchestrator.functions, options,
                              sections=Sections(spiller))
        with pytest.raises(Exception) as raised:
            run_machine(orchestrator.workflow, [1, 2], execution)
    finally:
        orchestrator.close()
    error = raised.value
    assert getattr(error, "error", None) == RUNTIME, error
    assert "TimeoutError" in error.cause and "timed out" in error.cause
