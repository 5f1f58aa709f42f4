"""Fold the per-rule results of one portfolio's audit into the compliance report."""

from __future__ import annotations

from collections import Counter
from typing import Any

SEVERITIES = ("high", "medium", "low")


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    results: list[dict[str, Any]] = event["results"]
    by_severity = Counter({severity: 0 for severity in SEVERITIES})
    by_check: Counter[str] = Counter()
    flagged: set[str] = set()
    findings = []
    for result in results:
        count = len(result["violations"])
        by_severity[result["severity"]] += count
        by_check[result["check"]] += count
        for violation in result["violations"]:
            flagged.update(violation["trades"])
        if count:
            findings.append({key: result[key]
                             for key in ("rule_id", "check", "severity", "violations")})
    # A high-severity breach must be escalated; anything else goes to a reviewer.
    if by_severity["high"]:
        status = "ESCALATE"
    elif findings:
        status = "REVIEW"
    else:
        status = "PASS"
    return {
        "portfolio_id": event["portfolio_id"],
        "fund": event["fund"],
        "trade_date": event["trade_date"],
        "status": status,
        "rules_evaluated": len(results),
        "rules_failed": len(findings),
        "rules_passed": len(results) - len(findings),
        "items_checked": sum(result["checked"] for result in results),
        "violations": sum(by_severity.values()),
        "by_severity": dict(by_severity),
        "by_check": dict(sorted(by_check.items())),
        "flagged_trades": sorted(flagged),
        "findings": findings,
    }
