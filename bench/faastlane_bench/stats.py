"""Small statistics for benchmark samples: medians, percentiles, ratios."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100), nearest-rank, as latency reports use it."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def summary(values: Sequence[float]) -> dict[str, float]:
    return {"n": len(values), "median": median(values), "p99": percentile(values, 99),
            "mean": statistics.fmean(values) if values else math.nan,
            "min": min(values) if values else math.nan}


def ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else math.nan


def reduction(ours: float, theirs: float) -> float:
    """How much lower ``ours`` is than ``theirs``, in percent (negative: higher)."""
    return (1 - ours / theirs) * 100 if theirs else math.nan
