"""JSONata and workflow variables through the real CLI: ``faastlane run`` and ``compose``.

Each test names the Step Functions developer guide passage it follows: "Transforming data
with JSONata in Step Functions" (TDJ), "Passing data between states with variables"
(PDV), "JSONata functions provided by Step Functions" (JFN), "Handling errors in Step
Functions workflows" (Retry/Catch), "Invoke an AWS Lambda function" (lambda:invoke).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .apps import faastlane, write_app

FUNCTIONS = {
    # Prices the order it is given: the Payload of a lambda:invoke Task.
    "price": """
        def handler(event, context):
            return {"subtotal": sum(item["qty"] * item["unit"] for item in event["items"])}
        """,
    # Fails the first time for a given marker file, then succeeds.
    "flaky": """
        import os

        class Flaky(Exception):
            pass

        def handler(event, context):
            # In a sandbox, /tmp is its own: the marker's folder is made there.
            os.makedirs(os.path.dirname(event["marker"]), exist_ok=True)
            if not os.path.exists(event["marker"]):
                open(event["marker"], "w").close()
                raise Flaky("first call fails")
            return {"ok": True}
        """,
    "label": """
        def handler(event, context):
            return f"{event['name']}:{event['taxed']}"
        """,
    "boom": """
        def handler(event, context):
            raise ValueError("no such warehouse: " + event["warehouse"])
        """,
}


def order_workflow() -> dict:
    """A JSONata workflow: variables set early, read in Tasks, a Parallel, a Map, a Retry
    and a Catch, then gathered at the end."""
    branch_total = {"StartAt": "Total", "States": {"Total": {
        "Type": "Pass", "End": True,
        "Output": "{% $round($subtotal * (1 + $tax), 2) %}"}}}
    branch_count = {"StartAt": "Count", "States": {"Count": {
        "Type": "Pass", "End": True, "Output": "{% $count($states.input.items) %}"}}}
    return {
        "QueryLanguage": "JSONata",
        "StartAt": "Init",
        "States": {
            "Init": {"Type": "Pass", "Next": "Price",
                     "Assign": {"tax": 0.1, "pricer": "price",
                                "customer": "{% $states.input.customer %}"}},
            # lambda:invoke with Arguments: FunctionName and Payload are expressions.
            "Price": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                      "Arguments": {"FunctionName": "{% $pricer %}",
                                    "Payload": {"items": "{% $states.input.items %}"}},
                      "Assign": {"subtotal": "{% $states.result.Payload.subtotal %}"},
                      "Output": "{% $states.input %}", "Next": "Flaky"},
            "Flaky": {"Type": "Task", "Resource": "flaky",
                      "Arguments": {"marker": "{% $states.input.marker %}"},
                      "Retry": [{"ErrorEquals": ["Flaky"], "IntervalSeconds": 1,
                                 "MaxAttempts": 2}],
                      "Assign": {"retries": "{% $states.context.State.RetryCount %}"},
                      "Output": "{% $states.input %}", "Next": "Both"},
            "Both": {"Type": "Parallel", "Branches": [branch_total, branch_count],
                     "Assign": {"total": "{% $states.result[0] %}",
                                "count": "{% $states.result[1] %}"},
                     "Output": "{% $states.input %}", "Next": "Labels"},
            "Labels": {"Type": "Map", "Items": "{% $states.input.items %}",
                       "ItemSelector": {"name": "{% $states.context.Map.Item.Value.name %}",
                                        "taxed": "{% $states.context.Map.Item.Value.unit"
                                                 " * (1 + $tax) %}"},
                       "ItemProcessor": {"StartAt": "Label", "States": {"Label": {
                           "Type": "Task", "Resource": "label", "End": True}}},
                       "Assign": {"labels": "{% $states.result %}"},
                       "Next": "Ship"},
            "Ship": {"Type": "Task", "Resource": "boom",
                     "Arguments": {"warehouse": "{% $customer & '-north' %}"},
                     "Assign": {"shipped": True},
                     "Catch": [{"ErrorEquals": ["ValueError"], "Next": "Report",
                                "Assign": {"shipError": "{% $states.errorOutput.Error %}"},
                                "Output": {"cause": "{% $parse($states.errorOutput.Cause)"
                                                    ".errorMessage %}"}}],
                     "Next": "Report"},
            "Report": {"Type": "Pass", "End": True, "Output": {
                "customer": "{% $customer %}", "subtotal": "{% $subtotal %}",
                "total": "{% $total %}", "count": "{% $count %}",
                "labels": "{% $labels %}", "retries": "{% $retries %}",
                "shipError": "{% $shipError %}", "cause": "{% $states.input.cause %}",
                "shipped": "{% $exists($shipped) %}"}},
        },
    }


@pytest.mark.parametrize("isolation", ["none", "process"])
def test_jsonata_workflow_keeps_variables_across_tasks_parallel_map_retry_catch(
        app_dir: Path, tmp_path: Path, isolation: str) -> None:
    # PDV: variables assigned in one state are read by any later state, by Parallel
    # branches and Map iterations (forked processes here), and in Arguments; a retried
    # Task assigns once it succeeds ($states.context.State.RetryCount is 1 then); a
    # Catcher's Assign replaces the state's (TDJ: $states.errorOutput in a Catch).
    write_app(app_dir, order_workflow(), FUNCTIONS, {"isolation": isolation})
    data = {"customer": "acme", "marker": str(tmp_path / "flaky-marker"),
            "items": [{"name": "bolt", "qty": 10, "unit": 2},
                      {"name": "nut", "qty": 5, "unit": 1}]}
    done = faastlane("run", str(app_dir), "--input", json.dumps(data))
    assert done.code == 0, done.stderr
    assert done.json == {
        "customer": "acme", "subtotal": 25, "total": 27.5, "count": 2,
        "labels": ["bolt:2.2", "nut:1.1"], "retries": 1,
        "shipError": "ValueError", "cause": "no such warehouse: acme-north",
        "shipped": False}


def test_mixed_languages_share_variables(app_dir: Path) -> None:
    # TDJ, QueryLanguage per state; PDV: a variable is the same whichever language
    # assigns or reads it ($name in a JSONPath path, $name in a JSONata expression).
    workflow = {
        "StartAt": "Path",
        "States": {
            "Path": {"Type": "Pass", "Next": "Ata",
                     "Assign": {"pricer": "price", "first.$": "$.items[0].name"}},
            "Ata": {"Type": "Task", "QueryLanguage": "JSONata",
                    "Resource": "arn:aws:states:::lambda:invoke",
                    "Arguments": {"FunctionName": "{% $pricer %}",
                                  "Payload": {"items": "{% $states.input.items %}"}},
                    "Assign": {"subtotal": "{% $states.result.Payload.subtotal %}"},
                    "Output": {"first": "{% $first %}"}, "Next": "Back"},
            "Back": {"Type": "Pass", "End": True,
                     "Parameters": {"first.$": "$.first", "subtotal.$": "$subtotal",
                                    "sum.$": "States.MathAdd($subtotal, 1)"}},
        },
    }
    write_app(app_dir, workflow, {"price": FUNCTIONS["price"]})
    data = {"items": [{"name": "bolt", "qty": 3, "unit": 4}]}
    done = faastlane("run", str(app_dir), "--input", json.dumps(data))
    assert done.code == 0, done.stderr
    assert done.json == {"first": "bolt", "subtotal": 12, "sum": 13}


def test_query_evaluation_error_fails_the_execution(app_dir: Path) -> None:
    # TDJ: a failed JSONata evaluation is States.QueryEvaluationError.
    workflow = {"QueryLanguage": "JSONata", "StartAt": "P", "States": {"P": {
        "Type": "Pass", "End": True, "Output": "{% $states.input.a + 'x' %}"}}}
    write_app(app_dir, workflow, {})
    done = faastlane("run", str(app_dir), "--input", '{"a": 1}')
    assert done.code == 1
    assert done.json["Error"] == "States.QueryEvaluationError"


def test_compose_vendors_the_jsonata_engine_only_when_used(tmp_path: Path) -> None:
    # The action must run where nothing but the action is installed: a JSONata
    # workflow's action carries the engine (and its Apache-2.0 license); a JSONPath
    # one does not.
    ata = write_app(tmp_path / "ata", {"QueryLanguage": "JSONata", "StartAt": "P",
                                       "States": {"P": {"Type": "Pass", "End": True,
                                                        "Output": "{% $range(1, 3, 1) %}"}}},
                    {})
    path = write_app(tmp_path / "path", {"StartAt": "P", "States": {
        "P": {"Type": "Pass", "End": True}}}, {})
    for app in (ata, path):
        assert faastlane("compose", str(app), "-o", str(tmp_path / f"{app.name}-out")).code == 0
    vendored = tmp_path / "ata-out" / "jsonata"
    assert (vendored / "jsonata.py").is_file()
    assert "Apache License" in (vendored / "LICENSE").read_text()
    assert not (tmp_path / "path-out" / "jsonata").exists()
    # -S: no site-packages, so only the vendored engine can be imported.
    ran = subprocess.run([sys.executable, "-S", str(tmp_path / "ata-out"), "--input", "{}"],
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == [1, 2, 3]
