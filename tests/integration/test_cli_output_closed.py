"""``faastlane COMMAND | head -1``: when standard output's reader goes away before the
output ends, a command ends quietly, as Unix tools do: nothing on stderr (no traceback),
exit 141 (128 + SIGPIPE); ``run`` exits with the execution's own status.

The reader is gone before the command starts (the pipe's read end is closed), so every
write fails, as the writes after ``head`` has exited do.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from integration.apps import ROOT, write_app
from integration.examples import EXAMPLES

SIGPIPE_EXIT = 128 + signal.SIGPIPE


def _into_closed_pipe(*args: str, env: dict[str, str] | None = None
                      ) -> subprocess.CompletedProcess:
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", "faastlane", *args], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=300, cwd=ROOT,
                              env=env)
    finally:
        os.close(write)


@pytest.mark.parametrize("args", [["validate", "--json"], ["validate"]])
def test_validate(args: list[str]) -> None:
    done = _into_closed_pipe(args[0], str(EXAMPLES / "finra"), *args[1:])
    assert (done.returncode, done.stderr) == (SIGPIPE_EXIT, "")


def test_validate_of_an_app_with_problems(app_dir: Path) -> None:
    write_app(app_dir, {"StartAt": "Nowhere", "States": {}}, {})
    done = _into_closed_pipe("validate", str(app_dir), "--json")
    assert (done.returncode, done.stderr) == (SIGPIPE_EXIT, "")


def test_run(app_dir: Path) -> None:
    """The composed action writes the output itself: it ends quietly too."""
    write_app(app_dir, {"StartAt": "Echo", "States": {"Echo": {
        "Type": "Task", "Resource": "echo", "End": True}}},
        {"echo": "def handler(event, context):\n    return event\n"})
    done = _into_closed_pipe("run", str(app_dir), "--input", '{"x": 1}')
    # Its one line on stderr: the isolation it chose (said once by every run).
    assert (done.returncode, done.stderr.count("\n")) == (0, 1), done.stderr
    assert done.stderr.startswith("faastlane: isolation ")
    assert ": isolated by default" in done.stderr


def test_profile_json(tmp_path: Path) -> None:
    env = dict(os.environ, FAASTLANE_CACHE=str(tmp_path / "cache"))
    done = _into_closed_pipe("profile", "--json", "--max-processes", "1", "--seconds",
                             "0.02", env=env)
    assert (done.returncode, done.stderr) == (SIGPIPE_EXIT, "")
