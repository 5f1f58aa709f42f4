"""Load one hedge-fund portfolio's private book: positions, locates and the day's trades.

On AWS this would read the fund's trade store; the example ships the books as JSON files
beside the function so that it runs offline.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

PORTFOLIOS = Path(__file__).resolve().parent / "portfolios"
# Portfolio ids become file names: accept nothing that could walk out of the folder.
_PORTFOLIO_ID = re.compile(r"^[A-Z]{2}-\d{4}$")


class PortfolioNotFound(Exception):
    """No book is on file for the requested portfolio and trade date."""


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    portfolio_id = event["portfolio_id"]
    trade_date = event["trade_date"]
    if not isinstance(portfolio_id, str) or not _PORTFOLIO_ID.match(portfolio_id):
        raise ValueError(f"malformed portfolio id {portfolio_id!r}")
    path = PORTFOLIOS / f"{portfolio_id}.json"
    if not path.is_file():
        raise PortfolioNotFound(f"no portfolio {portfolio_id}")
    with path.open(encoding="utf-8") as f:
        book = json.load(f)
    if book["trade_date"] != trade_date:
        raise PortfolioNotFound(f"portfolio {portfolio_id} has no book for {trade_date}")
    return book
