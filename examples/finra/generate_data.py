"""Generate the FINRA example's data set: a market snapshot, portfolios and rule lists.

Run once (``python examples/finra/generate_data.py [OUT_DIR]``); the output is committed. A fixed
seed makes every run byte-identical, so the committed JSON can be regenerated and diffed.
Prices and volumes only resemble the US equity market of 27 March 2024: they are
synthetic, drawn around hand-picked levels, with a few deliberate compliance problems
planted in each portfolio so that the audit has something to find.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

SEED = 20240327
TRADE_DATE = date(2024, 3, 27)
ET = timezone(timedelta(hours=-4))  # New York is on EDT in late March
HERE = Path(__file__).resolve().parent
# Each fetch function ships its own data in its deployment package, as on Lambda; the
# private books are only in FetchPortfolioData's.
PORTFOLIOS = Path("functions", "FetchPortfolioData", "portfolios")
SNAPSHOTS = Path("functions", "FetchMarketData", "snapshots")

# NYSE full-day closures in 2024. Good Friday (29 March) sits inside the settlement
# window of our trade date, which is what makes the T+2 check interesting.
HOLIDAYS_2024 = [
    "2024-01-01", "2024-01-15", "2024-02-19", "2024-03-29", "2024-05-27",
    "2024-06-19", "2024-07-04", "2024-09-02", "2024-11-28", "2024-12-25",
]

# (ticker, sector, reference price, average daily volume in shares)
UNIVERSE: list[tuple[str, str, float, int]] = [
    ("AAPL", "Information Technology", 173.3, 57_000_000),
    ("MSFT", "Information Technology", 421.6, 20_000_000),
    ("NVDA", "Information Technology", 902.5, 50_000_000),
    ("AMD", "Information Technology", 178.7, 60_000_000),
    ("INTC", "Information Technology", 44.2, 45_000_000),
    ("CRM", "Information Technology", 301.1, 5_200_000),
    ("ORCL", "Information Technology", 127.4, 10_500_000),
    ("CSCO", "Information Technology", 50.1, 18_000_000),
    ("CRNC", "Information Technology", 15.6, 1_150_000),
    ("HLIT", "Information Technology", 13.2, 900_000),
    ("CLFD", "Information Technology", 29.8, 210_000),
    ("GOOGL", "Communication Services", 151.9, 28_000_000),
    ("META", "Communication Services", 493.9, 15_000_000),
    ("NFLX", "Communication Services", 628.4, 4_100_000),
    ("DIS", "Communication Services", 120.3, 10_200_000),
    ("VZ", "Communication Services", 41.9, 20_500_000),
    ("AMZN", "Consumer Discretionary", 179.7, 40_000_000),
    ("TSLA", "Consumer Discretionary", 179.8, 100_000_000),
    ("HD", "Consumer Discretionary", 385.2, 3_500_000),
    ("WMT", "Consumer Staples", 60.5, 15_500_000),
    ("KO", "Consumer Staples", 60.1, 13_000_000),
    ("PG", "Consumer Staples", 161.2, 6_600_000),
    ("JPM", "Financials", 199.5, 9_100_000),
    ("BAC", "Financials", 37.6, 38_000_000),
    ("GS", "Financials", 414.5, 2_300_000),
    ("XOM", "Energy", 116.0, 17_000_000),
    ("CVX", "Energy", 156.2, 8_100_000),
    ("COP", "Energy", 127.3, 6_400_000),
    ("JNJ", "Health Care", 158.0, 7_200_000),
    ("PFE", "Health Care", 27.5, 40_000_000),
    ("UNH", "Health Care", 490.1, 4_000_000),
    ("BA", "Industrials", 190.4, 8_300_000),
    ("CAT", "Industrials", 366.0, 3_000_000),
    ("SWBI", "Industrials", 16.8, 520_000),
    ("NEE", "Utilities", 63.1, 10_000_000),
]
SECTORS = sorted({sector for _, sector, _, _ in UNIVERSE})


def cents(x: float) -> float:
    return round(x, 2)


def market_snapshot(rng: random.Random) -> dict[str, Any]:
    """One trading day's open/high/low/close/volume/VWAP for every ticker."""
    quotes = {}
    for ticker, sector, ref, adv in UNIVERSE:
        prev_close = ref * (1 + rng.gauss(0, 0.01))
        open_ = prev_close * (1 + rng.gauss(0, 0.006))
        close = open_ * (1 + rng.gauss(0, 0.015))
        high = max(open_, close) * (1 + abs(rng.gauss(0, 0.008)))
        low = min(open_, close) * (1 - abs(rng.gauss(0, 0.008)))
        quotes[ticker] = {
            "sector": sector,
            "prev_close": cents(prev_close),
            "open": cents(open_),
            "high": cents(high),
            "low": cents(low),
            "close": cents(close),
            "vwap": round((high + low + 2 * close) / 4, 4),
            "volume": int(adv * rng.lognormvariate(0, 0.25)),
            "adv_20d": int(adv * (1 + rng.gauss(0, 0.05))),
        }
    return {
        "trade_date": TRADE_DATE.isoformat(),
        "source": "synthetic consolidated tape snapshot (generate_data.py)",
        "exchange": {"mic": "XNYS", "utc_offset": "-04:00", "holidays": HOLIDAYS_2024},
        "quotes": quotes,
    }


def add_business_days(start: date, days: int) -> date:
    holidays = {date.fromisoformat(d) for d in HOLIDAYS_2024}
    current = start
    while days:
        current += timedelta(days=1)
        if current.weekday() < 5 and current not in holidays:
            days -= 1
    return current


@dataclass
class Fund:
    portfolio_id: str
    name: str
    strategy: str
    book: list[str]  # tickers it trades
    shorts: list[str]  # tickers it may short (and holds locates for)
    n_trades: int
    position_value: float  # rough gross value of each start-of-day position
    cash: float  # start of day; negative is a margin loan from the prime broker


FUNDS = [
    Fund("HF-1001", "Meridian Long/Short Equity Fund LP", "long/short equity",
         ["AAPL", "MSFT", "NVDA", "AMD", "GOOGL", "META", "AMZN", "TSLA", "JPM", "GS",
          "XOM", "UNH", "BA", "CRNC", "HLIT", "NFLX"],
         ["TSLA", "BA", "INTC", "XOM"], 64, 2_400_000, -10_900_000),
    Fund("HF-2002", "Cobalt Quantitative Partners LP", "statistical arbitrage",
         ["AAPL", "MSFT", "AMD", "INTC", "ORCL", "CSCO", "BAC", "PFE", "VZ", "KO", "WMT",
          "CLFD", "DIS"],
         ["INTC", "BAC", "PFE", "VZ", "CSCO"], 72, 900_000, 4_000_000),
    Fund("HF-3003", "Harbor Value Opportunities Fund", "concentrated long-only value",
         ["JPM", "BAC", "CVX", "COP", "JNJ", "PFE", "PG", "CAT", "NEE", "SWBI", "HD"],
         [], 40, 3_500_000, -21_000_000),
]


def round_lot(shares: float) -> int:
    return max(100, int(round(shares / 100.0)) * 100)


def timestamp(day: date, seconds_after_midnight: int) -> str:
    moment = datetime(day.year, day.month, day.day, tzinfo=ET) + timedelta(
        seconds=seconds_after_midnight
    )
    return moment.isoformat()


OPEN_S, CLOSE_S = 9 * 3600 + 30 * 60, 16 * 3600


def portfolio(fund: Fund, quotes: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """Start-of-day positions, locates and one day of trades, some of them non-compliant."""
    start_positions: dict[str, int] = {}
    for ticker in fund.book:
        qty = round_lot(fund.position_value * rng.uniform(0.4, 1.6) / quotes[ticker]["close"])
        start_positions[ticker] = -qty if ticker in fund.shorts and rng.random() < 0.4 else qty
    positions = dict(start_positions)  # the running book, to keep most sales covered
    locates = {t: round_lot(fund.position_value * 1.2 / quotes[t]["close"]) for t in fund.shorts}

    times = sorted(rng.randrange(OPEN_S, CLOSE_S) for _ in range(fund.n_trades))
    trades = []
    for seconds in times:
        ticker = rng.choice(fund.book + fund.shorts)
        q = quotes[ticker]
        held = positions.get(ticker, 0)
        if ticker in fund.shorts and rng.random() < 0.35:
            side = "SELL_SHORT"
        elif held > 0 and rng.random() < 0.45:
            side = "SELL"
        else:
            side = "BUY"
        qty = round_lot(fund.position_value * rng.uniform(0.02, 0.25) / q["close"])
        if side == "SELL":
            qty = min(qty, held)
        price = cents(rng.uniform(q["low"], q["high"]))
        trades.append({
            "ticker": ticker, "side": side, "quantity": qty, "price": price,
            "executed_at": timestamp(TRADE_DATE, seconds),
            "settlement_date": add_business_days(TRADE_DATE, 2).isoformat(),
            "venue": rng.choice(["XNYS", "XNAS", "ARCX", "BATS", "IEXG", "EDGX"]),
        })
        positions[ticker] = held + (qty if side == "BUY" else -qty)
    plant_problems(fund, trades, quotes, rng)
    plant_boundaries(fund, trades, quotes, start_positions, rng)
    trades.sort(key=lambda t: t["executed_at"])
    for n, trade in enumerate(trades, start=1):
        trade["trade_id"] = f"{fund.portfolio_id[3:]}-{n:04d}"
    return {
        "portfolio_id": fund.portfolio_id,
        "fund": fund.name,
        "strategy": fund.strategy,
        "trade_date": TRADE_DATE.isoformat(),
        "base_currency": "USD",
        "cash": fund.cash,
        "start_positions": start_positions,
        "locates": locates,
        "trades": [{"trade_id": t.pop("trade_id"), **t} for t in trades],
    }


def plant_problems(fund: Fund, trades: list[dict[str, Any]], quotes: dict[str, Any],
                   rng: random.Random) -> None:
    """Edit a few trades the way real books go wrong; each line says which rule it trips."""
    def pick(side: str | None = None) -> dict[str, Any]:
        pool = [t for t in trades if side is None or t["side"] == side]
        return rng.choice(pool)

    # Price printed above the day's high (fat finger / off-market print).
    t = pick()
    t["price"] = cents(quotes[t["ticker"]]["high"] * rng.uniform(1.004, 1.02))
    # Booked after the close.
    t = pick()
    t["executed_at"] = timestamp(TRADE_DATE, 16 * 3600 + rng.randrange(60, 7200))
    # Settlement date computed by calendar instead of business days (ignores Good Friday).
    for t in rng.sample(trades, 2):
        t["settlement_date"] = "2024-03-29"
    # Late-reported trade from the previous session.
    t = pick()
    t["executed_at"] = timestamp(TRADE_DATE - timedelta(days=1), rng.randrange(OPEN_S, CLOSE_S))
    # A round trip: buy then sell the same size minutes later at nearly the same price.
    ticker = rng.choice(fund.book)
    q = quotes[ticker]
    base = cents(rng.uniform(q["low"], q["high"]))
    start = rng.randrange(OPEN_S, CLOSE_S - 900)
    qty = round_lot(fund.position_value * 0.05 / base)
    gap = rng.randrange(80, 280)
    for side, offset, price in (("BUY", 0, base), ("SELL", gap, cents(base * 1.0006))):
        trades.append({
            "ticker": ticker, "side": side, "quantity": qty, "price": price,
            "executed_at": timestamp(TRADE_DATE, start + offset),
            "settlement_date": add_business_days(TRADE_DATE, 2).isoformat(),
            "venue": "XNAS",
        })
    # A block far larger than the others, priced well away from VWAP.
    t = pick("BUY")
    t["quantity"] = round_lot(t["quantity"] * rng.uniform(6, 12))
    t["price"] = cents(quotes[t["ticker"]]["low"] * 1.001)
    untouched = [x for x, *_ in UNIVERSE if x not in fund.shorts and x not in fund.book]
    # A sale marked long in a name the fund does not hold (should have been SELL_SHORT).
    q = quotes[untouched[-1]]
    trades.append({
        "ticker": untouched[-1], "side": "SELL", "quantity": 300,
        "price": cents(rng.uniform(q["low"], q["high"])),
        "executed_at": timestamp(TRADE_DATE, rng.randrange(OPEN_S, CLOSE_S)),
        "settlement_date": add_business_days(TRADE_DATE, 2).isoformat(), "venue": "XNYS",
    })
    if fund.shorts:
        # Short sale in a name with no locate on file.
        no_locate = untouched[0]
        q = quotes[no_locate]
        trades.append({
            "ticker": no_locate, "side": "SELL_SHORT",
            "quantity": round_lot(fund.position_value * 0.1 / q["close"]),
            "price": cents(rng.uniform(q["low"], q["high"])),
            "executed_at": timestamp(TRADE_DATE, rng.randrange(OPEN_S, CLOSE_S)),
            "settlement_date": add_business_days(TRADE_DATE, 2).isoformat(), "venue": "EDGX",
        })


def plant_boundaries(fund: Fund, trades: list[dict[str, Any]], quotes: dict[str, Any],
                     start_positions: dict[str, int], rng: random.Random) -> None:
    """Add compliant trades exactly on a limit, so that an off-by-one in a check shows up.

    They are added after the planted problems, never edited into existing trades, so
    neither can undo the other.
    """
    # A fill at exactly the day's high: inside the range, which is inclusive.
    ticker = rng.choice(fund.book)
    trades.append({
        "ticker": ticker, "side": "BUY", "quantity": 200, "price": quotes[ticker]["high"],
        "executed_at": timestamp(TRADE_DATE, rng.randrange(OPEN_S, CLOSE_S)),
        "settlement_date": add_business_days(TRADE_DATE, 2).isoformat(), "venue": "ARCX",
    })
    # A market-on-close sale that flattens a long position: printed at 16:00:00 sharp,
    # inside the session, and a long sale of exactly the shares held.
    moc = timestamp(TRADE_DATE, CLOSE_S)
    for ticker in fund.book:
        held = position_before(start_positions, ticker, trades, moc)
        if held > 0:
            trades.append({
                "ticker": ticker, "side": "SELL", "quantity": held,
                "price": quotes[ticker]["close"], "executed_at": moc,
                "settlement_date": add_business_days(TRADE_DATE, 2).isoformat(),
                "venue": "XNYS",
            })
            return


def position_before(start_positions: dict[str, int], ticker: str,
                    trades: list[dict[str, Any]],
                    moment: str) -> int:
    """Shares of ``ticker`` held just before ``moment`` (timestamps share one offset)."""
    held = start_positions.get(ticker, 0)
    for t in trades:
        if t["ticker"] == ticker and t["executed_at"] < moment:
            held += t["quantity"] if t["side"] == "BUY" else -t["quantity"]
    return held


def rule_catalogue() -> list[dict[str, Any]]:
    """The firm's audit rules: 14 checks, each in many parameterisations and scopes."""
    scopes: list[dict[str, list[str]] | None] = [None] + [{"sectors": [s]} for s in SECTORS]
    Label = Callable[[dict[str, Any]], str]

    def scoped(check: str, severity: str, params: list[dict[str, Any]],
               label: Label) -> list[dict[str, Any]]:
        rules = []
        for scope in scopes:
            for p in params:
                rule = {"check": check, "severity": severity, "params": p}
                suffix = f" [{scope['sectors'][0]}]" if scope else ""
                rule["name"] = label(p) + suffix
                if scope:
                    rule["scope"] = scope
                rules.append(rule)
        return rules

    def unscoped(check: str, severity: str, params: list[dict[str, Any]],
                 label: Label) -> list[dict[str, Any]]:
        return [{"check": check, "severity": severity, "params": p, "name": label(p)}
                for p in params]

    restricted = [
        {"list": "firm-restricted", "tickers": ["CLFD", "SWBI"]},
        {"list": "mnpi-watch", "tickers": ["BA", "CRNC"]},
        {"list": "research-quiet-period", "tickers": ["NFLX", "HLIT"]},
        {"list": "client-exclusion", "tickers": ["XOM", "CVX", "COP"]},
        {"list": "pending-merger", "tickers": ["DIS", "PFE"]},
    ]
    families = [
        scoped("price_range", "medium", [{"tolerance_pct": x} for x in (0.0, 0.25, 1.0)],
               lambda p: f"Execution price within day range ±{p['tolerance_pct']}%"),
        scoped("settlement", "medium", [{"cycle_days": 2}],
               lambda p: f"Settlement date is T+{p['cycle_days']} business days"),
        unscoped("margin", "high",
                 [{"long_pct": a, "short_pct": b} for a, b in
                  ((25, 30), (30, 30), (35, 40), (50, 50), (40, 45), (30, 35))],
                 lambda p: f"Margin equity covers {p['long_pct']}% long / "
                           f"{p['short_pct']}% short"),
        scoped("volume_limit", "medium",
               [{"basis": b, "max_pct": x} for b in ("adv_20d", "volume") for x in (1.0, 5.0)],
               lambda p: f"Shares traded at most {p['max_pct']}% of "
                         + ("20-day average volume" if p["basis"] == "adv_20d" else "day volume")),
        unscoped("restricted_list", "high", restricted,
                 lambda p: f"No trading in {p['list']} names"),
        unscoped("wash_trade", "high",
                 [{"window_minutes": w, "price_tolerance_pct": t}
                  for t in (0.1, 0.5, 1.0) for w in (1, 5, 15, 30, 60)],
                 lambda p: f"No offsetting trades within {p['window_minutes']} min "
                           f"and {p['price_tolerance_pct']}%"),
        scoped("trade_date", "medium", [{"max_lag_business_days": x} for x in (0, 1)],
               lambda p: f"Executed within {p['max_lag_business_days']} business days "
                         "of trade date"),
        scoped("short_locate", "high", [{}], lambda p: "Short sales covered by a locate"),
        unscoped("concentration", "medium",
                 [{"by": "ticker", "max_pct": x} for x in (5, 10, 15, 20, 25, 30)]
                 + [{"by": "sector", "max_pct": x} for x in (20, 25, 30, 35, 40, 50)],
                 lambda p: f"No {p['by']} above {p['max_pct']}% of gross exposure"),
        scoped("sale_marking", "high", [{}],
               lambda p: "Long sales do not exceed the long position"),
        scoped("trading_hours", "low",
               [{"open": "09:30:00", "close": "16:00:00"},
                {"open": "04:00:00", "close": "20:00:00"}],
               lambda p: f"Executed between {p['open']} and {p['close']} ET"),
        unscoped("large_notional", "low",
                 [{"max_notional": x} for x in (1_000_000, 2_500_000, 5_000_000, 500_000,
                                                 10_000_000, 250_000)],
                 lambda p: f"Single trade notional at most ${p['max_notional']:,}"),
        unscoped("position_limit", "medium",
                 [{"max_shares": x} for x in (10_000, 25_000, 50_000, 100_000, 250_000)],
                 lambda p: f"End-of-day position at most {p['max_shares']:,} shares"),
        scoped("price_vs_vwap", "low", [{"max_deviation_pct": x} for x in (2.0, 1.0, 3.0)],
               lambda p: f"Execution price within {p['max_deviation_pct']}% of VWAP"),
    ]
    # Round-robin over the families so that any prefix (the first 50) covers every check.
    rules: list[dict[str, Any]] = []
    depth = 0
    while len(rules) < 200:
        for family in families:
            if depth < len(family) and len(rules) < 200:
                rules.append(family[depth])
        depth += 1
    return [{"rule_id": f"R{n:03d}", **rule} for n, rule in enumerate(rules, start=1)]


def write_json(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=1) + "\n")


def generate(out: Path) -> None:
    """Write the data files and both inputs under ``out`` (the example folder by default)."""
    rng = random.Random(SEED)
    market = market_snapshot(rng)
    write_json(out / SNAPSHOTS / f"{TRADE_DATE.isoformat()}.json", market)
    for fund in FUNDS:
        write_json(out / PORTFOLIOS / f"{fund.portfolio_id}.json",
                   portfolio(fund, market["quotes"], rng))
    rules = rule_catalogue()
    base = {"portfolio_id": FUNDS[0].portfolio_id, "trade_date": TRADE_DATE.isoformat()}
    write_json(out / "input.json", {**base, "rules": rules[:50]})
    write_json(out / "input-200.json", {**base, "rules": rules})


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
