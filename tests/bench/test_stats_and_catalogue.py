"""Statistics, output comparison and the workload catalogue."""

import json
import math

import pytest

from faastlane_bench import catalogue, stats
from faastlane_bench.systems.step_functions import lambda_arns


def test_percentile_is_nearest_rank():
    values = list(range(1, 101))
    assert stats.percentile(values, 99) == 99
    assert stats.percentile(values, 50) == 50
    assert stats.percentile([7.0], 99) == 7.0
    assert math.isnan(stats.percentile([], 99))


def test_reduction_and_ratio():
    assert stats.reduction(5.0, 100.0) == 95.0
    assert stats.reduction(200.0, 100.0) == -100.0
    assert math.isnan(stats.ratio(1.0, 0.0))


def test_expected_outputs_may_name_only_some_fields():
    output = {"image_id": 1, "digit": 7, "extra": [1, 2]}
    assert catalogue.contains(output, {"digit": 7})
    assert not catalogue.contains(output, {"digit": 1})
    assert not catalogue.contains({"a": [1, 2]}, {"a": [1]})


def test_volatile_fields_are_left_out_everywhere():
    one = {"model": {"name": "svc", "trained_at": "t1"}, "digit": 3}
    two = {"model": {"name": "svc", "trained_at": "t2"}, "digit": 3}
    assert catalogue.comparable("ml-predict", one) == catalogue.comparable("ml-predict", two)
    assert catalogue.comparable("ml-predict", {"reports": [one]}) == {
        "reports": [{"model": {"name": "svc"}, "digit": 3}]}
    assert catalogue.comparable("finra", one) == one


@pytest.mark.integration  # runs ml-predict's generate_input.py
def test_every_example_with_an_input_is_benchmarked(tmp_path):
    workloads = {w.name: w for w in catalogue.example_workloads(tmp_path)}
    assert set(workloads) == {"finra", "healthcare", "sentiment", "ml-predict"}
    finra = workloads["finra"]
    assert finra.size == 50 and finra.expected_file
    # ml-predict's input is generated (not committed): into the run's scratch folder.
    scan = workloads["ml-predict"].input_file
    assert scan.startswith(str(tmp_path)) and json.loads(open(scan).read())["image"]


@pytest.mark.integration  # runs ml-predict's generate_input.py
def test_systems_include_the_full_system_and_process_isolation(tmp_path):
    finra = next(w for w in catalogue.example_workloads(tmp_path) if w.name == "finra")
    names = [s.name for s in catalogue.systems_for(finra)]
    # mpk on the cpython-mpk runtime: with keys where the CPU has them, else unenforced
    mpk, _ = catalogue.mpk_system()
    assert names == ["Faastlane-NS", "Faastlane (process)", *([mpk.name] if mpk else []),
                     "Faastlane-Th", "Faastlane-P", "OpenWhisk-style", "StepFunctions-style"]
    sentiment = next(w for w in catalogue.example_workloads(tmp_path)
                     if w.name == "sentiment")
    # Process isolation (warm sandboxes) is measured for every app.
    assert [s.name for s in catalogue.systems_for(sentiment)][:2] == [
        "Faastlane-NS", "Faastlane (process)"]


def test_step_functions_get_full_function_arns():
    states = {"A": {"Type": "Task", "Resource": "validate", "Next": "P"},
              "P": {"Type": "Parallel", "Branches": [{"StartAt": "B", "States": {
                  "B": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                        "Parameters": {"FunctionName": "charge:live"}, "End": True}}}]}}
    lambda_arns(states)
    prefix = "arn:aws:lambda:us-east-1:123456789012:function:"
    assert states["A"]["Resource"] == prefix + "validate"
    branch = states["P"]["Branches"][0]["States"]["B"]
    assert branch["Parameters"]["FunctionName"] == prefix + "charge"


def test_goals_are_judged_from_the_run():
    from faastlane_bench import report

    def system(kind, e2e, interaction, planning=None, handoffs=None):
        return {"kind": kind, "planning": planning if planning is not None else {},
                "end_to_end_ms": {"median": e2e, "p99": e2e},
                "interaction_ms": {"median": interaction},
                "halves_end_to_end_ms": [e2e, e2e], "page_faults_per_instance": 1.0,
                "peak_rss_mb": 1.0, "checks": {"matches_reference": True},
                "handoffs": handoffs or {}}
    document = {"workloads": [
        {"name": "finra", "app": "finra", "group": "apps", "systems": {
            "Faastlane-NS": system("faastlane", 100.0, 10.0, {"isolation": "none"}),
            "Faastlane (process)": system("faastlane", 130.0, 12.0, {}),
            "Faastlane-Th": system("faastlane", 95.0, 5.0, {"threads_only": True}),
            "OpenWhisk-style": system("openwhisk", 400.0, 40.0)}},
        {"name": "chain-1KB", "app": "chain", "group": "handoff", "systems": {
            "Faastlane-NS": system("faastlane", 1.0, 0.1, {"isolation": "none"}, {
                "start -> Hop1": {"median_ms": 1.0, "n": 1},
                "Hop1 -> Hop2": {"median_ms": 0.008, "n": 1}})}}]}
    goals = {g["goal"]: g for g in report.enrich(document)["goals"]}
    handoff = goals["one sequential hand-off, Faastlane-NS (chain, 1 KB; from traces)"]
    assert handoff["measured"] == pytest.approx(8.0) and handoff["met"]
    finra = goals["finra: interaction latency vs OpenWhisk-style, Faastlane-NS"]
    assert finra["measured"] == pytest.approx(75.0) and finra["met"]
    fast = goals["finra: Faastlane-NS (default placement) vs OpenWhisk-style, end to end"]
    assert fast["measured"] == pytest.approx(4.0) and fast["met"]
    slow = goals["finra: Faastlane (process) (default placement) vs OpenWhisk-style, "
                 "end to end"]
    assert slow["measured"] == pytest.approx(400 / 130) and slow["met"]
    price = goals["finra: isolation's price, Faastlane (process) vs threads-only none (-Th)"]
    assert price["measured"] == pytest.approx(130 / 95) and not price["met"]
    planner = goals["finra: the planner's none placement (-NS) vs threads-only none (-Th)"]
    assert planner["measured"] == pytest.approx(100 / 95) and planner["met"]
    markdown = report.goals_markdown(list(goals.values()))
    assert "| yes |" in markdown and "| no |" in markdown
