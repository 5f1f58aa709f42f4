"""Errors the composer and CLI report to users: one line each, what and where."""

from __future__ import annotations

from faastlane.validation.problem import Problem, summary


class FaastlaneError(Exception):
    """Anything the CLI turns into a message and an exit code instead of a traceback."""

    exit_code = 2


class AppError(FaastlaneError):
    """The app folder is missing or malformed beyond listing problems."""


class InvalidWorkflow(FaastlaneError):
    """The workflow or its app has problems; every one is listed. Exit code 3, so that
    scripts can tell a refused workflow (3) from a failed execution (1)."""

    exit_code = 3

    def __init__(self, problems: list[Problem], app: str = "") -> None:
        super().__init__(summary(problems, app))
        self.problems = problems
        self.app = app  # the app folder as the user named it: problems' files are in it


class IsolationUnavailable(FaastlaneError):
    """The requested isolation cannot be given here: fail closed, never run weaker."""
