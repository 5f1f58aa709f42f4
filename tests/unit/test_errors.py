"""Retry/Catch matching of error names (Step Functions developer guide, "Error names")."""

from faastlane.runtime.asl.errors import error_matches


def test_a_name_matches_itself_only() -> None:
    assert error_matches(["MyError"], "MyError")
    assert not error_matches(["MyError"], "OtherError")
    assert not error_matches(["myerror"], "MyError")  # names are case-sensitive


def test_states_all_matches_everything_but_terminal_errors() -> None:
    assert error_matches(["States.ALL"], "ValueError")
    assert error_matches(["States.ALL"], "States.Timeout")
    assert error_matches(["States.ALL"], "States.TaskFailed")
    # "A retry or catch on States.ALL won't catch States.Runtime errors."
    assert not error_matches(["States.ALL"], "States.Runtime")
    assert not error_matches(["States.ALL"], "States.DataLimitExceeded")


def test_task_failed_matches_every_error_except_timeout() -> None:
    # "States.TaskFailed ... acts as a wildcard that matches any known error name except
    # for States.Timeout."
    assert error_matches(["States.TaskFailed"], "KeyError")
    assert error_matches(["States.TaskFailed"], "States.Permissions")
    assert not error_matches(["States.TaskFailed"], "States.Timeout")
    assert error_matches(["States.TaskFailed", "States.Timeout"], "States.Timeout")


def test_any_name_in_the_list_matches() -> None:
    assert error_matches(["A", "B", "C"], "B")
    assert not error_matches([], "B")
