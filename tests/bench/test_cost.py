"""The cost model: billing granularity, memory chunks, and the paper's comparison."""

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
