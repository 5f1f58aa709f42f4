"""Errors the composer and CLI report to users: one line each, what and where."""

from __future__ import annotations

from faastlane.asl.problem import Problem


class FaastlaneError(Exception):
    """Anything the CLI turns into a message and an exit code instead of a traceback."""

    exit_code = 2


class AppError(FaastlaneError):
    """The app folder is missing or malformed beyond listing problems."""


class InvalidWorkflow(FaastlaneError):
    """The workflow or its app has problems; every one is listed. Exit code 3, so that
    scripts can tell a refused workflow (3) from a failed execution (1)."""

    exit_code = 3

    def __init__(self, problems: list[Problem], source: str = "workflow.json") -> None:
        super().__init__(f"{len(problems)} problem(s) in {source}")
        self.problems = problems
        self.source = source


class IsolationUnavailable(FaastlaneError):
    """The requested isolation cannot be given here: fail closed, never run weaker."""
