"""Forked children: results over pipes, crashes, deadlines, cancellation."""

import os
import signal
import time

from faastlane.runtime.asl.errors import StatesError
from faastlane.runtime.engine.forking import run_forked


def test_results_come_back_in_job_order_from_children() -> None:
    work = [lambda i=i: {"i": i, "pid": os.getpid()} for i in range(5)]
    outcomes = run_forked(work, 2)
    assert [o.value["i"] for o in outcomes] == list(range(5))
    pids = {o.value["pid"] for o in outcomes}
    assert len(pids) == 2 and os.getpid() not in pids


def test_large_results_do_not_deadlock() -> None:
    size = 8 * 1024 * 1024  # far beyond a pipe's 64 KiB buffer
    outcomes = run_forked([lambda: "a" * size, lambda: "b" * size], 2)
    assert [len(o.value) for o in outcomes] == [size, size]


def test_states_errors_cross_the_pipe() -> None:
    def fail() -> None:
        raise StatesError("Custom.Error", "because")

    [outcome] = run_forked([fail], 1)
    assert (outcome.error.error, outcome.error.cause) == ("Custom.Error", "because")


def test_a_killed_child_is_reported_with_its_signal() -> None:
    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    [outcome] = run_forked([die], 1, describe=lambda i: f"branch {i}")
    assert outcome.error.error == "Runtime.ExitError"
    assert "branch 0" in outcome.error.cause and "signal: killed" in outcome.error.cause


def test_stop_on_error_cancels_the_slow_siblings() -> None:
    def fail() -> None:
        raise StatesError("Boom", "")

    started = time.monotonic()
    outcomes = run_forked([fail, lambda: time.sleep(30)], 2, stop_on_error=True)
    assert time.monotonic() - started < 10
    assert outcomes[0].error.error == "Boom" and not outcomes[0].cancelled
    assert outcomes[1].cancelled


def test_without_stop_on_error_every_job_finishes() -> None:
    def fail() -> None:
        raise StatesError("Boom", "")

    outcomes = run_forked([fail, lambda: 2, lambda: 3], 1, stop_on_error=False)
    assert outcomes[0].error.error == "Boom"
    assert [o.value for o in outcomes[1:]] == [2, 3]


def test_deadline_turns_unfinished_jobs_into_timeouts() -> None:
    started = time.monotonic()
    outcomes = run_forked([lambda: time.sleep(30), lambda: 1], 2,
                          deadline=time.monotonic() + 0.5)
    assert time.monotonic() - started < 10
    assert outcomes[0].error.error == "States.Timeout"
    assert outcomes[1].value == 1
