"""What the benchmark runs: workloads (an app and one input) and systems (how to run it).

Workloads are found, not listed by hand: every example application with a
``workflow.json`` and an ``input.json`` is picked up (so an example that lands later is
benchmarked without a change here), plus the FINRA scalability inputs (50-200 rules,
sliced from ``input-200.json``) and the hand-off microbenchmark ``bench/apps/chain``
with payloads of 1 KB, 100 KB and 1 MB.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faastlane.app_source import load
from faastlane.runtime.isolation import domains

REPOSITORY = Path(__file__).resolve().parents[2]  # bench/faastlane_bench/catalogue.py
EXAMPLES = REPOSITORY / "examples"
CHAIN_APP = REPOSITORY / "bench" / "apps" / "chain"
# The examples that call AWS services (DynamoDB, SNS, Comprehend Medical) need the local
# endpoints of examples/local-aws; the baselines need its S3 for claim checks anyway.
LOCAL_AWS = EXAMPLES / "local-aws"
FINRA_RULES = (50, 100, 150, 200)
CHAIN_PAYLOADS = {"1KB": 1_000, "100KB": 100_000, "1MB": 1_000_000}

# Output fields that legitimately differ between containers, left out of comparisons:
# ml-predict's Predict reports when its container trained the model.
VOLATILE_FIELDS = {"ml-predict": (("model", "trained_at"),)}

BASELINE_OPENWHISK = "OpenWhisk-style"
BASELINE_STEP_FUNCTIONS = "StepFunctions-style"

# Where a baseline's engine computes a different output than Step Functions specifies,
# with the reason; the benchmark reports it instead of counting it as a disagreement, and
# tests/bench checks it is still there (so that a fixed engine removes the entry).
KNOWN_DIVERGENCES = {
    ("healthcare", BASELINE_STEP_FUNCTIONS):
        "moto 5.2's Step Functions engine evaluates a definite path in a ResultSelector "
        "(\"record_id.$\": \"$[0].record_id\") to a one-element list (['r-001']) instead "
        "of the value, so the Report state's filters select different records",
}
FAASTLANE_NS = "Faastlane-NS"


@dataclass(frozen=True)
class Workload:
    """One app with one input; ``group`` says which figure it belongs to."""

    name: str
    app: str
    input_file: str
    group: str  # "apps", "scalability" or "handoff"
    expected_file: str | None = None
    size: int = 0  # rules (scalability) or payload bytes (handoff)


@dataclass(frozen=True)
class SystemSpec:
    """How to run a workload: a Faastlane variant (planning options) or a baseline."""

    name: str
    kind: str  # "faastlane", "openwhisk" or "stepfunctions"
    planning: dict[str, Any] = field(default_factory=dict)

    @property
    def is_baseline(self) -> bool:
        return self.kind != "faastlane"


def example_workloads(scratch: Path) -> list[Workload]:
    """Every example with a workflow and an input: its committed ``input.json``, or the
    one its ``generate_input.py`` writes into ``scratch`` (ml-predict's ~1.5 MB scan)."""
    found = []
    for folder in sorted(EXAMPLES.iterdir()):
        if not (folder / "workflow.json").is_file():
            continue
        input_file = _example_input(folder, scratch)
        if input_file is None:
            continue
        expected = folder / "expected.json"
        # FINRA's input is also the 50-rule point of the scalability figure.
        size = len(json.loads(input_file.read_text(encoding="utf-8"))
                   .get("rules", [])) if folder.name == "finra" else 0
        found.append(Workload(folder.name, str(folder), str(input_file), "apps",
                              str(expected) if expected.is_file() else None, size))
    return found


def _example_input(folder: Path, scratch: Path) -> Path | None:
    if (folder / "input.json").is_file():
        return folder / "input.json"
    generator = folder / "generate_input.py"
    if not generator.is_file():
        return None
    generated = scratch / f"{folder.name}-input" / "input.json"
    if not generated.is_file():
        subprocess.run([sys.executable, str(generator), str(generated.parent)], check=True,
                       capture_output=True, timeout=600)
    return generated


def finra_scalability(scratch: Path, rules: tuple[int, ...] = FINRA_RULES) -> list[Workload]:
    """FINRA with the first N of its 200 rules (expected output known for 50 and 200)."""
    finra = EXAMPLES / "finra"
    if not (finra / "input-200.json").is_file():
        return []
    full = json.loads((finra / "input-200.json").read_text(encoding="utf-8"))
    found = []
    for count in rules:
        path = scratch / f"finra-{count}.json"
        path.write_text(json.dumps({**full, "rules": full["rules"][:count]}), encoding="utf-8")
        expected = {50: finra / "expected.json", 200: finra / "expected-200.json"}.get(count)
        found.append(Workload(f"finra-{count}", str(finra), str(path), "scalability",
                              str(expected) if expected and expected.is_file() else None,
                              count))
    return found


def handoff_workloads(scratch: Path, payloads: dict[str, int] = CHAIN_PAYLOADS
                      ) -> list[Workload]:
    """The five-hop echo chain with a payload of each size; its output is its input."""
    found = []
    for label, size in payloads.items():
        path = scratch / f"chain-{label}.json"
        path.write_text(json.dumps({"payload": "x" * size}), encoding="utf-8")
        found.append(Workload(f"chain-{label}", str(CHAIN_APP), str(path), "handoff",
                              str(path), size))
    return found


FAASTLANE_MPK = "Faastlane (mpk)"
FAASTLANE_MPK_UNENFORCED = "Faastlane (mpk, no keys)"


def mpk_system() -> tuple[SystemSpec | None, str]:
    """The MPK row and what it measures: real keys where this interpreter (cpython-mpk)
    and CPU have them; on cpython-mpk without keys, the same private heaps, gates and
    copies with nothing enforced (labelled so); none elsewhere (no private heaps)."""
    if domains.status().implementation == "missing":
        return None, (f"{FAASTLANE_MPK} not measured: this Python is not the cpython-mpk "
                      f"runtime (no _faastlane)")
    status = domains.status_in_use()
    if status.available:
        return SystemSpec(FAASTLANE_MPK, "faastlane", {"isolation": "mpk"}), ""
    return (SystemSpec(FAASTLANE_MPK_UNENFORCED, "faastlane", {"isolation": "mpk"}),
            f"{FAASTLANE_MPK_UNENFORCED}: private heaps and their gates without protection "
            f"keys ({status.reason}): its costs, not its enforcement")


def systems_for(workload: Workload, with_baselines: bool = True,
                variants: bool = True) -> list[SystemSpec]:
    """Faastlane in the app's own isolation, its variants, and the baselines.

    The full system is listed where it differs from -NS (isolated by default: mpk where
    the host has protection keys, else process); process isolation and mpk (real keys,
    else unenforced, labelled so, on the cpython-mpk runtime) are always measured too.
    """
    systems = [SystemSpec(FAASTLANE_NS, "faastlane", {"isolation": "none"})]
    isolation = load(workload.app, {}).options.isolation
    if isolation != "none":
        systems.append(SystemSpec(f"Faastlane ({isolation})", "faastlane", {}))
    if isolation != "process":
        systems.append(SystemSpec("Faastlane (process)", "faastlane",
                                  {"isolation": "process"}))
    mpk, _ = mpk_system()
    if isolation != "mpk" and mpk is not None:
        systems.append(mpk)
    if variants:
        systems.append(SystemSpec("Faastlane-Th", "faastlane",
                                  {"isolation": "none", "threads_only": True}))
        systems.append(SystemSpec("Faastlane-P", "faastlane",
                                  {"isolation": "none", "processes_only": True}))
    if with_baselines:
        systems.append(SystemSpec(BASELINE_OPENWHISK, "openwhisk"))
        systems.append(SystemSpec(BASELINE_STEP_FUNCTIONS, "stepfunctions"))
    return systems


def comparable(app_name: str, output: Any) -> Any:
    """``output`` without the app's volatile fields (wherever they occur)."""
    paths = VOLATILE_FIELDS.get(app_name, ())
    if not paths:
        return output

    def strip(value: Any) -> Any:
        if isinstance(value, list):
            return [strip(v) for v in value]
        if not isinstance(value, dict):
            return value
        value = {k: strip(v) for k, v in value.items()}
        for path in paths:
            inner = value
            for key in path[:-1]:
                inner = inner.get(key) if isinstance(inner, dict) else None
            if isinstance(inner, dict) and path[-1] in inner:
                inner.pop(path[-1])
        return value

    return strip(output)


def contains(output: Any, expected: Any) -> bool:
    """Whether ``output`` has everything ``expected`` has (an expected output may list only
    the fields that matter, as ml-predict's does)."""
    if isinstance(expected, dict):
        return isinstance(output, dict) and all(
            k in output and contains(output[k], v) for k, v in expected.items())
    if isinstance(expected, list):
        return (isinstance(output, list) and len(output) == len(expected)
                and all(contains(o, e) for o, e in zip(output, expected, strict=True)))
    return bool(output == expected)
