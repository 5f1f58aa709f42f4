"""Run one parameterised FINRA-style audit rule over a portfolio's trades and market data.

The event carries the rule (``check``, ``params``, optional ``scope``), the portfolio book
and the market snapshot. The result lists every violation found, each with the offending
trade(s) or ticker, the observed value and the limit it broke. Fifty rules means fifty
independent invocations of this handler, as in the Faastlane paper's FINRA workflow.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import date, datetime, time, timedelta, timezone
from typing import Any, NamedTuple

Violation = dict[str, Any]
SALES = ("SELL", "SELL_SHORT")


class UnknownCheck(Exception):
    """The rule names a check this function does not implement."""


# A NamedTuple, not a dataclass: dataclasses need the module in sys.modules, which a
# loader that execs the file by path (as a workflow runtime may) does not guarantee.
class Trade(NamedTuple):
    trade_id: str
    ticker: str
    side: str
    quantity: int
    price: float
    executed_at: datetime  # in the exchange's time zone
    settlement_date: str

    @property
    def notional(self) -> float:
        return self.quantity * self.price

    @property
    def signed_quantity(self) -> int:
        return self.quantity if self.side == "BUY" else -self.quantity


class Book:
    """A portfolio's day joined with the market snapshot, filtered to a rule's scope."""

    def __init__(self, portfolio: dict[str, Any], market: dict[str, Any],
                 scope: dict[str, list[str]] | None) -> None:
        if portfolio["trade_date"] != market["trade_date"]:
            raise ValueError(f"portfolio is for {portfolio['trade_date']}, "
                             f"market data for {market['trade_date']}")
        self.portfolio_id: str = portfolio["portfolio_id"]
        self.trade_date = date.fromisoformat(portfolio["trade_date"])
        self.quotes: dict[str, dict[str, Any]] = market["quotes"]
        self.holidays = {date.fromisoformat(d) for d in market["exchange"]["holidays"]}
        self.tz = _utc_offset(market["exchange"]["utc_offset"])
        self.cash: float = portfolio["cash"]
        self.start_positions: dict[str, int] = portfolio["start_positions"]
        self.locates: dict[str, int] = portfolio["locates"]
        self.scope = scope or {}
        # Execution order decides running positions; the id breaks timestamp ties.
        self.all_trades = sorted(
            (self._trade(t) for t in portfolio["trades"]),
            key=lambda t: (t.executed_at, t.trade_id),
        )
        self.trades = [t for t in self.all_trades if self.in_scope(t.ticker)]

    def _trade(self, raw: dict[str, Any]) -> Trade:
        if raw["ticker"] not in self.quotes:
            raise ValueError(f"trade {raw['trade_id']}: no market data for {raw['ticker']}")
        return Trade(raw["trade_id"], raw["ticker"], raw["side"], raw["quantity"],
                     raw["price"], datetime.fromisoformat(raw["executed_at"]).astimezone(self.tz),
                     raw["settlement_date"])

    def sector(self, ticker: str) -> str:
        return self.quotes[ticker]["sector"]

    def in_scope(self, ticker: str) -> bool:
        if "tickers" in self.scope and ticker not in self.scope["tickers"]:
            return False
        if "sectors" in self.scope and self.sector(ticker) not in self.scope["sectors"]:
            return False
        return True

    def end_of_day_positions(self) -> dict[str, int]:
        """Start-of-day positions plus every trade of the day, flat positions dropped."""
        positions = defaultdict(int, self.start_positions)
        for t in self.all_trades:
            positions[t.ticker] += t.signed_quantity
        return {ticker: qty for ticker, qty in positions.items() if qty != 0}

    def is_business_day(self, d: date) -> bool:
        return d.weekday() < 5 and d not in self.holidays

    def shift_business_days(self, d: date, n: int) -> date:
        step = timedelta(days=1 if n >= 0 else -1)
        remaining = abs(n)
        while remaining:
            d += step
            if self.is_business_day(d):
                remaining -= 1
        return d


def _utc_offset(text: str) -> timezone:
    sign = -1 if text.startswith("-") else 1
    hours, minutes = text.lstrip("+-").split(":")
    return timezone(sign * timedelta(hours=int(hours), minutes=int(minutes)))


def _violation(ref: str, trades: list[str], observed: Any, limit: Any) -> Violation:
    return {"ref": ref, "trades": trades, "observed": observed, "limit": limit}


# --- trade-level checks: (checked, violations) ------------------------------------------

def price_range(book: Book, params: dict[str, Any]) -> tuple[int, list[Violation]]:
    """Execution price inside the day's low-high range, widened by ``tolerance_pct``."""
    widen = params["tolerance_pct"] / 100
    found = []
    for t in book.trades:
        q = book.quotes[t.ticker]
        low, high = q["low"] * (1 - widen), q["high"] * (1 + widen)
        if t.price < low:
            found.append(_violation(t.trade_id, [t.trade_id], t.price, round(low, 4)))
        elif t.price > high:
            found.append(_violation(t.trade_id, [t.trade_id], t.price, round(high, 4)))
    return len(book.trades), found


def price_vs_vwap(book: Book, params: dict[str, Any]) -> tuple[int, list[Violation]]:
    """Execution price within ``max_deviation_pct`` of the day's VWAP."""
    found = []
    for t in book.trades:
        vwap = book.quotes[t.ticker]["vwap"]
        deviation = abs(t.price - vwap) / vwap * 100
        if deviation > params["max_deviation_pct"]:
            found.append(_violation(t.trade_id, [t.trade_id], round(deviation, 4),
                                    params["max_deviation_pct"]))
    return len(book.trades), found


def settlement(book: Book, params: dict[str, Any]) -> tuple[int, list[Violation]]:
    """Settlement date is T+``cycle_days`` exchange business days after execution."""
    found = []
    for t in book.trades:
        due = book.shift_business_days(t.executed_at.date(), params["cycle_days"]).isoformat()
        if t.settlement_date != due:
            found.append(_violation(t.trade_id, [t.trade_id], t.settlement_date, due))
    return len(book.trades), found


def trade_date(book: Book, params: dict[str, Any]) -> tuple[int, list[Violation]]:
    """Executed on the reported trade date, or at most ``max_lag_business_days`` before."""
    earliest = book.shift_business_days(book.trade_date, -params["max_lag_business_days"])
    found = []
    for t in book.trades:
        executed = t.executed_at.date()
        if executed > book.trade_date:
            found.append(_violation(t.trade_id, [t.trade_id], executed.isoformat(),
                                    book.trade_date.isoformat()))
        elif executed < earliest:
            found.append(_violation(t.trade_id, [t.trade_id], executed.isoformat(),
                                    earliest.isoformat()))
    return len(book.trades), found


def trading_hours(book: Book, params: dict[str, Any]) -> tuple[int, list[Violation]]:
    """Executed inside the session, ``open`` to ``close`` inclusive, exchange time."""
    opens, closes = time.fromisoformat(params["open"]), time.fromisoformat(params["close"])
    found = []
    for t in book.trades:
        at = t.executed_at.timetz().replace(tzinfo=None)
        if not opens <= at <= closes:
            found.append(_violation(t.trade_id, [t.trade_id], at.isoformat(),
                                    f"{params['open']}-{params['close']}"))
    return len(book.trades), found


def large_notional(book: Book, params: dict[str, Any]) -> tuple[int, list[Violation]]:
    """Single-trade notional at most ``max_notional`` dollars."""
    found = [
        _violation(t.trade_id, [t.trade_id], round(t.notional, 2), params["max_notional"])
        for t in book.trades if t.notional > params["max_notional"]
    ]
    return len(book.trades), found


def restricted_list(book: Book, params: dict[str, Any]) -> tuple[int, list[Violation]]:
    """No trade in a ticker on the named restricted list."""
    restricted = set(params["tickers"])
    found = [
        _violation(t.trade_id, [t.trade_id], t.ticker, params["list"])
        for t in book.trades if t.ticker in restricted
    ]
    return len(book.trades), found


def wash_trade(book: Book, params: dict[str, Any]) -> tuple[int, list[Violation]]:
    """No buy and sale of one ticker within ``window_minutes`` at prices within tolerance.

    Trades are scanned per ticker in time order, so each buy is only compared with the
    sales inside its window rather than with every sale of the day.
    """
    window = timedelta(minutes=params["window_minutes"])
    by_ticker: dict[str, list[Trade]] = defaultdict(list)
    for t in book.trades:
        by_ticker[t.ticker].append(t)
    found = []
    for trades in by_ticker.values():
        for i, first in enumerate(trades):
            for second in trades[i + 1:]:
                if second.executed_at - first.executed_at > window:
                    break
                if (first.side == "BUY") == (second.side == "BUY"):
                    continue
                buy, sale = (first, second) if first.side == "BUY" else (second, first)
                gap_pct = abs(sale.price - buy.price) / buy.price * 100
                if gap_pct <= params["price_tolerance_pct"]:
                    minutes = (second.executed_at - first.executed_at).total_seconds() / 60
                    found.append(_violation(f"{buy.trade_id}/{sale.trade_id}",
                                            [buy.trade_id, sale.trade_id],
                                            round(minutes, 2), params["window_minutes"]))
    return len(book.trades), found


def short_locate(book: Book, params: dict[str, Any]) -> tuple[int, list[Violation]]:
    """Reg SHO 203(b): the day's short sales per ticker stay within the shares located."""
    shorted: dict[str, int] = defaultdict(int)
    found = []
    for t in book.trades:
        if t.side != "SELL_SHORT":
            continue
        shorted[t.ticker] += t.quantity
        located = book.locates.get(t.ticker, 0)
        if shorted[t.ticker] > located:
            found.append(_violation(t.trade_id, [t.trade_id], shorted[t.ticker], located))
    return sum(t.side == "SELL_SHORT" for t in book.trades), found


def sale_marking(book: Book, params: dict[str, Any]) -> tuple[int, list[Violation]]:
    """Reg SHO 200(g): a sale marked long must not exceed the long position held."""
    positions = defaultdict(int, book.start_positions)
    found = []
    for t in book.all_trades:  # positions move with every trade, in scope or not
        available = max(positions[t.ticker], 0)
        if t.side == "SELL" and t.quantity > available and book.in_scope(t.ticker):
            found.append(_violation(t.trade_id, [t.trade_id], t.quantity, available))
        positions[t.ticker] += t.signed_quantity
    return sum(t.side == "SELL" for t in book.trades), found


# --- ticker- and account-level checks ---------------------------------------------------

def volume_limit(book: Book, params: dict[str, Any]) -> tuple[int, list[Violation]]:
    """Shares traded per ticker, both sides, at most ``max_pct`` of a volume figure.

    ``basis`` names the quote field: ``volume`` (the day's) or ``adv_20d`` (the 20-day
    average daily volume).
    """
    traded: dict[str, int] = defaultdict(int)
    for t in book.trades:
        traded[t.ticker] += t.quantity
    found = []
    for ticker in sorted(traded):
        pct = traded[ticker] / book.quotes[ticker][params["basis"]] * 100
        if pct > params["max_pct"]:
            found.append(_violation(ticker, [], round(pct, 4), params["max_pct"]))
    return len(traded), found


def position_limit(book: Book, params: dict[str, Any]) -> tuple[int, list[Violation]]:
    """End-of-day net position, long or short, at most ``max_shares`` per ticker."""
    positions = {t: q for t, q in book.end_of_day_positions().items() if book.in_scope(t)}
    found = [
        _violation(ticker, [], qty, params["max_shares"])
        for ticker, qty in sorted(positions.items()) if abs(qty) > params["max_shares"]
    ]
    return len(positions), found


def concentration(book: Book, params: dict[str, Any]) -> tuple[int, list[Violation]]:
    """No ticker (or sector) above ``max_pct`` of gross exposure at the close."""
    exposure: dict[str, float] = defaultdict(float)
    gross = 0.0
    for ticker, qty in book.end_of_day_positions().items():
        value = abs(qty) * book.quotes[ticker]["close"]
        gross += value
        if book.in_scope(ticker):
            exposure[ticker if params["by"] == "ticker" else book.sector(ticker)] += value
    found = []
    for key in sorted(exposure):
        pct = exposure[key] / gross * 100
        if pct > params["max_pct"]:
            found.append(_violation(key, [], round(pct, 4), params["max_pct"]))
    return len(exposure), found


def margin(book: Book, params: dict[str, Any]) -> tuple[int, list[Violation]]:
    """Account equity at the close covers the margin requirement on longs and shorts.

    Equity is end-of-day cash (start cash, less purchases, plus sale and short-sale
    proceeds) plus long market value less short market value, marked at the close.
    """
    cash = book.cash - sum(t.signed_quantity * t.price for t in book.all_trades)
    long_value = short_value = 0.0
    for ticker, qty in book.end_of_day_positions().items():
        value = qty * book.quotes[ticker]["close"]
        if qty > 0:
            long_value += value
        else:
            short_value -= value
    equity = cash + long_value - short_value
    required = long_value * params["long_pct"] / 100 + short_value * params["short_pct"] / 100
    found = []
    if equity < required:
        found.append(_violation(book.portfolio_id, [], round(equity, 2), round(required, 2)))
    return 1, found


CHECKS: dict[str, Callable[[Book, dict[str, Any]], tuple[int, list[Violation]]]] = {
    check.__name__: check
    for check in (price_range, price_vs_vwap, settlement, trade_date, trading_hours,
                  large_notional, restricted_list, wash_trade, short_locate, sale_marking,
                  volume_limit, position_limit, concentration, margin)
}


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    rule = event["rule"]
    check = CHECKS.get(rule["check"])
    if check is None:
        raise UnknownCheck(f"rule {rule['rule_id']}: unknown check {rule['check']!r}")
    book = Book(event["portfolio"], event["market"], rule.get("scope"))
    checked, violations = check(book, rule.get("params", {}))
    violations.sort(key=lambda v: v["ref"])
    return {
        "rule_id": rule["rule_id"],
        "check": rule["check"],
        "severity": rule["severity"],
        "passed": not violations,
        "checked": checked,
        "violations": violations,
    }
