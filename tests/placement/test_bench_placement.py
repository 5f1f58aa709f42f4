"""``faastlane bench --placement --quick``: the placement figure's benchmark runs end to end
(profile, one container, spilling, the run-time choice, one container per function) and
every system computes FINRA's expected report. A smoke test: no timing is asserted."""

from __future__ import annotations

import json
import os
from pathlib import Path

from faastlane_bench import placement
from integration.apps import faastlane


def test_cpu_sets_are_handed_out_round_robin() -> None:
    usable = sorted(os.sched_getaffinity(0))
    sets = placement.cpu_sets(1, 2 * len(usable))
    assert sets == [[cpu] for cpu in usable] * 2
    assert placement.cpu_sets(len(usable), 3) == [usable] * 3


def test_quick_placement_run_agrees_with_the_expected_report(tmp_path: Path) -> None:
    out = tmp_path / "placement"
    done = faastlane("bench", "--placement", "--quick", "--no-plots", "-o", str(out),
                     timeout=900)
    assert done.code == 0, done.stderr
    document = json.loads((out / "placement.json").read_text())
    (point,) = document["points"]
    assert (point["vcpus"], point["rules"]) == (1, 50)
    assert set(point["systems"]) == {placement.ONE, "Faastlane spill to 2",
                                     "Faastlane auto (2)", placement.OPENWHISK}
    for system in point["systems"].values():
        assert system["checks"] == {"status": "SUCCEEDED", "matches_reference": True,
                                    "matches_expected": True}
        assert system["failed_runs"] == 0
    assert point["systems"]["Faastlane spill to 2"]["remote_groups_median"] >= 1
    assert point["systems"][placement.ONE]["remote_groups_median"] == 0
    assert set(document["profiles"]["1"]["handoff"]) == {
        "fork_ms", "pipe_ms_per_mb", "invoke_ms", "transfer_ms_per_mb"}
    assert "| 50 |" in (out / "placement.md").read_text()
