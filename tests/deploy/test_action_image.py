"""The Faastlane runtime image (docker/build.sh runtime): the same OpenWhisk protocol checks,
in a container of the image built from Debian packages with the cpython-mpk interpreter."""

from __future__ import annotations

import subprocess

from . import protocol_checks as check
from .server_fixtures import Containers


def test_the_image_runs_the_cpython_mpk_interpreter(runtime_image: str):
    done = subprocess.run(["docker", "run", "--rm", "--entrypoint", "python3", runtime_image,
                           "-c", "import sys, ssl, sqlite3; print(sys.prefix)"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "/opt/cpython-mpk"


def test_finra_and_the_small_app_run_warm(containers: Containers, finra_zip: str,
                                          small_zip: str):
    check.runs_finra(containers()[1], finra_zip)
    check.stays_warm_and_sees_ow_variables(containers()[1], small_zip)


def test_failures_concurrency_and_refusals(containers: Containers, small_zip: str):
    container, server = containers()
    check.run_before_init(server)
    check.malformed_inits(server)
    check.concurrent_runs_each_get_their_result(server, small_zip)
    assert server.init({"value": {"code": small_zip, "binary": True}})[0] == 403
    logs = subprocess.run(["docker", "logs", container], capture_output=True, text=True)
    check.logs_end_with_sentinels(logs.stdout, logs.stderr, 8)


def test_a_failing_function_in_the_image(containers: Containers, small_zip: str):
    check.a_failing_function_is_an_error_result(containers()[1], small_zip)


def test_a_cold_container_compiles_none_of_the_standard_library(containers: Containers,
                                                                 finra_zip: str):
    # The image carries the interpreter's bytecode (docker/build.sh compiles it): a
    # container that ran FINRA added no compiled file to it.
    container, server = containers()
    check.runs_finra(server, finra_zip)
    changed = subprocess.run(["docker", "diff", container], capture_output=True, text=True,
                             check=True).stdout.splitlines()
    added = [line.split(None, 1)[1] for line in changed if line.startswith("A ")]
    assert [path for path in added if path.startswith("/opt/")
            and path.endswith(".pyc")] == []
    assert any(path.startswith("/action") for path in added)  # the diff does see its files
