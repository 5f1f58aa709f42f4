"""ASL errors: the ``States.*`` names and how ``ErrorEquals`` matches them.

Every failure inside a workflow is a :class:`StatesError` carrying an error name and a
cause string, exactly what Step Functions reports in ``{"Error": ..., "Cause": ...}``
and what ``Retry``/``Catch`` rules match against.
"""

from __future__ import annotations

ALL = "States.ALL"
BRANCH_FAILED = "States.BranchFailed"
DATA_LIMIT_EXCEEDED = "States.DataLimitExceeded"
EXCEED_TOLERATED_FAILURE_THRESHOLD = "States.ExceedToleratedFailureThreshold"
HEARTBEAT_TIMEOUT = "States.HeartbeatTimeout"
INTRINSIC_FAILURE = "States.IntrinsicFailure"
ITEM_READER_FAILED = "States.ItemReaderFailed"
NO_CHOICE_MATCHED = "States.NoChoiceMatched"
PARAMETER_PATH_FAILURE = "States.ParameterPathFailure"
PERMISSIONS = "States.Permissions"
QUERY_EVALUATION_ERROR = "States.QueryEvaluationError"
RESULT_PATH_MATCH_FAILURE = "States.ResultPathMatchFailure"
RESULT_WRITER_FAILED = "States.ResultWriterFailed"
RUNTIME = "States.Runtime"
TASK_FAILED = "States.TaskFailed"
TIMEOUT = "States.Timeout"

# "A retry or catch on States.ALL won't catch States.Runtime errors" and States.ALL
# "doesn't catch the States.DataLimitExceeded terminal error type" (Step Functions
# developer guide, "Error names").
_TERMINAL = frozenset({RUNTIME, DATA_LIMIT_EXCEEDED})


class StatesError(Exception):
    """A named ASL error: what a state raises and what Retry/Catch see."""

    # Set only on errors of a JSONata evaluation (read with getattr; absent until set):
    location: str  # the field whose evaluation failed (interpreter.dataflow.located)
    evaluation_recorded: bool  # its EvaluationFailed event is already in the history

    def __init__(self, error: str | None, cause: str | None = None) -> None:
        super().__init__(f"{error}: {cause}" if cause else str(error))
        self.error = error  # None only for a Fail state that names no Error
        self.cause = cause  # None when nothing gave one (Step Functions omits it)
        self.state: str | None = None  # the innermost state it failed, once known

    def to_json(self) -> dict[str, str]:
        """The ``{"Error", "Cause"}`` object of a failed execution (and of ``Catch``);
        an absent error or cause is left out, as Step Functions leaves it out."""
        return error_object(self.error, self.cause)


def unexpected_cause(exc: BaseException) -> str:
    """The cause of a States.Runtime error made of an exception nobody expected."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def error_object(error: str | None, cause: str | None) -> dict[str, str]:
    """``{"Error", "Cause"}`` without the members that are absent."""
    out = {}
    if error is not None:
        out["Error"] = error
    if cause is not None:
        out["Cause"] = cause
    return out


def is_terminal(error: str | None) -> bool:
    """Errors that no Retry or Catch can handle: they always fail the execution."""
    return error in _TERMINAL


def error_matches(error_equals: list[str], error: str | None) -> bool:
    """Whether one Retrier's or Catcher's ``ErrorEquals`` list matches ``error``.

    ``States.ALL`` matches every error but the terminal ones; ``States.TaskFailed``
    matches every error except ``States.Timeout`` (and the terminal ones); any other
    name matches only itself.
    """
    if is_terminal(error):
        return False
    for name in error_equals:
        if name == error:
            return True
        if name == ALL:
            return True
        if name == TASK_FAILED and error != TIMEOUT:
            return True
    return False
