"""``faastlane cost``: dollars per workflow execution, with AWS's published prices as data.

The method of the paper's Table 2: take the durations measured by ``faastlane bench``
and price the same workflow two ways.

- On Step Functions: every function is its own Lambda (a request, plus its duration x
  its memory), and the workflow pays Step Functions: per state transition (Standard) or
  per request and duration x memory (Express). Function durations are those measured in
  the Step Functions-style baseline (each function's own process), transitions are the
  states the execution entered.
- With Faastlane: the whole workflow is one Lambda: one request, and the Faastlane
  end-to-end time x its memory.

Prices live in ``prices.json`` (sources and the date they were read are in that file).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .catalogue import BASELINE_OPENWHISK, BASELINE_STEP_FUNCTIONS, FAASTLANE_NS

PRICES = Path(__file__).with_name("prices.json")


def load_prices(path: Path = PRICES) -> dict[str, Any]:
    prices: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return prices


def _billed_ms(duration_ms: float, granularity_ms: int) -> float:
    return math.ceil(max(duration_ms, 0.0) / granularity_ms) * granularity_ms


def lambda_cost(duration_ms: float, memory_mb: int, prices: dict[str, Any]) -> float:
    """One Lambda invocation: the request plus billed duration x configured memory."""
    price = prices["lambda"]
    seconds = _billed_ms(duration_ms, price["duration_granularity_ms"]) / 1000
    return float(price["per_request"] + seconds * memory_mb / 1024 * price["per_gb_second"])


def express_cost(duration_ms: float, memory_mb: int, prices: dict[str, Any]) -> float:
    price = prices["step_functions_express"]
    seconds = _billed_ms(duration_ms, price["duration_granularity_ms"]) / 1000
    chunk = price["memory_chunk_mb"]
    memory_gb = math.ceil(memory_mb / chunk) * chunk / 1024
    return float(price["per_request"] + seconds * memory_gb * price["per_gb_second"])


@dataclass(frozen=True)
class CostRow:
    workload: str
    transitions: float
    lambda_calls: float
    functions_usd: float  # the per-function Lambdas of the Step Functions deployment
    standard_usd: float  # functions + Standard transitions
    express_usd: float  # functions + Express request and duration
    faastlane_system: str
    faastlane_usd: float
    faastlane_vs_standard_pct: float
    faastlane_vs_express_pct: float


def estimate(workload: dict[str, Any], prices: dict[str, Any], memory_mb: int,
             faastlane_memory_mb: int, express_memory_mb: int = 64) -> CostRow | None:
    """Cost per execution of one benchmarked workload; None without the needed systems."""
    systems = workload["systems"]
    timed = systems.get(BASELINE_STEP_FUNCTIONS) or systems.get(BASELINE_OPENWHISK)
    ns = systems.get(FAASTLANE_NS)
    if timed is None or ns is None or not timed["functions"]:
        return None
    full = [n for n, s in systems.items() if s["kind"] == "faastlane"
            and not s["planning"].get("threads_only")
            and not s["planning"].get("processes_only")
            and n != FAASTLANE_NS]
    ours = full[0] if full else FAASTLANE_NS
    functions = sum(f["calls_per_execution"] * lambda_cost(f["median_ms"], memory_mb, prices)
                    for f in timed["functions"].values())
    calls = sum(f["calls_per_execution"] for f in timed["functions"].values())
    transitions = ns["states_per_execution"]
    standard = functions + transitions * prices["step_functions_standard"]["per_transition"]
    express = functions + express_cost(timed["end_to_end_ms"]["median"], express_memory_mb,
                                       prices)
    faastlane = lambda_cost(systems[ours]["end_to_end_ms"]["median"], faastlane_memory_mb,
                            prices)
    return CostRow(workload["name"], transitions, calls, functions, standard, express, ours,
                   faastlane, faastlane / standard * 100, faastlane / express * 100)


def estimate_all(document: dict[str, Any], prices: dict[str, Any], memory_mb: int,
                 faastlane_memory_mb: int | None = None) -> list[CostRow]:
    rows = []
    for workload in document["workloads"]:
        row = estimate(workload, prices, memory_mb, faastlane_memory_mb or memory_mb)
        if row is not None:
            rows.append(row)
    return rows


def markdown(rows: list[CostRow], prices: dict[str, Any], memory_mb: int,
             faastlane_memory_mb: int) -> str:
    per_million = 1_000_000
    lines = [f"Dollars per 1 million executions ({prices['region']}, prices read "
             f"{prices['read_on']}; functions {memory_mb} MB each, the Faastlane Lambda "
             f"{faastlane_memory_mb} MB):", "",
             "| workload | transitions | Lambda calls | Step Functions Standard | "
             "Step Functions Express | Faastlane (one Lambda) | Faastlane / Standard | "
             "Faastlane / Express |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.workload} | {r.transitions:g} | {r.lambda_calls:g} | "
                     f"${r.standard_usd * per_million:,.2f} | "
                     f"${r.express_usd * per_million:,.2f} | "
                     f"${r.faastlane_usd * per_million:,.2f} ({r.faastlane_system}) | "
                     f"{r.faastlane_vs_standard_pct:.1f}% | {r.faastlane_vs_express_pct:.1f}% |")
    return "\n".join(lines) + "\n"


def rows_json(rows: list[CostRow]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]
