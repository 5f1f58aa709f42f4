"""In-process micro-benchmark of one sequential hand-off (the chain app, isolation none).

Each source tree given with ``--tree`` (default: this repository) gets its own warm
process: the chain workflow (``bench/apps/chain``) is composed with *that tree's*
composer and runtime, with functions that timestamp their own entry and exit
(``perf_counter_ns``), and the parent asks the processes for executions in turn, A, B,
A, B, ..., so that trees are compared side by side on the same machine:

    python bench/handoff_micro.py --tree /path/to/before --tree .

Per tree it reports medians over every hand-off of every execution:

- ``handoff``: from a handler's return to the next handler's first line, untraced
  (everything the runtime does between two functions, measured by the functions);
- ``traced``: the same with ``--trace`` recording on;
- ``trace-gap``: the gap the benchmark derives from trace records (``faastlane bench``'s
  per-edge hand-off: span end = start + compute_ms);
- ``e2e``: one untraced execution of the five hops, ``Orchestrator.execute`` to return.

No timing is asserted anywhere: this prints numbers and ratios to the first tree.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from typing import Any

CHAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps", "chain")
HOPS = 5
_STAMPING_HANDLER = '''"""A hop that hands its event on and stamps its entry and exit."""

import time

import handoff_stamps


def handler(event, context):
    handoff_stamps.LOG.append(time.perf_counter_ns())
    handoff_stamps.LOG.append(time.perf_counter_ns())
    return event
'''


# ------------------------------------------------------------------ the serving process


def _stamping_app(folder: str) -> str:
    """The chain app with functions that stamp their entry and exit."""
    app = os.path.join(folder, "chain")
    os.makedirs(os.path.join(app, "functions"))
    shutil.copy(os.path.join(CHAIN, "workflow.json"), app)
    for hop in range(1, HOPS + 1):
        with open(os.path.join(app, "functions", f"Hop{hop}.py"), "w", encoding="utf-8") as f:
            f.write(_STAMPING_HANDLER)
    return app


def _gaps_us(stamps: list[int]) -> list[float]:
    """Exit of hop i to entry of hop i+1, in microseconds."""
    return [(stamps[i + 1] - stamps[i]) / 1000 for i in range(1, len(stamps) - 1, 2)]


def _trace_gaps_us(records: list[dict[str, Any]]) -> list[float]:
    spans = sorted((r["start"], r["start"] + r["compute_ms"] / 1000)
                   for r in records if r.get("type") == "Function")
    return [(spans[i + 1][0] - spans[i][1]) * 1e6 for i in range(len(spans) - 1)]


def serve(payload: int) -> None:
    """Compose the chain with the composer on sys.path, then answer run requests."""
    from faastlane.compose.action import prepare, write_action

    stamps = types.ModuleType("handoff_stamps")
    stamps.LOG = []  # type: ignore[attr-defined]
    sys.modules["handoff_stamps"] = stamps
    folder = tempfile.mkdtemp(prefix="handoff-micro-")
    try:
        action = write_action(prepare(_stamping_app(folder), isolation="none"),
                              os.path.join(folder, "action"))
        sys.path.insert(0, action)
        trace = importlib.import_module("faastlane_runtime.engine.trace")
        orchestrator = importlib.import_module("orchestrator").ORCHESTRATOR
        event = {"payload": "x" * payload}
        for line in sys.stdin:
            request = json.loads(line)
            out: dict[str, list[float]] = {"handoff": [], "traced": [], "trace-gap": [],
                                           "e2e": []}
            for _ in range(request["runs"]):
                for traced in (False, True):
                    trace.enabled = traced
                    trace.take()
                    stamps.LOG.clear()  # type: ignore[attr-defined]
                    began = time.perf_counter_ns()
                    result = orchestrator.execute(event)
                    took = (time.perf_counter_ns() - began) / 1000
                    assert result.status == "SUCCEEDED" and result.output == event, result
                    gaps = _gaps_us(stamps.LOG)  # type: ignore[attr-defined]
                    if traced:
                        out["traced"] += gaps
                        out["trace-gap"] += _trace_gaps_us(trace.take())
                    else:
                        out["handoff"] += gaps
                        out["e2e"].append(took)
            print(json.dumps(out), flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ------------------------------------------------------------------ the parent


def _start(tree: str, payload: int, cpu: int | None) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(tree), "composer"))
    command = [sys.executable, os.path.abspath(__file__), "--serve", "--payload", str(payload)]
    if cpu is not None:
        command = ["taskset", "-c", str(cpu), *command]
    return subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)


def _ask(process: subprocess.Popen[str], runs: int) -> dict[str, list[float]]:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps({"runs": runs}) + "\n")
    process.stdin.flush()
    return json.loads(process.stdout.readline())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", help="a source tree (repeatable)")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5, help="executions per round")
    parser.add_argument("--processes", type=int, default=10,
                        help="fresh processes per tree over the rounds")
    parser.add_argument("--payload", type=int, default=1000, help="bytes in the event")
    parser.add_argument("--cpu", type=int, help="pin every process to this CPU")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.payload)
        return
    trees = args.tree or [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    samples: list[dict[str, list[float]]] = [{} for _ in trees]
    # Where the scheduler puts a process's threads (one CPU or both) decides much of a
    # hand-off's cost and lasts as long as the process: fresh processes every few rounds.
    for block in range(args.processes):
        rounds = range(block * args.rounds // args.processes,
                       (block + 1) * args.rounds // args.processes)
        _measure(trees, args, rounds, samples)
    _report(trees, samples)


def _measure(trees: list[str], args: argparse.Namespace, rounds: range,
             samples: list[dict[str, list[float]]]) -> None:
    processes = [_start(tree, args.payload, args.cpu) for tree in trees]
    try:
        _ask_all(processes, 5, [{} for _ in trees])  # warm-up, discarded
        for round_ in rounds:
            _ask_all(processes, args.runs, samples, rotate=round_)
    finally:
        for process in processes:
            assert process.stdin is not None
            process.stdin.close()
            process.wait()


def _ask_all(processes: list[subprocess.Popen[str]], runs: int,
             samples: list[dict[str, list[float]]], rotate: int = 0) -> None:
    order = list(range(len(processes)))
    order = order[rotate % len(order):] + order[:rotate % len(order)]
    for index in order:
        for key, values in _ask(processes[index], runs).items():
            samples[index].setdefault(key, []).extend(values)


def _report(trees: list[str], samples: list[dict[str, list[float]]]) -> None:
    keys = ("handoff", "traced", "trace-gap", "e2e")
    print(f"{'tree':40} " + " ".join(f"{k + ' us':>14}" for k in keys))
    base = {k: statistics.median(samples[0][k]) for k in keys}
    for tree, found in zip(trees, samples, strict=True):
        medians = {k: statistics.median(found[k]) for k in keys}
        cells = [f"{medians[k]:8.1f} {medians[k] / base[k]:4.2f}x" for k in keys]
        print(f"{tree[-40:]:40} " + " ".join(f"{c:>14}" for c in cells))
    print(f"(medians over {len(samples[0]['handoff'])} hand-offs, "
          f"{len(samples[0]['e2e'])} executions per tree; ratios to the first tree)")


if __name__ == "__main__":
    main()
