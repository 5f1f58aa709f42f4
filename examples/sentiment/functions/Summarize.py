"""Fold the per-review outcomes of one batch into its report.

Event: ``{"batch_id", "results": [{"review_id", "sentiment", "model", "action"}, ...]}``.
Result: the review ids by sentiment and by model, in input order, and how many reviews
were stored and published.
"""

from __future__ import annotations

from typing import Any

SENTIMENTS = ("positive", "negative", "neutral")


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    results = event["results"]
    by_model: dict[str, list[str]] = {}
    for result in results:
        by_model.setdefault(result["model"], []).append(result["review_id"])
    return {
        "batch_id": event["batch_id"],
        "reviews": len(results),
        **{s: [r["review_id"] for r in results if r["sentiment"] == s] for s in SENTIMENTS},
        "stored": sum(r["action"] == "stored" for r in results),
        "published": sum(r["action"] == "published" for r in results),
        "by_model": dict(sorted(by_model.items())),
    }
