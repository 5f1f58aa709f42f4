"""End-to-end cost of ``--isolation mpk`` on the example workflows, natively (no keys).

    python tests/mpk/bench/workflow_bench.py [--rounds N] [--escape-check every|sampled]
                                             [--stock PYTHON] [--keys off|auto|on]

For each example it composes the action once, then runs warm instances in one process
per configuration (the first five of each process -- a container's first instances, where
every function's first invocations are checked for escapes in full -- are reported apart
from the steady state) -- ``none`` and ``mpk`` on this runtime, and with ``--stock`` the
``none`` action on a stock CPython 3.13 (a venv with the examples' packages) --
alternating them round by round so that load on a shared machine hits all alike, and
prints the median milliseconds per instance and the ratios. Everything but the WRPKRU
instruction is measured: gates, private heaps, C malloc routing, promotion, escape
scans. ``--keys auto`` (or ``on``) uses the CPU's protection keys where it has them
(``FAASTLANE_MPK``; ``off``, the default, emulates none): then WRPKRU is measured too.
Parallel states run on threads (``-Th``) so that the functions' own work
dominates, not fork costs.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ("finra", "ml-predict")

# Runs in a fresh interpreter: load the composed action, run warm instances.
_WORKER = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import orchestrator
from faastlane_runtime.options import PARALLEL_THREADS
orch = orchestrator.ORCHESTRATOR
options = orch.with_options(parallel=PARALLEL_THREADS)
payload = json.load(open(sys.argv[2]))
times = []
for i in range(int(sys.argv[3]) + WARM_UP):
    start = time.perf_counter()
    result = orch.execute(payload, options)
    assert result.status == "SUCCEEDED", result
    times.append((time.perf_counter() - start) * 1000)
print(json.dumps({"warm_up": times[:WARM_UP], "steady": times[WARM_UP:]}), flush=True)
# Not through the interpreter's teardown: under keys it faults on a live domain's
# private objects (the CLI's actions end the same way).
import os
os._exit(0)
"""
# A container's first instances: every function's first four invocations end with a
# full escape scan (private_heaps.FIRST_CHECKED), then the scans are budgeted.
WARM_UP = 5


def compose(example: str, isolation: str, out: Path) -> Path:
    target = out / f"{example}-{isolation}"
    subprocess.run([sys.executable, "-m", "faastlane", "compose", str(ROOT / "examples" /
                    example), "-o", str(target), "--isolation", isolation], check=True,
                   capture_output=True)
    return target


def payload_of(example: str, tmp: Path) -> Path:
    """The example's input (ml-predict's ~1.5 MB scan is generated, not committed)."""
    if example == "ml-predict":
        subprocess.run([sys.executable, str(ROOT / "examples" / example / "generate_input.py"),
                        str(tmp / "scans")], check=True, capture_output=True)
        return tmp / "scans" / "input.json"
    return ROOT / "examples" / example / "input.json"


def run(python: str, action: Path, payload: Path, instances: int,
        env: dict[str, str]) -> dict[str, list[float]]:
    """Milliseconds per instance: the first WARM_UP ones, then ``instances`` more."""
    done = subprocess.run([python, "-c", f"WARM_UP = {WARM_UP}\n" + _WORKER, str(action),
                           str(payload), str(instances)], capture_output=True, text=True,
                          env=env, cwd=action, check=True)
    times: dict[str, list[float]] = json.loads(done.stdout.splitlines()[-1])
    return times


def main(argv: list[str]) -> int:
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 3
    check = argv[argv.index("--escape-check") + 1] if "--escape-check" in argv else "sampled"
    stock = argv[argv.index("--stock") + 1] if "--stock" in argv else None
    keys = argv[argv.index("--keys") + 1] if "--keys" in argv else "off"
    env = dict(os.environ, FAASTLANE_ESCAPE_CHECK=check, FAASTLANE_MPK=keys)
    with tempfile.TemporaryDirectory() as tmp:
        for example in EXAMPLES:
            actions = {mode: compose(example, mode, Path(tmp)) for mode in ("none", "mpk")}
            # configuration -> (interpreter, action)
            configs = {"none": (sys.executable, actions["none"]),
                       "mpk": (sys.executable, actions["mpk"])}
            if stock:
                configs["stock_none"] = (stock, actions["none"])
            payload = payload_of(example, Path(tmp))
            samples: dict[str, list[float]] = {name: [] for name in configs}
            warm_up: dict[str, list[float]] = {name: [] for name in configs}
            for _ in range(rounds):
                for name, (python, action) in configs.items():
                    times = run(python, action, payload, 20, env)
                    samples[name] += times["steady"]
                    warm_up[name] += times["warm_up"]
            ms = {name: statistics.median(times) for name, times in samples.items()}
            first = {name: statistics.median(times) for name, times in warm_up.items()}
            report = {"example": example, "escape_check": check, "keys": keys,
                      **{f"{name}_ms": round(v, 2) for name, v in ms.items()},
                      "mpk_over_none": round(ms["mpk"] / ms["none"], 3),
                      "instances_per_config": len(samples["none"]),
                      "warm_up_mpk_over_none": round(first["mpk"] / first["none"], 3)}
            if stock:
                report["none_over_stock"] = round(ms["none"] / ms["stock_none"], 3)
                report["mpk_over_stock"] = round(ms["mpk"] / ms["stock_none"], 3)
            print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
