"""``faastlane bench --quick`` end to end: every system runs every example and agrees.

The smoke run of CI. No timing is asserted: only the report's structure, that every run
succeeded, and that every baseline computed the same workflow output as Faastlane (or,
where a baseline's engine is known to diverge, that it still does — so that the
exception is dropped when the engine is fixed).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from faastlane_bench.catalogue import (
    BASELINE_OPENWHISK,
    BASELINE_STEP_FUNCTIONS,
    FAASTLANE_NS,
    KNOWN_DIVERGENCES,
    example_workloads,
)

QUICK_TIMEOUT = 1200  # seconds; generous for a loaded 2-core CI machine


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess,
                                                                  Path]:
    out = tmp_path_factory.mktemp("bench")
    done = subprocess.run([sys.executable, "-m", "faastlane", "bench", "--quick", "-o",
                           str(out)], capture_output=True, text=True, timeout=QUICK_TIMEOUT)
    return done, out


@pytest.fixture(scope="module")
def results(quick_run) -> dict:
    done, out = quick_run
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def test_it_writes_tables_cost_and_figures(quick_run, results):
    done, out = quick_run
    for name in ("results.json", "results.md", "cost.md", "interaction.png",
                 "variants.png", "handoff.png"):
        assert (out / name).is_file(), name
    assert "[bench" in done.stderr  # progress was shown
    table = (out / "results.md").read_text(encoding="utf-8")
    assert results["machine"]["cpu_model"] in table
    assert "| Faastlane-NS | OpenWhisk-style |" in table


def test_the_machine_is_recorded(results):
    machine = results["machine"]
    assert machine["usable_cpus"] >= 1 and machine["cpu_model"]
    assert isinstance(machine["mpk"], bool)


def test_every_example_ran_on_faastlane_and_both_baselines(results, tmp_path):
    apps = {w["name"]: w for w in results["workloads"] if w["group"] == "apps"}
    assert set(apps) == {w.name for w in example_workloads(tmp_path)}
    assert "ml-predict" in apps  # its input is generated, never committed
    for workload in apps.values():
        systems = workload["systems"]
        assert {FAASTLANE_NS, "Faastlane-Th", "Faastlane-P", BASELINE_OPENWHISK,
                BASELINE_STEP_FUNCTIONS} <= set(systems)
        for name, system in systems.items():
            assert system["failed_runs"] == 0, (workload["name"], name)
            assert system["end_to_end_ms"]["n"] >= 1
            assert system["checks"]["status"] == "SUCCEEDED", (workload["name"], name)
            parts = [system[k]["median"] for k in ("compute_ms", "external_ms",
                                                   "interaction_ms")]
            assert all(p >= 0 for p in parts)
        assert systems[FAASTLANE_NS]["checks"]["matches_expected"] is not False
        assert workload["comparisons"], workload["name"]


def test_every_baseline_computed_faastlanes_output(results):
    for workload in results["workloads"]:
        for name, system in workload["systems"].items():
            known = KNOWN_DIVERGENCES.get((workload["app"], name))
            if known:
                assert not system["checks"]["matches_reference"], (
                    f"{name} now agrees on {workload['app']}: drop it from KNOWN_DIVERGENCES")
                assert system["checks"]["known_divergence"] == known
            else:
                assert system["checks"]["matches_reference"], (workload["name"], name)
        assert workload["outputs_agree"]


def test_the_handoff_microbenchmark_has_per_edge_gaps(results):
    chain = [w for w in results["workloads"] if w["group"] == "handoff"]
    assert chain
    edges = chain[0]["systems"][FAASTLANE_NS]["handoffs"]
    assert {"Hop1 -> Hop2", "Hop4 -> Hop5"} <= set(edges)
