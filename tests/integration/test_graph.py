"""``faastlane graph`` through the CLI: the four formats, what each shows, trace times."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from PIL import Image

from faastlane.app_source import load
from faastlane.graph.layout import layout
from faastlane.graph.legend import add_legend
from faastlane.graph.model import build
from faastlane.graph.png import image_size

from .apps import ROOT, faastlane

HEALTHCARE = str(ROOT / "examples" / "healthcare")
FINRA = str(ROOT / "examples" / "finra")
SVG = "{http://www.w3.org/2000/svg}"
PLANNING = {"isolation": None, "vcpus": None, "threads_only": False, "processes_only": False,
            "max_containers": None}


def _texts(svg: Path) -> list[str]:
    root = ET.parse(svg).getroot()  # valid XML, or this raises
    assert root.tag == f"{SVG}svg"
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def test_svg_shows_states_clusters_conditions_placement_and_trust(tmp_path: Path) -> None:
    out = tmp_path / "healthcare.svg"
    done = faastlane("graph", HEALTHCARE, "-o", str(out))
    assert done.code == 0, done.stderr
    texts = _texts(out)
    for state in ("PHIIdentifier", "CheckConsent", "StoreProtected", "AnonRecord",
                  "Analytics", "Report", "Start", "End"):
        assert state in texts
    assert "Map ProcessRecords" in texts and "Parallel StoreAndAnonymise" in texts
    assert {"branch 1", "branch 2", "per item"} <= set(texts)
    assert '$.consent == "full"' in texts and "default" in texts
    assert "sandboxed process" in texts  # isolation process: the marked functions
    text = out.read_text()
    assert "#f9d3d0" in text and "#fde5c4" in text  # untrusted Analytics, sensitive others
    assert "untrusted" in texts and "sensitive" in texts  # the legend
    assert re.search(r"retry x3: TooManyRequestsException,", text)


def test_isolation_option_changes_the_placement_drawn(tmp_path: Path) -> None:
    out = tmp_path / "none.svg"
    assert faastlane("graph", HEALTHCARE, "-o", str(out), "--isolation", "none").code == 0
    texts = _texts(out)
    assert "sandboxed process" not in texts and "thread" in texts


def test_png_decodes_at_the_layout_size(tmp_path: Path) -> None:
    out = tmp_path / "finra.png"
    done = faastlane("graph", FINRA, "-o", str(out))
    assert done.code == 0, done.stderr
    expected = image_size(layout(build(load(FINRA, PLANNING)), add_legend))
    with Image.open(out) as image:
        image.load()
        assert image.format == "PNG" and image.size == expected
        # Not blank: boxes in colour on the white ground.
        assert len(image.getcolors(maxcolors=1 << 16) or []) > 10


def test_mermaid_and_dot_hold_nodes_edges_and_clusters(tmp_path: Path) -> None:
    mmd, dot = tmp_path / "h.mmd", tmp_path / "h.dot"
    assert faastlane("graph", HEALTHCARE, "-o", str(mmd)).code == 0
    assert faastlane("graph", HEALTHCARE, "-o", str(dot)).code == 0
    mermaid = mmd.read_text()
    assert mermaid.startswith("---\ntitle:") and "flowchart TD" in mermaid
    assert mermaid.count("subgraph") == 2 + 3  # Map, Parallel; per item, 2 branches
    assert re.search(r'CheckConsent\S* -- "\$\.consent == #quot;full#quot;" --> ', mermaid)
    assert ":::untrusted" in mermaid and ":::sensitive" in mermaid
    text = dot.read_text()
    assert "digraph" in text and "compound=true" in text
    assert text.count("subgraph cluster_") == 5
    assert "lhead=cluster_" in text  # the edge into the Parallel state's box
    assert 'label="$.consent == \\"store-only\\""' in text
    assert text.count("{") == text.count("}")


def test_catch_edges_are_labelled_with_their_errors(tmp_path: Path) -> None:
    app = tmp_path / "orders"
    assert faastlane("init", str(app)).code == 0
    out = tmp_path / "orders.svg"
    assert faastlane("graph", str(app), "-o", str(out)).code == 0
    texts = _texts(out)
    assert "catch InvalidOrder" in texts and "$.order.total > 100" in texts


def test_trace_times_are_drawn(tmp_path: Path) -> None:
    app, trace = tmp_path / "orders", tmp_path / "run.jsonl"
    assert faastlane("init", str(app)).code == 0
    run = faastlane("run", str(app), "--input-file", str(app / "input.json"),
                    "--trace", str(trace))
    assert run.code == 0, run.stderr
    records = [json.loads(line) for line in trace.read_text().splitlines()[1:]]
    measured = next(r for r in records if r["state"] == "ValidateOrder"
                    and r["type"] == "Task")
    took = f"{(measured['end'] - measured['start']) * 1000:.1f} ms"
    out = tmp_path / "traced.svg"
    done = faastlane("graph", str(app), "-o", str(out), "--trace", str(trace))
    assert done.code == 0, done.stderr
    texts = _texts(out)
    assert took in texts
    assert any(t.startswith("isolation process; traced run: ") for t in texts)


def test_bad_output_and_trace_are_one_line_errors(tmp_path: Path) -> None:
    done = faastlane("graph", FINRA, "-o", str(tmp_path / "x.jpg"))
    assert done.code == 2 and "use one of .svg, .png, .mmd, .dot" in done.stderr
    assert "Traceback" not in done.stderr
    mine = tmp_path / "notes.svg"
    mine.write_text("<svg>my own drawing</svg>")
    done = faastlane("graph", FINRA, "-o", str(mine))
    assert done.code == 2 and "not replacing it" in done.stderr
    assert mine.read_text() == "<svg>my own drawing</svg>"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"trace": "faastlane"}\nnot json\n')
    done = faastlane("graph", FINRA, "-o", str(tmp_path / "f.svg"), "--trace", str(bad))
    assert done.code == 2 and f"{bad}:2: not a trace line" in done.stderr


def test_a_step_functions_execution_history_is_drawn_too(tmp_path: Path) -> None:
    app = tmp_path / "orders"
    assert faastlane("init", str(app)).code == 0

    def event(number: int, kind: str, at: str, name: str | None = None) -> dict:
        found = {"id": number, "type": kind, "timestamp": at}
        if name and kind.endswith("Entered"):
            found["stateEnteredEventDetails"] = {"name": name, "input": "{}"}
        elif name:
            found["stateExitedEventDetails"] = {"name": name, "output": "{}"}
        return found

    # As `aws stepfunctions get-execution-history` prints it.
    history = {"events": [
        event(1, "ExecutionStarted", "2026-11-25T08:00:00.000000+00:00"),
        event(2, "TaskStateEntered", "2026-11-25T08:00:00.010000+00:00", "ValidateOrder"),
        event(3, "TaskStateExited", "2026-11-25T08:00:00.260000+00:00", "ValidateOrder"),
        event(4, "ChoiceStateEntered", "2026-11-25T08:00:00.261000+00:00", "IsLarge"),
        event(5, "ChoiceStateExited", "2026-11-25T08:00:00.263000+00:00", "IsLarge"),
        event(6, "ExecutionSucceeded", "2026-11-25T08:00:00.400000+00:00"),
    ]}
    (tmp_path / "history.json").write_text(json.dumps(history, indent=2))
    out = tmp_path / "aws.svg"
    done = faastlane("graph", str(app), "-o", str(out), "--trace",
                     str(tmp_path / "history.json"))
    assert done.code == 0, done.stderr
    texts = _texts(out)
    assert "250.0 ms" in texts and "2.0 ms" in texts
    assert any(t.endswith("traced run: 400.0 ms end to end") for t in texts)


def test_the_planning_options_change_the_placements_drawn(tmp_path: Path) -> None:
    spill, forks = tmp_path / "spill.mmd", tmp_path / "forks.mmd"
    assert faastlane("graph", FINRA, "-o", str(spill), "--vcpus", "1",
                     "--max-containers", "4").code == 0
    text = spill.read_text()
    assert "2 branches in processes, extra containers when wide" in text
    assert faastlane("graph", FINRA, "-o", str(forks), "--processes-only").code == 0
    text = forks.read_text()
    assert "FetchPortfolioData<br/>forked process" in text
    assert "sandboxed process" not in text
