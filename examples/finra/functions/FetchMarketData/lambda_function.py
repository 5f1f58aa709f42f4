"""Fetch the public end-of-day market snapshot (OHLC, volume, VWAP, ADV) for a trade date.

A real deployment would call a market-data vendor; the example ships one day's snapshot
beside the function so that it runs offline.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"


class MarketDataUnavailable(Exception):
    """No snapshot exists for the requested trade date."""


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    # Parsing normalises the date and rejects anything that is not one (e.g. "../x").
    trade_date = date.fromisoformat(event["trade_date"]).isoformat()
    path = SNAPSHOTS / f"{trade_date}.json"
    if not path.is_file():
        raise MarketDataUnavailable(f"no market snapshot for {trade_date}")
    with path.open(encoding="utf-8") as f:
        return json.load(f)
