"""The results document as tables: ratios against the baselines, and Markdown.

Every ratio compares systems measured in the same run (interleaved), never against a
number from elsewhere: end-to-end speed-up = baseline median / Faastlane median;
interaction reduction = 1 - Faastlane median / baseline median; throughput ratio =
Faastlane rpm / baseline rpm.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import stats
from .catalogue import (
    BASELINE_OPENWHISK,
    BASELINE_STEP_FUNCTIONS,
    FAASTLANE_NS,
    KNOWN_DIVERGENCES,
)

BASELINES = (BASELINE_OPENWHISK, BASELINE_STEP_FUNCTIONS)


def _faastlane_systems(workload: dict[str, Any]) -> list[str]:
    return [n for n, s in workload["systems"].items() if s["kind"] == "faastlane"]


def comparisons(workload: dict[str, Any]) -> list[dict[str, Any]]:
    """Each Faastlane system against each baseline of one workload."""
    systems = workload["systems"]
    rows = []
    for ours in _faastlane_systems(workload):
        mine = systems[ours]
        for baseline in BASELINES:
            theirs = systems.get(baseline)
            if theirs is None:
                continue
            row = {"workload": workload["name"], "faastlane": ours, "baseline": baseline,
                   "end_to_end_speedup": stats.ratio(theirs["end_to_end_ms"]["median"],
                                                     mine["end_to_end_ms"]["median"]),
                   "p99_speedup": stats.ratio(theirs["end_to_end_ms"]["p99"],
                                              mine["end_to_end_ms"]["p99"]),
                   "interaction_reduction_pct": stats.reduction(
                       mine["interaction_ms"]["median"], theirs["interaction_ms"]["median"]),
                   "page_fault_ratio": stats.ratio(mine["page_faults_per_instance"],
                                                   theirs["page_faults_per_instance"]),
                   "peak_rss_ratio": stats.ratio(mine["peak_rss_mb"], theirs["peak_rss_mb"])}
            if mine.get("throughput") and theirs.get("throughput"):
                row["throughput_ratio"] = stats.ratio(mine["throughput"]["rpm"],
                                                      theirs["throughput"]["rpm"])
            # Reproducibility: the same ratio from the first and the second half of rounds.
            halves = [stats.ratio(t, m) for t, m in zip(theirs["halves_end_to_end_ms"],
                                                        mine["halves_end_to_end_ms"],
                                                        strict=True)]
            row["speedup_halves"] = halves
            row["speedup_halves_spread_pct"] = (abs(halves[0] - halves[1]) / min(halves) * 100
                                                if all(h > 0 for h in halves) else math.nan)
            rows.append(row)
    return rows


def variant_ratios(workload: dict[str, Any]) -> dict[str, float]:
    """Each Faastlane system's median end-to-end time relative to -NS (Figure 8)."""
    systems = workload["systems"]
    base = systems.get(FAASTLANE_NS)
    if base is None:
        return {}
    return {name: stats.ratio(systems[name]["end_to_end_ms"]["median"],
                              base["end_to_end_ms"]["median"])
            for name in _faastlane_systems(workload)}


def enrich(document: dict[str, Any]) -> dict[str, Any]:
    """Add the ratios, and whether all systems computed the same output (a known
    divergence of a baseline's engine is named, not counted)."""
    for workload in document["workloads"]:
        workload["comparisons"] = comparisons(workload)
        workload["variants_vs_ns"] = variant_ratios(workload)
        for name, system in workload["systems"].items():
            known = KNOWN_DIVERGENCES.get((workload["app"], name))
            if known and not system["checks"].get("matches_reference"):
                system["checks"]["known_divergence"] = known
        workload["outputs_agree"] = all(
            s["checks"].get("matches_reference") or s["checks"].get("known_divergence")
            for s in workload["systems"].values())
    document["goals"] = goals(document)
    return document


def _f(value: Any, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, (int, float)):
        return f"{value:,.{digits}f}"
    return str(value)


def machine_line(machine: dict[str, Any]) -> str:
    return (f"{machine['cpu_model']}, {machine['usable_cpus']} usable CPUs "
            f"({machine['logical_cpus']} logical), {machine['memory_mb']:,} MB RAM, "
            f"Linux {machine['kernel']}, {machine['python_implementation']} "
            f"{machine['python']}, MPK {'available' if machine['mpk'] else 'not available'}; "
            f"load average (1, 5, 15 min) at start {_loads(machine['load_average_at_start'])}"
            + (f", at end {_loads(machine['load_average_at_end'])}"
               if "load_average_at_end" in machine else ""))


def _loads(values: list[float]) -> str:
    return "/".join(f"{x:.2f}" for x in values)


def markdown(document: dict[str, Any]) -> str:
    lines = ["# Faastlane benchmark results", "",
             f"Machine: {machine_line(document['machine'])}.", "",
             f"Run started {document['started']}, took {document.get('duration_s', 0):.0f} s; "
             f"configuration: `{json.dumps(document['config'])}`.", "",
             "All times in ms, medians unless marked p99. Interaction = end-to-end minus the "
             "time any function was running (see `bench/faastlane_bench/timeline.py`). "
             "Ratios compare systems measured in the same run, interleaved.", "",
             "## Performance goals", "", goals_markdown(document.get("goals", []))]
    for workload in document["workloads"]:
        lines += [f"## {workload['name']} ({workload['group']})", "",
                  "| system | n | end-to-end | p99 | compute | external | interaction | "
                  "interaction p99 | page faults / run | peak RSS MB (procs) | rpm | "
                  "output = NS | output = expected |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for name, s in workload["systems"].items():
            tp = s.get("throughput") or {}
            lines.append(
                f"| {name} | {s['end_to_end_ms']['n']} | {_f(s['end_to_end_ms']['median'])} | "
                f"{_f(s['end_to_end_ms']['p99'])} | {_f(s['compute_ms']['median'])} | "
                f"{_f(s['external_ms']['median'])} | {_f(s['interaction_ms']['median'], 2)} | "
                f"{_f(s['interaction_ms']['p99'], 2)} | "
                f"{_f(s['page_faults_per_instance'], 0)} | "
                f"{_f(s['peak_rss_mb'], 0)} ({s['processes']}) | {_f(tp.get('rpm'), 0)} | "
                f"{_f(s['checks'].get('matches_reference'))}"
                f"{' (known: see below)' if s['checks'].get('known_divergence') else ''} | "
                f"{_f(s['checks'].get('matches_expected'))} |")
        lines.append("")
        if workload["comparisons"]:
            lines += ["| Faastlane system | vs baseline | e2e speed-up | p99 speed-up | "
                      "interaction lower by | throughput ratio | page-fault ratio | "
                      "speed-up in 1st / 2nd half |", "|---|---|---|---|---|---|---|---|"]
            for row in workload["comparisons"]:
                halves = " / ".join(_f(h, 2) for h in row["speedup_halves"])
                lines.append(
                    f"| {row['faastlane']} | {row['baseline']} | "
                    f"{_f(row['end_to_end_speedup'], 2)}x | {_f(row['p99_speedup'], 2)}x | "
                    f"{_f(row['interaction_reduction_pct'], 2)}% | "
                    f"{_f(row.get('throughput_ratio'), 2)}x | "
                    f"{_f(row['page_fault_ratio'], 2)} | {halves} |")
            lines.append("")
        for name, s in workload["systems"].items():
            if s["checks"].get("known_divergence"):
                lines += [f"{name}'s output differs: {s['checks']['known_divergence']}.", ""]
        if len(workload["variants_vs_ns"]) > 1:
            lines.append("Variants, end-to-end relative to Faastlane-NS: " + ", ".join(
                f"{name} {_f(r, 2)}x" for name, r in workload["variants_vs_ns"].items()) + ".")
            lines.append("")
        edges = workload["systems"].get(FAASTLANE_NS, {}).get("handoffs", {})
        if edges and workload["group"] != "scalability":
            lines += ["Hand-offs (gap between one function's end and the next one's start), "
                      "median ms:", "",
                      "| hand-off | " + " | ".join(workload["systems"]) + " |",
                      "|---|" + "---|" * len(workload["systems"])]
            for edge in sorted(edges, key=lambda e: -edges[e]["n"])[:8]:
                cells = [_f(s.get("handoffs", {}).get(edge, {}).get("median_ms"), 3)
                         for s in workload["systems"].values()]
                lines.append(f"| {edge} ({edges[edge]['n']}) | " + " | ".join(cells) + " |")
            lines.append("")
    return "\n".join(lines) + "\n"


def write(document: dict[str, Any], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    results = folder / "results.json"
    results.write_text(json.dumps(document, indent=1, allow_nan=True) + "\n", encoding="utf-8")
    table = folder / "results.md"
    table.write_text(markdown(document), encoding="utf-8")
    return [results, table]


def _workload(document: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((w for w in document["workloads"] if w["name"] == name), None)


def _full_system(workload: dict[str, Any]) -> str:
    """The Faastlane system a user gets by default: the app's own isolation mode."""
    full = [n for n, s in workload["systems"].items() if s["kind"] == "faastlane"
            and not s["planning"]]
    return full[0] if full else FAASTLANE_NS


def _comparison(workload: dict[str, Any], ours: str, baseline: str) -> dict[str, Any]:
    return next((c for c in workload.get("comparisons", [])
                 if c["faastlane"] == ours and c["baseline"] == baseline), {})


def goals(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The performance goals (hand-off time, interaction latency, end-to-end speed-up and
    throughput against the OpenWhisk-style baseline, processes against threads, and
    reproducibility), each with what this run measured and whether it was met."""
    rows: list[dict[str, Any]] = []

    def add(goal: str, target: str, measured: float, met: bool, unit: str = "") -> None:
        rows.append({"goal": goal, "target": target, "measured": measured, "unit": unit,
                     "met": bool(met) and not math.isnan(measured)})

    chain = _workload(document, "chain-1KB")
    if chain and FAASTLANE_NS in chain["systems"]:
        edges = chain["systems"][FAASTLANE_NS]["handoffs"]
        gaps = [e["median_ms"] for k, e in edges.items() if not k.startswith("start")]
        hop_us = stats.median(gaps) * 1000
        add("one sequential hand-off, Faastlane-NS (chain, 1 KB; from traces)", "<= 10 us",
            hop_us, hop_us <= 10, "us")
    targets = {"ml-predict": 99.5, "healthcare": 95.0, "sentiment": 95.0, "finra": 50.0}
    for app, target in targets.items():
        workload = _workload(document, app)
        if workload is None:
            continue
        for ours in dict.fromkeys([_full_system(workload), FAASTLANE_NS]):
            row = _comparison(workload, ours, BASELINE_OPENWHISK)
            if row:
                value = row["interaction_reduction_pct"]
                add(f"{app}: interaction latency vs OpenWhisk-style, {ours}",
                    f">= {target}% lower", value, value >= target, "%")
    ml = _workload(document, "ml-predict")
    if ml:
        for ours in dict.fromkeys([_full_system(ml), FAASTLANE_NS]):
            row = _comparison(ml, ours, BASELINE_OPENWHISK)
            if row:
                add(f"ml-predict end to end vs OpenWhisk-style, {ours}", ">= 20x faster",
                    row["end_to_end_speedup"], row["end_to_end_speedup"] >= 20, "x")
    for workload in document["workloads"]:
        if workload["group"] != "apps":
            continue
        ours = _full_system(workload)
        row = _comparison(workload, ours, BASELINE_OPENWHISK)
        if row.get("throughput_ratio") is not None:
            add(f"{workload['name']}: throughput vs OpenWhisk-style, {ours}", ">= 2x",
                row["throughput_ratio"], row["throughput_ratio"] >= 2, "x")
    _placement_goals(document, add)
    spreads = [c["speedup_halves_spread_pct"] for w in document["workloads"]
               for c in w.get("comparisons", []) if w["group"] == "apps"
               and not math.isnan(c["speedup_halves_spread_pct"])]
    if spreads:
        worst = max(spreads)
        add("reproducible: a speed-up ratio from the 1st vs the 2nd half of the rounds "
            "(worst app/system pair)", "within 10%", worst, worst <= 10, "%")
        add("reproducible: the same, median over all app/system pairs", "within 10%",
            stats.median(spreads), stats.median(spreads) <= 10, "%")
    return rows


def _median_ms(workload: dict[str, Any], system: str) -> float:
    found = workload["systems"].get(system)
    return float(found["end_to_end_ms"]["median"]) if found else math.nan


def _placement_goals(document: dict[str, Any],
                     add: Callable[[str, str, float, bool, str], None]) -> None:
    """Issue 34's: every mode's default placement against the OpenWhisk-style baseline;
    isolation's price against the best unisolated placement (threads only, -Th); the
    planner's none placement against -Th; the in-process hand-off."""
    modes = ("Faastlane-NS", "Faastlane (process)", "Faastlane (mpk)",
             "Faastlane (mpk, no keys)")
    for app, target in (("finra", 3.0), ("ml-predict", 1.5)):
        workload = _workload(document, app)
        if workload is None:
            continue
        for ours in (m for m in modes if m in workload["systems"]):
            speedup = _comparison(workload, ours, BASELINE_OPENWHISK).get(
                "end_to_end_speedup", math.nan)
            add(f"{app}: {ours} (default placement) vs OpenWhisk-style, end to end",
                f">= {target:g}x faster", speedup, speedup >= target, "x")
        best = _median_ms(workload, "Faastlane-Th")
        for ours, most in (("Faastlane (process)", 1.25), ("Faastlane (mpk)", 1.05),
                           ("Faastlane (mpk, no keys)", 1.05)):
            price = _median_ms(workload, ours) / best
            if not math.isnan(price):
                add(f"{app}: isolation's price, {ours} vs threads-only none (-Th)",
                    f"<= {most:g}x", price, price <= most, "x")
        if app == "finra":
            ratio = _median_ms(workload, FAASTLANE_NS) / best
            if not math.isnan(ratio):
                add("finra: the planner's none placement (-NS) vs threads-only none (-Th)",
                    "<= 1.1x", ratio, ratio <= 1.1, "x")


def goals_markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| goal | target | measured | met |", "|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['goal']} | {row['target']} | {_f(row['measured'], 2)} "
                     f"{row['unit']} | {'yes' if row['met'] else 'no'} |")
    return "\n".join(lines) + "\n"
