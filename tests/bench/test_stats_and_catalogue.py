"""Statistics, output comparison and the workload catalogue."""

import math

from faastlane.bench import catalogue, stats
from faastlane.bench.stepfunctions_baseline import lambda_arns


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


def test_every_example_with_an_input_is_benchmarked():
    names = {w.name for w in catalogue.example_workloads()}
    assert {"finra", "healthcare", "sentiment"} <= names
    finra = next(w for w in catalogue.example_workloads() if w.name == "finra")
    assert finra.size == 50 and finra.expected_file


def test_systems_include_the_full_system_only_when_it_differs():
    finra = next(w for w in catalogue.example_workloads() if w.name == "finra")
    names = [s.name for s in catalogue.systems_for(finra)]
    assert names == ["Faastlane-NS", "Faastlane (process)", "Faastlane-Th", "Faastlane-P",
                     "OpenWhisk-style", "StepFunctions-style"]
    sentiment = next(w for w in catalogue.example_workloads() if w.name == "sentiment")
    assert "Faastlane (process)" not in [s.name for s in catalogue.systems_for(sentiment)]


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
