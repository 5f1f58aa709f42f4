"""``faastlane bench`` leaves no temporary folder and no process behind: after a run, after
SIGTERM and after Ctrl-C (SIGINT), in a fresh TMPDIR, which every process the run starts
inherits (its workers get folders of their own below it).

The smallest run the harness allows: ``--quick --only chain`` (the hand-off chain on
Faastlane and the two baselines, with the local AWS endpoints it always starts).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

RUN_TIMEOUT = 600  # seconds; a loaded 2-core machine


def _default_sigint() -> None:
    # As from a terminal: a test run started as a background job of a non-interactive
    # shell (nohup ... &) ignores SIGINT, the bench would inherit that and never stop.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _bench(tmp: Path, out: Path, stderr: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "faastlane", "bench", "--quick", "--only", "chain",
         "--no-plots", "-o", str(out)],
        cwd=ROOT, env=dict(os.environ, TMPDIR=str(tmp)), stdout=subprocess.DEVNULL,
        stderr=stderr.open("w"), preexec_fn=_default_sigint)


def _processes_of(tmp: Path) -> list[str]:
    """Live processes whose TMPDIR is ``tmp`` or below it: the run's descendants, even
    those that left its process tree (servers in sessions of their own)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            stat = Path(f"/proc/{pid}/stat").read_bytes()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if stat[stat.rfind(b")") + 2:].split()[0] == b"Z":
            continue
        if any(e.startswith(f"TMPDIR={tmp}".encode()) for e in environ):
            found.append(f"{pid}: {cmdline[:200].decode(errors='replace')}")
    return found


def _nothing_left(tmp: Path) -> None:
    deadline = time.monotonic() + 10  # what was signalled a moment ago may still exit
    while _processes_of(tmp) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_of(tmp) == []
    assert sorted(p.name for p in tmp.iterdir()) == []


def test_a_run_leaves_nothing_in_tmpdir(tmp_path: Path):
    tmp, out = tmp_path / "tmp", tmp_path / "out"
    tmp.mkdir()
    bench = _bench(tmp, out, tmp_path / "stderr")
    assert bench.wait(RUN_TIMEOUT) == 0, (tmp_path / "stderr").read_text()[-4000:]
    assert (out / "results.json").is_file()
    _nothing_left(tmp)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_run_stops_everything_and_leaves_nothing(tmp_path: Path, signum: int):
    tmp, stderr = tmp_path / "tmp", tmp_path / "stderr"
    tmp.mkdir()
    bench = _bench(tmp, tmp_path / "out", stderr)
    deadline = time.monotonic() + RUN_TIMEOUT
    # Stopped while its systems start (the workers, their action servers, moto's
    # Step Functions): the moment the most is running and half-made.
    while "starting" not in stderr.read_text() and time.monotonic() < deadline:
        assert bench.poll() is None, stderr.read_text()[-4000:]
        time.sleep(0.2)
    while len(_processes_of(tmp)) < 6 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert bench.poll() is None, stderr.read_text()
    bench.send_signal(signum)
    assert bench.wait(120) == 128 + signum
    assert "Traceback" not in stderr.read_text()
    _nothing_left(tmp)
