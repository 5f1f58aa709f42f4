"""``faastlane compose --profile-from TRACE``: the planner weighs a Parallel/Map's jobs on
threads against warm processes with the compute times a real ``faastlane run --trace``
measured. Short jobs go to threads (a process hand-off costs more than the GIL); long
CPU-bound ones to processes; a trace of another workflow is refused, naming the states
this one does not have."""

from __future__ import annotations

import json
from pathlib import Path

from integration.apps import faastlane, write_app

# Busy for ``ms`` of CPU time (process_time: the GIL-bound work the planner weighs).
WORK = '''
import time

def handler(event, context):
    end = time.process_time() + event["ms"] / 1000
    while time.process_time() < end:
        pass
    return event["ms"]
'''


def _app(root: Path) -> Path:
    return write_app(root, {"StartAt": "Jobs", "States": {"Jobs": {
        "Type": "Map", "ItemsPath": "$.items",
        "ItemProcessor": {"StartAt": "Work", "States": {"Work": {
            "Type": "Task", "Resource": "Work", "End": True}}},
        "End": True}}}, {"Work": WORK})


def _traced(app: Path, tmp_path: Path, ms: float, name: str) -> Path:
    trace = tmp_path / f"{name}.jsonl"
    items = json.dumps({"items": [{"ms": ms}] * 6})
    done = faastlane("run", str(app), "--isolation", "none", "--input", items,
                     "--trace", str(trace))
    assert done.code == 0, done.stderr
    return trace


def _placement(app: Path, out: Path, trace: Path) -> dict:
    done = faastlane("compose", str(app), "-o", str(out), "--isolation", "none",
                     "--vcpus", "2", "--profile-from", str(trace))
    assert done.code == 0, done.stderr
    plan = json.loads((out / "plan.json").read_text())
    assert plan["measured"]["from"] == str(trace)
    assert plan["measured"]["map_jobs"] == {"Jobs": 6}
    return plan["states"]["Jobs"]


def test_short_jobs_go_to_threads_and_long_ones_to_processes(tmp_path: Path) -> None:
    app = _app(tmp_path / "app")
    short = _placement(app, tmp_path / "short", _traced(app, tmp_path, 0.05, "short"))
    assert short["placement"] == "threads", short["reason"]
    assert "on threads" in short["reason"] and "warm processes" in short["reason"]
    long = _placement(app, tmp_path / "long", _traced(app, tmp_path, 60, "long"))
    assert long["placement"] == "processes", long["reason"]
    assert long["reason"].startswith("measured (")
    # Without a trace, the vCPUs decide as before.
    done = faastlane("compose", str(app), "-o", str(tmp_path / "plain"), "--isolation",
                     "none", "--vcpus", "2")
    assert done.code == 0, done.stderr
    plain = json.loads((tmp_path / "plain" / "plan.json").read_text())
    assert "measured" not in plain and plain["states"]["Jobs"]["placement"] == "processes"


def test_a_trace_of_another_workflow_is_refused_naming_its_states(tmp_path: Path) -> None:
    app = _app(tmp_path / "app")
    trace = _traced(app, tmp_path, 0.05, "ours")
    other = write_app(tmp_path / "other", {"StartAt": "Only", "States": {
        "Only": {"Type": "Pass", "End": True}}}, {})
    done = faastlane("compose", str(other), "-o", str(tmp_path / "out"),
                     "--profile-from", str(trace))
    assert done.code == 2
    assert done.stderr.strip().endswith("this one has no state Jobs, Work"), done.stderr
    assert not (tmp_path / "out").exists()
    not_a_trace = faastlane("compose", str(app), "-o", str(tmp_path / "out2"),
                            "--profile-from", str(app / "workflow.json"))
    assert not_a_trace.code == 2 and "not a trace" in not_a_trace.stderr


def test_without_a_trace_the_orchestrator_learns_it_and_minus_p_does_not(
        tmp_path: Path) -> None:
    app = _app(tmp_path / "app")
    for name, flags in (("default", []), ("forked", ["--processes-only"])):
        out = tmp_path / name
        done = faastlane("compose", str(app), "-o", str(out), "--isolation", "none",
                         "--vcpus", "2", *flags)
        assert done.code == 0, done.stderr
        plan = json.loads((out / "plan.json").read_text())
        jobs = plan["states"]["Jobs"]
        assert jobs["placement"] == "processes"
        if flags:
            assert "learned" not in jobs and plan["options"]["learned"] == {}
        else:
            # The hand-off a job must outweigh: the profiled fork, else its default.
            assert jobs["learned"] is True and plan["options"]["learned"]["Jobs"] > 0
            assert jobs["reason"].startswith("nothing measured its jobs")


def test_profile_app_runs_it_once_and_shows_the_placement(tmp_path: Path) -> None:
    app = _app(tmp_path / "app")
    trace = tmp_path / "work.jsonl"
    items = json.dumps({"items": [{"ms": 60}] * 4})
    # Trusted code on threads (isolated, each call would be its sandbox's).
    done = faastlane("profile", str(app), "--input", items, "-o", str(trace), "--json",
                     "--isolation", "none")
    assert done.code == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["trace"] == str(trace) and trace.exists()
    jobs = shown["states"]["Jobs"]
    assert jobs["placement"] == "processes" and jobs["reason"].startswith("measured ("), jobs
    # What it printed is what compose makes of the same trace.
    assert _placement_of(app, tmp_path / "out", trace) == jobs


def _placement_of(app: Path, out: Path, trace: Path) -> dict:
    done = faastlane("compose", str(app), "-o", str(out), "--profile-from", str(trace),
                     "--isolation", "none")
    assert done.code == 0, done.stderr
    return json.loads((out / "plan.json").read_text())["states"]["Jobs"]


def test_profile_app_never_replaces_a_file_that_is_not_a_trace(tmp_path: Path) -> None:
    app = _app(tmp_path / "app")
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    done = faastlane("profile", str(app), "--input", '{"items": []}', "-o", str(notes))
    assert done.code != 0 and "is not a faastlane trace: not replaced" in done.stderr
    assert notes.read_text() == "mine\n"
    failed = faastlane("profile", str(app), "--input", '{"items": [{"ms": "x"}]}',
                       "-o", str(tmp_path / "t.jsonl"))
    assert failed.code != 0 and "the profiling run of" in failed.stderr
