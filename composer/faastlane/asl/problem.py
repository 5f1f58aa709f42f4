"""What the validator reports: a :class:`Problem` at an RFC 6901 JSON pointer."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a workflow definition.

    ``pointer`` is an RFC 6901 JSON pointer into ``workflow.json`` (``""`` is the
    whole document, ``/States/Validate/Next`` a state's ``Next`` field).
    """

    pointer: str
    message: str

    def __str__(self) -> str:
        return f"{self.pointer or '/'}: {self.message}"


def pointer(*tokens: str | int) -> str:
    """Build a JSON pointer from reference tokens, escaping ``~`` and ``/`` (RFC 6901)."""
    return "".join("/" + str(token).replace("~", "~0").replace("/", "~1") for token in tokens)


def child(base: str, *tokens: str | int) -> str:
    """Extend the pointer ``base`` by ``tokens``."""
    return base + pointer(*tokens)


def _sort_token(token: str) -> tuple[int, int, str]:
    # Array indices sort numerically so /Branches/2 comes before /Branches/10.
    return (0, int(token), "") if token.isdigit() else (1, 0, token)


def sort_key(problem: Problem) -> tuple[list[tuple[int, int, str]], str]:
    """Order problems by pointer (document order of arrays kept), then by message."""
    tokens = problem.pointer.split("/")[1:] if problem.pointer else []
    return [_sort_token(token) for token in tokens], problem.message
