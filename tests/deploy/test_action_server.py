"""The OpenWhisk action container protocol, served by action_server.py as a process."""

from __future__ import annotations

from . import protocol_checks as check
from .deploy_servers import ActionServer


def test_runs_finra_twice_with_the_packaged_zip(action_server: ActionServer, finra_zip: str):
    check.runs_finra(action_server, finra_zip)


def test_stays_warm_and_passes_ow_variables(action_server: ActionServer, small_zip: str):
    check.stays_warm_and_sees_ow_variables(action_server, small_zip)


def test_a_failing_function_is_an_error_result(action_server: ActionServer, small_zip: str):
    check.a_failing_function_is_an_error_result(action_server, small_zip)


def test_concurrent_runs_each_get_their_result(action_server: ActionServer, small_zip: str):
    check.concurrent_runs_each_get_their_result(action_server, small_zip)


def test_a_second_init_is_refused(action_server: ActionServer, small_zip: str):
    check.a_second_init_is_refused(action_server, small_zip)


def test_run_before_init(action_server: ActionServer):
    check.run_before_init(action_server)


def test_malformed_inits_are_refused_and_leave_it_uninitialised(action_server: ActionServer):
    check.malformed_inits(action_server)


def test_a_main_the_zip_lacks_fails_init(action_server: ActionServer, small_zip: str):
    check.a_missing_main_fails_init(action_server, small_zip)


def test_plain_source_init_env_and_a_malformed_run(action_server: ActionServer):
    check.plain_source_and_malformed_run(action_server)


def test_logs_end_each_activation_with_sentinels(action_server: ActionServer, small_zip: str):
    check.init_zip(action_server, small_zip)
    for n in range(3):
        assert action_server.run({"name": f"n{n}"})[0] == 200
    assert action_server.stdout is not None and action_server.stderr is not None
    check.logs_end_with_sentinels(action_server.stdout.read_text(),
                                  action_server.stderr.read_text(), 3)
