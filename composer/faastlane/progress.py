"""Progress of long operations (vendoring, image builds, deploys, benchmarks) on stderr.

The one place that talks to the display library (``rich``): on a terminal, a spinner or
a bar with the elapsed time, gone when the step ends; anywhere else (tests, CI, a log
file) plain lines -- one when a step starts, one when it ends with its duration -- so
logs stay readable and nothing redraws. Callers never import ``rich`` themselves.

    with progress.step("vendoring requirements for Python 3.13"):
        ...
    with progress.steps("bench myapp", total=40) as bar:
        bar.advance("round 1/10")
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # imported only when drawn (start-up time)
    from rich.progress import Progress, TaskID

PREFIX = "faastlane"
QUIET_VARIABLE = "FAASTLANE_NO_PROGRESS"  # set: not even the plain lines


def _stream() -> TextIO:
    return sys.stderr


def is_live() -> bool:
    """Whether progress is drawn (stderr is a terminal and not switched off)."""
    stream = _stream()
    return hasattr(stream, "isatty") and stream.isatty() and os.environ.get("TERM") != "dumb"


def _quiet() -> bool:
    return bool(os.environ.get(QUIET_VARIABLE))


def say(message: str) -> None:
    """One line of progress (printed as is on a terminal too, above any live display)."""
    if _quiet():
        return
    stream = _stream()
    stream.write(f"{PREFIX}: {message}\n")
    stream.flush()


class Steps:
    """A step made of ``total`` parts (``None``: unknown); :meth:`advance` marks one."""

    def __init__(self, description: str, total: int | None, live: Progress | None,
                 task: TaskID | None) -> None:
        self.description = description
        self.total = total
        self.done = 0
        self._live = live
        self._task = task
        self._began = time.monotonic()

    def advance(self, note: str = "", parts: int = 1) -> None:
        self.done += parts
        if self._live is not None:
            assert self._task is not None  # given with live
            detail = f"{self.description}: {note}" if note else self.description
            self._live.update(self._task, advance=parts, description=detail)
        elif note and (not self.total or self.done >= self.total
                       or self.done % max(1, self.total // 5) == 0):
            # Plain lines (a log): about five per step, not one per part.
            of = f"/{self.total}" if self.total else ""
            say(f"{self.description}: {note} [{self.done}{of}, "
                f"{time.monotonic() - self._began:.1f}s]")

    def note(self, message: str) -> None:
        """A line that stays (a result, a warning), printed above the live display."""
        if self._live is not None:
            self._live.console.print(f"{PREFIX}: {message}", highlight=False)
        else:
            say(message)


@contextmanager
def steps(description: str, total: int | None = None) -> Iterator[Steps]:
    """A long operation with a bar (``total`` known) or a spinner; when it ends
    without an error one line says how long it took."""
    began = time.monotonic()
    if is_live() and not _quiet():
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        columns = [SpinnerColumn(), TextColumn("{task.description}")]
        if total:
            columns += [BarColumn(), MofNCompleteColumn()]
        columns.append(TimeElapsedColumn())
        with Progress(*columns, console=Console(file=_stream()), transient=True) as live:
            task = live.add_task(description, total=total)
            yield Steps(description, total, live, task)
    else:
        say(f"{description} ...")
        yield Steps(description, total, None, None)
    say(f"{description}: done in {time.monotonic() - began:.1f}s")


step = steps  # a step of unknown length reads better as ``with progress.step(...)``
