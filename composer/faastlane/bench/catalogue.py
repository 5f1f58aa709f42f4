"""What the benchmark runs: workloads (an app and one input) and systems (how to run it).

Workloads are found, not listed by hand: every example application with a
``workflow.json`` and an ``input.json`` is picked up (so an example that lands later is
benchmarked without a change here), plus the FINRA scalability inputs (50-200 rules,
sliced from ``input-200.json``) and the hand-off microbenchmark ``bench/apps/chain``
with payloads of 1 KB, 100 KB and 1 MB.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..compose import prepare

REPOSITORY = Path(__file__).resolve().parents[3]
EXAMPLES = REPOSITORY / "examples"
CHAIN_APP = REPOSITORY / "bench" / "apps" / "chain"
# The examples that call AWS services (DynamoDB, SNS, Comprehend Medical) need the local
# endpoints of examples/local-aws; the baselines need its S3 for claim checks anyway.
LOCAL_AWS = EXAMPLES / "local-aws"
FINRA_RULES = (50, 100, 150, 200)
CHAIN_PAYLOADS = {"1KB": 1_000, "100KB": 100_000, "1MB": 1_000_000}

BASELINE_OPENWHISK = "OpenWhisk-style"
BASELINE_STEP_FUNCTIONS = "StepFunctions-style"
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


def example_workloads() -> list[Workload]:
    found = []
    for folder in sorted(EXAMPLES.iterdir()):
        if (folder / "workflow.json").is_file() and (folder / "input.json").is_file():
            expected = folder / "expected.json"
            found.append(Workload(folder.name, str(folder), str(folder / "input.json"),
                                  "apps", str(expected) if expected.is_file() else None))
    return found


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


def systems_for(workload: Workload, with_baselines: bool = True,
                variants: bool = True) -> list[SystemSpec]:
    """Faastlane in the app's own isolation, its variants, and the baselines.

    The full system is listed only where it differs from -NS (an app with untrusted
    functions gets process isolation; MPK is used where the host has it).
    """
    systems = [SystemSpec(FAASTLANE_NS, "faastlane", {"isolation": "none"})]
    isolation = prepare(workload.app).options.isolation
    if isolation != "none":
        systems.append(SystemSpec(f"Faastlane ({isolation})", "faastlane", {}))
    if variants:
        systems.append(SystemSpec("Faastlane-Th", "faastlane",
                                  {"isolation": "none", "threads_only": True}))
        systems.append(SystemSpec("Faastlane-P", "faastlane",
                                  {"isolation": "none", "processes_only": True}))
    if with_baselines:
        systems.append(SystemSpec(BASELINE_OPENWHISK, "openwhisk"))
        systems.append(SystemSpec(BASELINE_STEP_FUNCTIONS, "stepfunctions"))
    return systems


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1
