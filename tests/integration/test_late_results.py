"""A Task's timeout holds however late a busy machine lets the Orchestrator read the
result: a function that returned past its Task's deadline timed out, in every placement.
The machine's load is made real here: the Orchestrator process is stopped (SIGSTOP)
while the function runs past its timeout, and continued after it returned."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from faastlane.runtime.platforms.shutdown import descendants

from .apps import ROOT, chain, task, write_app

SLOW = """
import sys, time

def handler(event, context):
    sys.stderr.write("slow: started\\n")
    sys.stderr.flush()
    time.sleep(1.5)
    return {"finished": True}
"""


def _orchestrator(cli: subprocess.Popen) -> int:
    """The composed action's process: the CLI's child running the action folder."""
    for pid in descendants(cli.pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        if b"--flight" in argv:
            return pid
    raise AssertionError("no Orchestrator process found")


@pytest.mark.parametrize("isolation", ["none", "process"])
@pytest.mark.parametrize("timeout", ["TimeoutSeconds", "function"])
def test_a_result_read_after_the_deadline_is_a_timeout(tmp_path: Path, isolation: str,
                                                       timeout: str) -> None:
    fields = {"TimeoutSeconds": 1} if timeout == "TimeoutSeconds" else {}
    settings = {"functions": {"slow": {"timeout": 1}}} if timeout == "function" else None
    app = write_app(tmp_path / "app", chain(("Slow", task("slow", **fields))),
                    {"slow": SLOW}, settings=settings)
    cli = subprocess.Popen([sys.executable, "-m", "faastlane", "run", str(app), "--input",
                            "{}", "--isolation", isolation], cwd=ROOT, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert cli.stderr is not None
        for line in cli.stderr:
            if "slow: started" in line:
                break
        orchestrator = _orchestrator(cli)
        os.kill(orchestrator, signal.SIGSTOP)  # a machine too busy to run it
        time.sleep(3)  # the function returns meanwhile, 0.5 s past its deadline
        os.kill(orchestrator, signal.SIGCONT)
        out, _ = cli.communicate(timeout=120)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    assert cli.returncode == 1
    error = json.loads(out)
    expected = "States.Timeout" if timeout == "TimeoutSeconds" else "Sandbox.Timedout"
    assert error["Error"] == expected
