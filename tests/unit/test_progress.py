"""Progress on stderr: drawn by rich on a terminal, plain lines anywhere else."""

from __future__ import annotations

import io

import pytest

from faastlane import progress

pytestmark = pytest.mark.unit


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run_steps(stream: io.StringIO, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(progress.sys, "stderr", stream)
    with progress.steps("bench myapp", total=10) as bar:
        for index in range(10):
            bar.advance(f"round {index + 1}/10")
        bar.note("a line that stays")
    return stream.getvalue()


def test_plain_lines_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(progress.QUIET_VARIABLE, raising=False)
    lines = run_steps(io.StringIO(), monkeypatch).splitlines()
    assert lines[0] == "faastlane: bench myapp ..."
    rounds = [line for line in lines if "round " in line]
    # About five lines for ten parts, the last one always.
    assert [r.split(": ")[2].split(" [")[0] for r in rounds] == \
        ["round 2/10", "round 4/10", "round 6/10", "round 8/10", "round 10/10"]
    assert "faastlane: a line that stays" in lines
    assert lines[-1].startswith("faastlane: bench myapp: done in ")
    assert "\x1b[" not in "\n".join(lines)


def test_a_terminal_gets_rich_and_only_the_lasting_lines(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.delenv(progress.QUIET_VARIABLE, raising=False)
    monkeypatch.setenv("TERM", "xterm")
    out = run_steps(Terminal(), monkeypatch)
    assert "\x1b[" in out  # drawn (and cleared: transient) by rich
    assert "a line that stays" in out and "done in" in out
    assert "faastlane: bench myapp ..." not in out  # no plain start line on a terminal


def test_a_failed_step_says_no_done(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(progress.QUIET_VARIABLE, raising=False)
    stream = io.StringIO()
    monkeypatch.setattr(progress.sys, "stderr", stream)
    with pytest.raises(RuntimeError), progress.step("building image x"):
        raise RuntimeError("docker failed")
    assert stream.getvalue() == "faastlane: building image x ...\n"
