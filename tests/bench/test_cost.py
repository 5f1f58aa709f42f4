"""The cost model: billing granularity, memory chunks, and the paper's comparison."""

import json
import os
import signal
import subprocess
import sys

import pytest

from faastlane_bench import cost


@pytest.fixture()
def prices():
    return cost.load_prices()


def test_prices_file_cites_its_sources(prices):
    assert prices["read_on"]
    for service in ("lambda", "step_functions", "s3"):
        assert "https://aws.amazon.com/" in prices["sources"][service]


def test_lambda_bills_each_started_millisecond(prices):
    one_ms = cost.lambda_cost(1.0, 1024, prices)
    assert cost.lambda_cost(0.2, 1024, prices) == one_ms
    assert cost.lambda_cost(1000.0, 1024, prices) == pytest.approx(
        prices["lambda"]["per_request"] + prices["lambda"]["per_gb_second"])
    assert cost.lambda_cost(1000.0, 512, prices) < cost.lambda_cost(1000.0, 1024, prices)


def test_express_rounds_to_100_ms_and_64_mb(prices):
    assert cost.express_cost(1.0, 1, prices) == cost.express_cost(100.0, 64, prices)
    assert cost.express_cost(101.0, 64, prices) > cost.express_cost(100.0, 64, prices)


def _workload(faastlane_ms, function_ms, calls, states):
    def system(kind, e2e, functions=None):
        return {"kind": kind, "planning": {}, "end_to_end_ms": {"median": e2e},
                "states_per_execution": states, "functions": functions or {}}
    return {"name": "w", "systems": {
        "Faastlane-NS": system("faastlane", faastlane_ms),
        "StepFunctions-style": system("stepfunctions", 500.0, {
            "f": {"median_ms": function_ms, "calls_per_execution": calls}})}}


def test_faastlane_is_one_lambda_and_step_functions_pays_per_transition(prices):
    row = cost.estimate(_workload(100.0, 10.0, 5, 6), prices, 1024, 1024)
    assert row.standard_usd == pytest.approx(
        5 * cost.lambda_cost(10.0, 1024, prices) + 6 * 2.5e-5)
    assert row.faastlane_usd == cost.lambda_cost(100.0, 1024, prices)
    assert row.faastlane_vs_standard_pct == pytest.approx(
        row.faastlane_usd / row.standard_usd * 100)


def test_no_estimate_without_a_baseline(prices):
    workload = _workload(1.0, 1.0, 1, 1)
    del workload["systems"]["StepFunctions-style"]
    assert cost.estimate(workload, prices, 128, 128) is None


# ``faastlane cost --results FILE`` through the CLI: a file it cannot use is one line.
def _cli(*args, stdout=subprocess.PIPE):
    return subprocess.run([sys.executable, "-m", "faastlane", *args], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=120)


@pytest.mark.parametrize("content, says", [
    (None, "cannot read {path}: No such file or directory (run `faastlane bench` first)"),
    ("", "{path} is not valid JSON: Expecting value (line 1, column 1)"),
    ("not json", "{path} is not valid JSON: Expecting value (line 1, column 1)"),
    (b"\xff\xfe", "{path} is not a results.json written by faastlane bench (not UTF-8 text)"),
    ("[]", "{path} is not a results.json written by faastlane bench (no 'workloads' list)"),
    ('{"workloads": [{"name": "w"}]}',
     "{path} is not a results.json written by faastlane bench (KeyError: 'systems')"),
])
def test_cost_of_a_file_it_cannot_use_is_one_line(tmp_path, content, says):
    path = tmp_path / "results.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    for command in (["cost", "--results", str(path)],
                    ["bench", "--from-results", str(path), "-o", str(tmp_path / "out")]):
        done = _cli(*command)
        assert done.returncode == 2, done.stderr
        assert done.stderr.splitlines() == ["faastlane: error: " + says.format(path=path)]
        assert not (tmp_path / "out").exists()


def test_cost_of_a_folder_is_one_line(tmp_path):
    done = _cli("cost", "--results", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"faastlane: error: cannot read {tmp_path}: Is a "
                                        "directory (run `faastlane bench` first)"]


def test_cost_into_a_closed_pipe_ends_quietly(tmp_path):
    """``faastlane cost --json | head -1``: the reader goes away before the output ends."""
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"workloads": [_workload(100.0, 10.0, 5, 6)]}))
    read, write = os.pipe()
    os.close(read)
    try:
        done = _cli("cost", "--results", str(path), "--json", stdout=write)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (128 + signal.SIGPIPE, "")
