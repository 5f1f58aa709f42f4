"""What a user's usual mistakes must never cost them, through the CLI as they run it.

Each test fails without its fix: composing into the app (or any folder holding what
Faastlane did not write) is refused and deletes nothing; a stopped run leaves no process
and no temporary folder; an invalid workflow exits 3, a failed execution 1 and names its
state; the input can come from stdin; ``--debug`` works after the command; an unknown flag
shows the command's own usage. (Engine faults in each placement: tests/unit/test_engine_faults.py.)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from integration.apps import ROOT, faastlane, write_app

ECHO = "def handler(event, context):\n    return event\n"


def _chain_app(app: Path) -> Path:
    return write_app(app, {"StartAt": "Echo", "States": {
        "Echo": {"Type": "Task", "Resource": "echo", "End": True}}}, {"echo": ECHO})


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


# ------------------------------------------------------------------ never lose work


def test_compose_into_the_app_itself_is_refused_and_deletes_nothing(app_dir: Path) -> None:
    _chain_app(app_dir)
    before = _tree(app_dir)
    for command in (("compose", str(app_dir), "-o", str(app_dir)),
                    ("run", str(app_dir), "--keep", str(app_dir)),
                    ("compose", str(app_dir), "-o", str(app_dir.parent))):
        done = faastlane(*command)
        assert done.code == 2, (command, done.stderr)
        assert "app folder" in done.stderr
        assert _tree(app_dir) == before  # functions/ and workflow.json untouched


def test_compose_refuses_a_foreign_folder_and_mixes_nothing_in(app_dir: Path,
                                                              tmp_path: Path) -> None:
    _chain_app(app_dir)
    other = tmp_path / "notes"
    other.mkdir()
    (other / "todo.txt").write_text("mine")
    (other / "functions").mkdir()
    (other / "functions" / "keep.py").write_text("# mine too")
    done = faastlane("compose", str(app_dir), "-o", str(other))
    assert done.code == 2
    assert "not an action faastlane composed" in done.stderr
    assert sorted(p.name for p in other.rglob("*")) == ["functions", "keep.py", "todo.txt"]


def test_recompose_replaces_an_earlier_action_but_not_files_added_to_it(
        app_dir: Path, tmp_path: Path) -> None:
    _chain_app(app_dir)
    out = tmp_path / "action"
    assert faastlane("compose", str(app_dir), "-o", str(out)).code == 0
    assert faastlane("compose", str(app_dir), "-o", str(out)).code == 0  # ours: replaced
    (out / "my-notes.md").write_text("added by hand")
    done = faastlane("compose", str(app_dir), "-o", str(out))
    assert done.code == 2
    assert "my-notes.md" in done.stderr
    assert (out / "my-notes.md").read_text() == "added by hand"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".faastlane-")]


# ------------------------------------------------------------------ exit codes, reports


def test_an_invalid_workflow_exits_3_and_a_failed_execution_1_naming_its_state(
        app_dir: Path) -> None:
    write_app(app_dir, {"StartAt": "Charge", "States": {
        "Charge": {"Type": "Task", "Resource": "charge", "End": True}}},
        {"charge": "def handler(event, context):\n    raise ValueError('card declined')\n"})
    failed = faastlane("run", str(app_dir))
    assert failed.code == 1
    assert failed.json["Error"] == "ValueError"
    assert "failed in state 'Charge': ValueError: card declined" in failed.stderr
    # The stack trace names the user's own file, not the deleted temporary copy.
    assert f'File "{app_dir / "functions" / "charge.py"}"' in failed.stderr
    assert str(app_dir / "functions" / "charge.py") in json.loads(failed.json["Cause"])[
        "stackTrace"][0]
    (app_dir / "workflow.json").write_text('{"StartAt": "Nowhere", "States": {}}')
    refused = faastlane("run", str(app_dir))
    assert refused.code == 3
    assert refused.stdout == ""


def test_input_from_stdin_and_debug_after_the_command(app_dir: Path) -> None:
    _chain_app(app_dir)
    done = subprocess.run([sys.executable, "-m", "faastlane", "run", str(app_dir),
                           "--input-file", "-"], input='{"from": "stdin"}',
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"from": "stdin"}
    missing = faastlane("validate", str(app_dir / "nope"), "--debug")
    assert missing.code != 0
    assert "Traceback" in missing.stderr  # --debug after the command is honoured
    quiet = faastlane("validate", str(app_dir / "nope"))
    assert "Traceback" not in quiet.stderr and quiet.code == 2


def test_an_unknown_flag_shows_the_commands_own_usage(app_dir: Path) -> None:
    done = faastlane("run", str(app_dir), "--inptu", "{}")
    assert done.code == 2
    assert done.stderr.startswith("usage: faastlane run ")
    assert "unrecognized arguments: --inptu" in done.stderr


# ------------------------------------------------------------------ signals


def _descendants(pid: int) -> list[int]:
    sys.path.insert(0, str(ROOT / "composer"))
    from faastlane.runtime.platforms.shutdown import descendants

    return descendants(pid)


def _sleepy_branches(app: Path) -> Path:
    """Two Parallel branches whose function sleeps two minutes."""
    sleepy = "import time\n\ndef handler(event, context):\n    time.sleep(120)\n"
    return write_app(app, {"StartAt": "P", "States": {"P": {
        "Type": "Parallel", "End": True, "Branches": [
            {"StartAt": n, "States": {n: {"Type": "Task", "Resource": "sleepy", "End": True}}}
            for n in ("A", "B")]}}}, {"sleepy": sleepy})


def test_sigterm_to_the_cli_stops_every_process_and_removes_its_temporary_folder(
        app_dir: Path, tmp_path: Path) -> None:
    _sleepy_branches(app_dir)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch))
    cli = subprocess.Popen([sys.executable, "-m", "faastlane", "run", str(app_dir)],
                           cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    deadline = time.monotonic() + 60
    while len(_descendants(cli.pid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.2)  # the Orchestrator and its two forked branches
    started = _descendants(cli.pid)
    assert len(started) >= 3, started
    assert [p.name for p in scratch.iterdir() if p.name.startswith("faastlane-run-")]
    cli.send_signal(signal.SIGTERM)
    _, err = cli.communicate(timeout=30)
    assert cli.returncode == 128 + signal.SIGTERM
    assert "Traceback" not in err
    for pid in started:
        assert not Path(f"/proc/{pid}").exists() or _zombie(pid), f"process {pid} left"
    assert not [p.name for p in scratch.iterdir() if p.name.startswith("faastlane-run-")]


@pytest.mark.parametrize("isolation", ["none", "process"])
def test_sigkill_to_the_cli_stops_the_run_and_the_next_run_removes_its_folder(
        app_dir: Path, tmp_path: Path, isolation: str) -> None:
    # SIGKILL cannot be handled: the run's processes stop by themselves when the CLI is
    # gone (the kernel's parent-death signal), and its temporary folder, which nothing
    # could remove then, is removed by the next run -- a folder it did not make is not.
    _sleepy_branches(app_dir)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    foreign = scratch / "faastlane-run-not-ours"
    foreign.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch))
    cli = subprocess.Popen([sys.executable, "-m", "faastlane", "run", str(app_dir),
                            "--isolation", isolation], cwd=ROOT, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while len(_descendants(cli.pid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.2)  # the Orchestrator and its branches (or sandboxes)
    time.sleep(0.5)
    started = _descendants(cli.pid)
    assert len(started) >= 3, started
    left = [p for p in scratch.iterdir() if p.name != foreign.name]
    assert len(left) == 1, left
    cli.kill()
    cli.communicate(timeout=30)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(
            Path(f"/proc/{pid}").exists() and not _zombie(pid) for pid in started):
        time.sleep(0.1)
    assert [pid for pid in started if Path(f"/proc/{pid}").exists() and not _zombie(pid)
            ] == [], "processes outlived the CLI"
    assert left[0].exists()  # nothing could remove it: SIGKILL
    done = faastlane("run", str(_chain_app(tmp_path / "other")), "--input", "{}", env=env)
    assert done.code == 0, done.stderr
    assert not left[0].exists()
    assert foreign.exists()  # not made by a faastlane command: left alone


def test_sigterm_to_the_orchestrator_stops_its_workers(app_dir: Path, tmp_path: Path) -> None:
    sleepy = "import time\n\ndef handler(event, context):\n    time.sleep(120)\n"
    write_app(app_dir, {"StartAt": "M", "States": {"M": {
        "Type": "Map", "End": True, "ItemsPath": "$.items", "ItemProcessor": {
            "StartAt": "S", "States": {"S": {"Type": "Task", "Resource": "sleepy",
                                             "End": True}}}}}}, {"sleepy": sleepy})
    out = tmp_path / "action"
    assert faastlane("compose", str(app_dir), "-o", str(out)).code == 0
    action = subprocess.Popen([sys.executable, str(out), "--input", '{"items": [1, 2]}'],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(_descendants(action.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    started = _descendants(action.pid)
    assert len(started) >= 2, started
    action.send_signal(signal.SIGTERM)
    action.communicate(timeout=30)
    assert action.returncode == 128 + signal.SIGTERM
    time.sleep(0.5)
    for pid in started:
        assert not Path(f"/proc/{pid}").exists() or _zombie(pid), f"worker {pid} left"


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return True
    return stat[stat.rfind(b")") + 2:].split()[0] == b"Z"


# ------------------------------------------------------------------ where output goes


def test_branch_output_is_labelled_and_the_trace_has_its_own_file(app_dir: Path,
                                                                 tmp_path: Path) -> None:
    talk = "def handler(event, context):\n    print('hello', end='')\n    print(' there')\n" \
           "    return event\n"
    write_app(app_dir, {"StartAt": "P", "States": {"P": {
        "Type": "Parallel", "End": True, "Branches": [
            {"StartAt": n, "States": {n: {"Type": "Task", "Resource": "talk", "End": True}}}
            for n in ("Left", "Right")]}}}, {"talk": talk})
    trace_file = tmp_path / "trace.jsonl"
    done = faastlane("run", str(app_dir), "--trace", str(trace_file))
    assert done.code == 0, done.stderr
    lines = done.stderr.splitlines()
    assert "[Left/talk] hello there" in lines and "[Right/talk] hello there" in lines
    assert not [line for line in lines if line.startswith("{")]  # no trace on stderr
    records = [json.loads(line) for line in trace_file.read_text().splitlines()]
    assert records[0]["trace"] == "faastlane"
    assert {r.get("state") for r in records[1:]} >= {"P", "Left", "Right"}


def test_functions_run_in_the_task_root_not_where_the_user_stood(app_dir: Path,
                                                                 tmp_path: Path) -> None:
    where = "import os\n\ndef handler(event, context):\n    return os.getcwd()\n"
    write_app(app_dir, {"StartAt": "W", "States": {
        "W": {"Type": "Task", "Resource": "where", "End": True}}}, {"where": where})
    out = tmp_path / "action"
    elsewhere = tmp_path / "somewhere"
    elsewhere.mkdir()
    done = subprocess.run([sys.executable, "-m", "faastlane", "run", str(app_dir), "--keep",
                           str(out)], cwd=elsewhere, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT / "composer")))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == str(out)  # the action folder, as /var/task on Lambda
