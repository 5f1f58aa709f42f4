"""What the validator reports: a :class:`Problem` in a file of the app, at an RFC 6901
JSON pointer (or a line)."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

WORKFLOW_FILE = "workflow.json"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an app.

    ``file`` is the app-relative path of the file it is in (``workflow.json``,
    ``faastlane.json``, ``functions/resize/function.json``, ...). ``pointer`` is an RFC
    6901 JSON pointer into that file when it is JSON (``""`` is the whole document,
    ``/States/Validate/Next`` a state's ``Next`` field); ``line`` a line number where one
    is known (a Python file). ``secondary`` marks a problem that is usually the
    consequence of another (a state unreachable from StartAt): it is listed after the
    others.
    """

    pointer: str
    message: str
    file: str = WORKFLOW_FILE
    line: int | None = None
    secondary: bool = False

    def __str__(self) -> str:
        return f"{self.pointer or '/'}: {self.message}"

    def render(self, app: str = "") -> str:
        """One line, as a compiler says it: ``APP/workflow.json: /States/A/Next: message``,
        ``APP/functions/f.py:3: message``, or ``APP/functions/f.py: message`` for the
        whole file; ``app`` is the app folder as the user named it."""
        path = os.path.join(app, self.file)
        if self.line is not None and self.pointer:  # a parsed JSON/YAML file
            return f"{path}:{self.line}: {self.pointer}: {self.message}"
        if self.line is not None:
            return f"{path}:{self.line}: {self.message}"
        if self.pointer:
            return f"{path}: {self.pointer}: {self.message}"
        return f"{path}: {self.message}"

    def as_json(self) -> dict[str, object]:
        """For ``validate --json``: the file (relative to the app), where in it, what."""
        return {"file": self.file, "pointer": self.pointer, "line": self.line,
                "message": self.message}


def summary(problems: Sequence[Problem], app: str = "") -> str:
    """``1 problem in APP/workflow.json``, ``3 problems: 2 in APP/workflow.json, 1 in
    APP/faastlane.json``."""
    counts: dict[str, int] = {}
    for problem in sorted(problems, key=lambda p: _file_order(p.file)):
        path = os.path.join(app, problem.file)
        counts[path] = counts.get(path, 0) + 1
    total = f"{len(problems)} problem{'' if len(problems) == 1 else 's'}"
    if len(counts) == 1:
        return f"{total} in {next(iter(counts))}"
    return f"{total}: " + ", ".join(f"{n} in {path}" for path, n in counts.items())


def nearest_line(lines: Mapping[str, int], pointer: str) -> int | None:
    """The line of the node at ``pointer`` in a parsed file, else of its nearest ancestor."""
    while True:
        if pointer in lines:
            return lines[pointer]
        if not pointer:
            return None
        pointer = pointer.rsplit("/", 1)[0]


def pointer(*tokens: str | int) -> str:
    """Build a JSON pointer from reference tokens, escaping ``~`` and ``/`` (RFC 6901)."""
    return "".join("/" + str(token).replace("~", "~0").replace("/", "~1") for token in tokens)


def child(base: str, *tokens: str | int) -> str:
    """Extend the pointer ``base`` by ``tokens``."""
    return base + pointer(*tokens)


def closest(word: object, candidates: Iterable[object]) -> str | None:
    """The candidate a misspelt ``word`` most probably meant (same letters in another
    case, or close by :mod:`difflib`'s measure), or ``None``."""
    if not isinstance(word, str):
        return None
    names = sorted({c for c in candidates if isinstance(c, str) and c != word})
    folded = [name for name in names if name.casefold() == word.casefold()]
    close = folded or difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(word: object, candidates: Iterable[object]) -> str:
    """``"; did you mean 'X'?"`` for the candidate closest to ``word``, or ``""``."""
    found = closest(word, candidates)
    return "" if found is None else f"; did you mean {found!r}?"


def _sort_token(token: str) -> tuple[int, int, str]:
    # Array indices sort numerically so /Branches/2 comes before /Branches/10; a state
    # name of other digits ("¹", which int() refuses) sorts as a name.
    return (0, int(token), "") if token.isascii() and token.isdigit() else (1, 0, token)


def _file_order(file: str) -> tuple[int, str]:
    # The workflow first, then the settings, then the functions' files.
    return ({WORKFLOW_FILE: 0, "faastlane.json": 1}.get(file, 2), file)


def sort_key(
    problem: Problem,
) -> tuple[bool, tuple[int, str], list[tuple[int, int, str]], int, str]:
    """Order problems by importance (root causes before their likely consequences), then
    by file, then by pointer (document order of arrays kept) or line, then by message."""
    tokens = problem.pointer.split("/")[1:] if problem.pointer else []
    return (problem.secondary, _file_order(problem.file),
            [_sort_token(token) for token in tokens], problem.line or 0, problem.message)
