"""Independent reference for the FINRA audit: the expected report, in plain Python.

This does not import or call the workflow's functions. It reads the same shipped data
and re-derives every rule from its definition (README.md, "The rules"), written
separately and more naively (whole-day calendars, all-pairs scans), so that a mistake
in a function shows up as a difference from ``expected.json`` instead of being copied
into it.

    python examples/finra/reference.py              # rewrite expected*.json
    python examples/finra/reference.py input.json   # print one report
"""

from __future__ import annotations

import json
import sys
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FUNCTIONS = HERE / "functions"
HIGH_SEVERITY = "high"


def load(path: Path) -> Any:
    with path.open(encoding="utf-8") as f:
        return json.load(f)


def business_days(holidays: set[str], first: date, last: date) -> list[date]:
    """Every exchange business day from ``first`` to ``last`` inclusive."""
    days = []
    d = first
    while d <= last:
        if d.isoweekday() <= 5 and d.isoformat() not in holidays:
            days.append(d)
        d += timedelta(days=1)
    return days


def local(timestamp: str, offset: str) -> datetime:
    """A timestamp re-expressed at the exchange's UTC offset, offset dropped."""
    moment = datetime.fromisoformat(timestamp)
    hours, minutes = (int(x) for x in offset[1:].split(":"))
    shift = timedelta(hours=hours, minutes=minutes) * (-1 if offset[0] == "-" else 1)
    return (moment - moment.utcoffset() + shift).replace(tzinfo=None)


def evaluate(rule: dict, book: dict, market: dict) -> dict:
    quotes = market["quotes"]
    holidays = set(market["exchange"]["holidays"])
    offset = market["exchange"]["utc_offset"]
    scope = rule.get("scope", {})
    p = rule.get("params", {})

    def wanted(ticker: str) -> bool:
        return (ticker in scope.get("tickers", [ticker])
                and quotes[ticker]["sector"] in scope.get("sectors", [quotes[ticker]["sector"]]))

    ordered = sorted(book["trades"],
                     key=lambda t: (local(t["executed_at"], offset), t["trade_id"]))
    trades = [t for t in ordered if wanted(t["ticker"])]
    eod: dict[str, int] = dict(book["start_positions"])
    for t in ordered:
        eod[t["ticker"]] = eod.get(t["ticker"], 0) + (
            t["quantity"] if t["side"] == "BUY" else -t["quantity"])
    eod = {k: v for k, v in eod.items() if v}
    out: list[dict] = []

    def flag(ref: str, ids: list[str], observed: Any, limit: Any) -> None:
        out.append({"ref": ref, "trades": ids, "observed": observed, "limit": limit})

    check = rule["check"]
    checked = len(trades)
    if check == "price_range":
        k = p["tolerance_pct"] / 100
        for t in trades:
            lo = quotes[t["ticker"]]["low"] * (1 - k)
            hi = quotes[t["ticker"]]["high"] * (1 + k)
            if not lo <= t["price"] <= hi:
                flag(t["trade_id"], [t["trade_id"]], t["price"],
                     round(lo if t["price"] < lo else hi, 4))
    elif check == "price_vs_vwap":
        for t in trades:
            v = quotes[t["ticker"]]["vwap"]
            dev = 100 * abs(t["price"] - v) / v
            if dev > p["max_deviation_pct"]:
                flag(t["trade_id"], [t["trade_id"]], round(dev, 4), p["max_deviation_pct"])
    elif check == "settlement":
        for t in trades:
            executed = local(t["executed_at"], offset).date()
            following = business_days(holidays, executed + timedelta(days=1),
                                      executed + timedelta(days=30))
            due = following[p["cycle_days"] - 1].isoformat()
            if t["settlement_date"] != due:
                flag(t["trade_id"], [t["trade_id"]], t["settlement_date"], due)
    elif check == "trade_date":
        td = date.fromisoformat(book["trade_date"])
        recent = business_days(holidays, td - timedelta(days=30), td)
        earliest = recent[-1 - p["max_lag_business_days"]] if td in recent else None
        for t in trades:
            executed = local(t["executed_at"], offset).date()
            if executed > td:
                flag(t["trade_id"], [t["trade_id"]], executed.isoformat(), td.isoformat())
            elif executed < earliest:
                flag(t["trade_id"], [t["trade_id"]], executed.isoformat(), earliest.isoformat())
    elif check == "trading_hours":
        for t in trades:
            clock = local(t["executed_at"], offset).strftime("%H:%M:%S")
            if clock < p["open"] or clock > p["close"]:  # HH:MM:SS compares as text
                flag(t["trade_id"], [t["trade_id"]], clock, p["open"] + "-" + p["close"])
    elif check == "large_notional":
        for t in trades:
            notional = t["quantity"] * t["price"]
            if notional > p["max_notional"]:
                flag(t["trade_id"], [t["trade_id"]], round(notional, 2), p["max_notional"])
    elif check == "restricted_list":
        for t in trades:
            if t["ticker"] in p["tickers"]:
                flag(t["trade_id"], [t["trade_id"]], t["ticker"], p["list"])
    elif check == "wash_trade":
        buys = [t for t in trades if t["side"] == "BUY"]
        sales = [t for t in trades if t["side"] != "BUY"]
        for b in buys:
            for s in sales:
                if b["ticker"] != s["ticker"]:
                    continue
                gap = abs((local(s["executed_at"], offset)
                           - local(b["executed_at"], offset)).total_seconds()) / 60
                spread = 100 * abs(s["price"] - b["price"]) / b["price"]
                if gap <= p["window_minutes"] and spread <= p["price_tolerance_pct"]:
                    flag(b["trade_id"] + "/" + s["trade_id"], [b["trade_id"], s["trade_id"]],
                         round(gap, 2), p["window_minutes"])
    elif check == "short_locate":
        shorts = [t for t in trades if t["side"] == "SELL_SHORT"]
        checked = len(shorts)
        for i, t in enumerate(shorts):
            so_far = sum(x["quantity"] for x in shorts[:i + 1] if x["ticker"] == t["ticker"])
            located = book["locates"].get(t["ticker"], 0)
            if so_far > located:
                flag(t["trade_id"], [t["trade_id"]], so_far, located)
    elif check == "sale_marking":
        checked = sum(1 for t in trades if t["side"] == "SELL")
        for i, t in enumerate(ordered):
            if t["side"] != "SELL" or not wanted(t["ticker"]):
                continue
            held = book["start_positions"].get(t["ticker"], 0) + sum(
                x["quantity"] if x["side"] == "BUY" else -x["quantity"]
                for x in ordered[:i] if x["ticker"] == t["ticker"])
            if t["quantity"] > max(held, 0):
                flag(t["trade_id"], [t["trade_id"]], t["quantity"], max(held, 0))
    elif check == "volume_limit":
        names = sorted({t["ticker"] for t in trades})
        checked = len(names)
        for name in names:
            shares = sum(t["quantity"] for t in trades if t["ticker"] == name)
            pct = 100 * shares / quotes[name][p["basis"]]
            if pct > p["max_pct"]:
                flag(name, [], round(pct, 4), p["max_pct"])
    elif check == "position_limit":
        held = {k: v for k, v in eod.items() if wanted(k)}
        checked = len(held)
        for name in sorted(held):
            if abs(held[name]) > p["max_shares"]:
                flag(name, [], held[name], p["max_shares"])
    elif check == "concentration":
        value = {k: abs(v) * quotes[k]["close"] for k, v in eod.items()}
        gross = sum(value.values())
        group = (lambda k: k) if p["by"] == "ticker" else (lambda k: quotes[k]["sector"])
        keys = sorted({group(k) for k in value if wanted(k)})
        checked = len(keys)
        for key in keys:
            pct = 100 * sum(v for k, v in value.items() if wanted(k) and group(k) == key) / gross
            if pct > p["max_pct"]:
                flag(key, [], round(pct, 4), p["max_pct"])
    elif check == "margin":
        checked = 1
        cash = book["cash"]
        for t in ordered:
            cash += t["quantity"] * t["price"] * (-1 if t["side"] == "BUY" else 1)
        longs = sum(v * quotes[k]["close"] for k, v in eod.items() if v > 0)
        shorts = sum(-v * quotes[k]["close"] for k, v in eod.items() if v < 0)
        equity = cash + longs - shorts
        need = longs * p["long_pct"] / 100 + shorts * p["short_pct"] / 100
        if equity < need:
            flag(book["portfolio_id"], [], round(equity, 2), round(need, 2))
    else:
        raise ValueError(f"unknown check {check}")
    out.sort(key=lambda v: v["ref"])
    return {"rule_id": rule["rule_id"], "check": check, "severity": rule["severity"],
            "violations": out, "checked": checked}


def audit(request: dict) -> dict:
    """The audit report that the workflow must return for ``request``."""
    book = load(FUNCTIONS / "FetchPortfolioData" / "portfolios"
                / f"{request['portfolio_id']}.json")
    market = load(FUNCTIONS / "FetchMarketData" / "snapshots" / f"{request['trade_date']}.json")
    results = [evaluate(rule, book, market) for rule in request["rules"]]
    failed = [r for r in results if r["violations"]]
    counts = {"high": 0, "medium": 0, "low": 0}
    checks: dict[str, int] = {}
    for r in results:
        counts[r["severity"]] += len(r["violations"])
        checks[r["check"]] = checks.get(r["check"], 0) + len(r["violations"])
    flagged = sorted({i for r in results for v in r["violations"] for i in v["trades"]})
    if counts[HIGH_SEVERITY] > 0:
        status = "ESCALATE"
    else:
        status = "REVIEW" if failed else "PASS"
    return {
        "portfolio_id": book["portfolio_id"],
        "fund": book["fund"],
        "trade_date": request["trade_date"],
        "status": status,
        "rules_evaluated": len(results),
        "rules_failed": len(failed),
        "rules_passed": len(results) - len(failed),
        "items_checked": sum(r["checked"] for r in results),
        "violations": sum(counts.values()),
        "by_severity": counts,
        "by_check": {k: checks[k] for k in sorted(checks)},
        "flagged_trades": flagged,
        "findings": [{"rule_id": r["rule_id"], "check": r["check"], "severity": r["severity"],
                      "violations": r["violations"]} for r in failed],
    }


def main(argv: list[str]) -> None:
    if argv:
        print(json.dumps(audit(load(Path(argv[0]))), indent=1))
        return
    for name, target in (("input.json", "expected.json"), ("input-200.json", "expected-200.json")):
        report = audit(load(HERE / name))
        (HERE / target).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
