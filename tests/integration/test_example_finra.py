"""The FINRA example end to end: ``faastlane run`` against the independent reference.

Expected reports come from ``examples/finra/reference.py``, which recomputes every
audit rule in plain Python over the shipped data without calling the functions. The
workflow runs through the real CLI in a subprocess, as a user runs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .apps import Completed
from .examples import (
    EXAMPLES,
    assert_plain_lambda_handlers,
    load_module,
    run_example,
    run_example_ok,
)

APP = EXAMPLES / "finra"
FUNCTIONS = APP / "functions"
PORTFOLIOS = ("HF-1001", "HF-2002", "HF-3003")
STATE_LIMIT = 256 * 1024  # Step Functions' limit on one state's input or output

reference = load_module(APP / "reference.py", "finra_reference")


def _read(name: str) -> Any:
    return json.loads((APP / name).read_text(encoding="utf-8"))


def _run(*args: str) -> Completed:
    # This suite runs the installed entry point, the others ``python -m faastlane``.
    return run_example("finra", *args, console_script=True)


def _run_ok(*args: str) -> Any:
    return run_example_ok("finra", *args, console_script=True).json


# --- the workflow, run by the CLI ---------------------------------------------------------

@pytest.mark.parametrize("isolation", ["none", "process", "mpk"])
def test_fifty_rules_match_expected_report(isolation: str) -> None:
    report = _run_ok("--input-file", str(APP / "input.json"), "--isolation", isolation)
    assert report == _read("expected.json")


@pytest.mark.parametrize("isolation", ["none", "process", "mpk"])
def test_two_hundred_rules_match_expected_report(isolation: str) -> None:
    report = _run_ok("--input-file", str(APP / "input-200.json"), "--isolation", isolation)
    assert report == _read("expected-200.json")


@pytest.mark.parametrize("portfolio", ["HF-2002", "HF-3003"])
def test_other_portfolios_match_reference(portfolio: str) -> None:
    request = {**_read("input.json"), "portfolio_id": portfolio}
    report = _run_ok("--input", json.dumps(request), "--isolation", "none")
    assert report == reference.audit(request)


def test_unknown_portfolio_fails_the_execution_with_the_functions_error() -> None:
    request = {**_read("input.json"), "portfolio_id": "HF-9999"}
    done = _run("--input", json.dumps(request), "--isolation", "none")
    assert done.code == 1, done.stdout + done.stderr
    failure = json.loads(done.stdout)
    assert failure["Error"] == "PortfolioNotFound"
    assert "HF-9999" in failure["Cause"]


# --- the handlers on their own, chained as the workflow chains them -----------------------

def _handler(name: str) -> Any:
    single = FUNCTIONS / f"{name}.py"
    path = single if single.exists() else FUNCTIONS / name / "lambda_function.py"
    return load_module(path, f"finra_fn_{name}").handler


@pytest.mark.parametrize("portfolio", PORTFOLIOS)
def test_handlers_agree_with_reference_on_every_rule(portfolio: str) -> None:
    request = {**_read("input-200.json"), "portfolio_id": portfolio}
    fetch = {"portfolio_id": portfolio, "trade_date": request["trade_date"]}
    book = _handler("FetchPortfolioData")(fetch, None)
    market = _handler("FetchMarketData")({"trade_date": request["trade_date"]}, None)
    run_rule = _handler("RunAuditRule")
    results = [run_rule({"rule": rule, "portfolio": book, "market": market}, None)
               for rule in request["rules"]]
    report = _handler("AggregateAuditReport")(
        {"portfolio_id": portfolio, "fund": book["fund"],
         "trade_date": request["trade_date"], "results": results}, None)
    assert report == reference.audit(request)


def test_unknown_check_is_an_error_not_a_pass() -> None:
    book = _handler("FetchPortfolioData")({"portfolio_id": "HF-1001",
                                           "trade_date": "2024-03-27"}, None)
    market = _handler("FetchMarketData")({"trade_date": "2024-03-27"}, None)
    rule = {"rule_id": "X1", "check": "insider_vibes", "severity": "high", "params": {}}
    with pytest.raises(Exception) as caught:
        _handler("RunAuditRule")({"rule": rule, "portfolio": book, "market": market}, None)
    assert type(caught.value).__name__ == "UnknownCheck"


def test_portfolio_ids_cannot_name_files_outside_the_books() -> None:
    with pytest.raises(ValueError):
        _handler("FetchPortfolioData")({"portfolio_id": "../../workflow",
                                        "trade_date": "2024-03-27"}, None)


# --- the committed data and expectations ---------------------------------------------------

@pytest.mark.parametrize("input_name,expected_name", [("input.json", "expected.json"),
                                                      ("input-200.json", "expected-200.json")])
def test_committed_expectations_are_the_reference_audit(input_name: str,
                                                         expected_name: str) -> None:
    assert reference.audit(_read(input_name)) == _read(expected_name)


def test_committed_data_is_what_the_generator_writes(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(APP / "generate_data.py"), str(tmp_path)],
                   check=True, timeout=60)
    generated = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.json"))
    assert len(generated) == 6  # 3 portfolios, 1 snapshot, 2 inputs
    for relative in generated:
        assert (tmp_path / relative).read_bytes() == (APP / relative).read_bytes(), relative


def _finding(report: dict[str, Any], check: str, **params: Any) -> list[dict[str, Any]]:
    rules = {r["rule_id"]: r for r in _read("input.json")["rules"]}
    for finding in report["findings"]:
        rule = rules[finding["rule_id"]]
        if rule["check"] == check and rule["params"] == params and "scope" not in rule:
            return finding["violations"]
    return []


def test_expected_report_flags_the_problems_a_person_can_check_by_hand() -> None:
    """Anchors for the reference itself, derived from the calendar and the raw trades."""
    report = _read("expected.json")
    trades = _read("functions/FetchPortfolioData/portfolios/HF-1001.json")["trades"]
    settlement = {v["ref"]: v for v in _finding(report, "settlement", cycle_days=2)}
    # 2024-03-29 is Good Friday: T+2 from Wednesday the 27th is Monday 1 April.
    calendar_dated = [t["trade_id"] for t in trades if t["settlement_date"] == "2024-03-29"]
    assert calendar_dated
    for trade_id in calendar_dated:
        assert settlement[trade_id]["limit"] == "2024-04-01"
    # A trade from Tuesday the 26th settles on Thursday the 28th.
    for t in trades:
        if t["executed_at"].startswith("2024-03-26"):
            assert settlement[t["trade_id"]]["limit"] == "2024-03-28"
    # The session is inclusive: a 16:00:00 closing print is fine, 16:00:01 on is not.
    hours = {v["ref"] for v in _finding(report, "trading_hours", open="09:30:00",
                                        close="16:00:00")}
    closing = [t["trade_id"] for t in trades if t["executed_at"][11:19] == "16:00:00"]
    late = [t["trade_id"] for t in trades if t["executed_at"][11:19] > "16:00:00"]
    assert closing and late
    assert hours == set(late)
    assert report["status"] == "ESCALATE"  # restricted-list trades are high severity


# --- the app's shape ---------------------------------------------------------------------

def test_every_state_stays_under_the_step_functions_payload_limit() -> None:
    request = _read("input-200.json")
    book = _read("functions/FetchPortfolioData/portfolios/HF-1001.json")
    market = _read("functions/FetchMarketData/snapshots/2024-03-27.json")
    results = [{"rule": rule, "portfolio": book, "market": market} for rule in request["rules"]]
    assert max(len(json.dumps(item)) for item in results) < STATE_LIMIT  # one Map item
    after_fetch = {**request, "data": {"portfolio": book, "market": market}}
    report = _read("expected-200.json")
    # The state after the Map also carries every rule's result; the findings bound them.
    assert len(json.dumps(after_fetch)) + len(json.dumps(report)) < STATE_LIMIT


def test_map_runs_one_unthrottled_iteration_per_rule() -> None:
    workflow = _read("workflow.json")
    audit = workflow["States"]["RunAuditRules"]
    assert audit["Type"] == "Map" and audit["ItemsPath"] == "$.rules"
    assert audit.get("MaxConcurrency", 0) == 0
    for name, count in (("input.json", 50), ("input-200.json", 200)):
        rules = _read(name)["rules"]
        assert len({r["rule_id"] for r in rules}) == count
    assert {r["check"] for r in _read("input.json")["rules"]} == set(
        _handler("RunAuditRule").__globals__["CHECKS"])


def test_functions_are_plain_lambda_handlers() -> None:
    sources = list(FUNCTIONS.rglob("*.py"))
    assert len(sources) == 4
    assert_plain_lambda_handlers(sources)
    settings = _read("faastlane.json")
    names = {p.stem if p.parent == FUNCTIONS else p.parent.name for p in sources}
    assert set(settings["sensitive"]) | set(settings["untrusted"]) == names
    assert "FetchPortfolioData" in settings["sensitive"]
