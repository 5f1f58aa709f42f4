"""End-to-end cost of ``--isolation mpk`` on the example workflows, natively (no keys).

    python tests/mpk/bench/workflow_bench.py [--rounds N] [--escape-check every|sampled]

For each example it composes the action once, then runs warm instances in one process
per isolation mode (``none`` and ``mpk``), alternating the modes round by round so that
load on a shared machine hits both alike, and prints the median milliseconds per
instance and the ratio. Everything but the WRPKRU instruction is measured: gates,
private heaps, promotion, escape scans. Parallel states run on threads (``-Th``) so that
the functions' own work dominates, not fork costs.
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
EXAMPLES = {"finra": "input.json", "ml-predict": "input.json"}

# Runs in a fresh interpreter: load the composed action, run warm instances.
_WORKER = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import orchestrator
from faastlane_runtime.execution import PARALLEL_THREADS
orch = orchestrator.ORCHESTRATOR
options = orch.with_options(parallel=PARALLEL_THREADS)
payload = json.load(open(sys.argv[2]))
times = []
for i in range(int(sys.argv[3]) + 2):
    start = time.perf_counter()
    result = orch.execute(payload, options)
    assert result.status == "SUCCEEDED", result
    times.append((time.perf_counter() - start) * 1000)
print(json.dumps(times[2:]))
"""


def compose(example: str, isolation: str, out: Path) -> Path:
    target = out / f"{example}-{isolation}"
    subprocess.run([sys.executable, "-m", "faastlane", "compose", str(ROOT / "examples" /
                    example), "-o", str(target), "--isolation", isolation], check=True,
                   capture_output=True)
    return target


def run(action: Path, payload: Path, instances: int, env: dict[str, str]) -> list[float]:
    done = subprocess.run([sys.executable, "-c", _WORKER, str(action), str(payload),
                           str(instances)], capture_output=True, text=True, env=env,
                          cwd=action, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def main(argv: list[str]) -> int:
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 3
    check = argv[argv.index("--escape-check") + 1] if "--escape-check" in argv else "sampled"
    env = dict(os.environ, FAASTLANE_ESCAPE_CHECK=check, FAASTLANE_MPK="off")
    with tempfile.TemporaryDirectory() as tmp:
        for example, input_name in EXAMPLES.items():
            actions = {mode: compose(example, mode, Path(tmp)) for mode in ("none", "mpk")}
            payload = ROOT / "examples" / example / input_name
            samples: dict[str, list[float]] = {"none": [], "mpk": []}
            for _ in range(rounds):
                for mode, action in actions.items():
                    samples[mode] += run(action, payload, 10, env)
            none, mpk = (statistics.median(samples[m]) for m in ("none", "mpk"))
            print(json.dumps({"example": example, "escape_check": check,
                              "none_ms": round(none, 2), "mpk_ms": round(mpk, 2),
                              "mpk_over_none": round(mpk / none, 3),
                              "instances_per_mode": len(samples["none"])}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
