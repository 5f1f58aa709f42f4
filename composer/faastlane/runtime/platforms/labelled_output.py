"""Functions' output in a local run, each line labelled with the function that wrote it.

Parallel branches interleave their prints on one stderr; ``[Name] `` before each line
says whose it is (forked branches inherit the streams, so theirs are labelled too). The
Orchestrator's own lines stay as they are. Not under isolation mpk: the label's per-thread
line state would be written from inside a function's protection domain.
"""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Callable
from typing import BinaryIO, TextIO

from ..engine import inherited
from ..engine.functions import current_function


class LabelledStream(io.TextIOBase):
    """A text stream that puts ``[function] `` at the start of each line a function writes."""

    def __init__(self, stream: TextIO, current: Callable[[], str | None]) -> None:
        self._stream = stream
        self._current = current
        # This thread's unfinished line: whole lines are written at once, so that lines
        # of branches running side by side (threads, or forked processes sharing the
        # stream) never mix within a line.
        self._pending = threading.local()

    def write(self, text: str) -> int:
        name = self._current()
        if name is None or not text:
            return self._stream.write(text)
        written = len(text)
        text = getattr(self._pending, "text", "") + text
        complete, newline, rest = text.rpartition("\n")
        self._pending.text = rest
        if newline:
            self._stream.write("".join(f"[{name}] {line}\n"
                                       for line in complete.split("\n")))
        return written

    def flush(self) -> None:
        rest = getattr(self._pending, "text", "")
        name = self._current()
        if rest and name is not None:
            self._pending.text = ""
            self._stream.write(f"[{name}] {rest}")
        self._stream.flush()

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", "utf-8")

    @property
    def buffer(self) -> BinaryIO:
        """The underlying bytes (what is written there is not labelled)."""
        return self._stream.buffer


def install() -> None:
    """Label what functions print on stdout (already sent to stderr) and stderr."""
    inherited.remember(__name__, "install")
    sys.stdout = LabelledStream(sys.stdout, current_function)
    sys.stderr = LabelledStream(sys.stderr, current_function)
