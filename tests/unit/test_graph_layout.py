"""The layered layout of ``faastlane graph``: no two boxes overlap, nested states stay
inside their cluster, edge labels sit clear of the boxes, loops are laid out."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from faastlane.app_source import load
from faastlane.graph.choice_text import condition
from faastlane.graph.layout import Box, Scene, layout
from faastlane.graph.legend import add_legend
from faastlane.graph.model import CHOICE, Cluster, Diagram, Edge, Graph, Node, build

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PLANNING = {"isolation": None, "vcpus": None, "threads_only": False, "processes_only": False,
            "max_containers": None}


def _siblings_disjoint(boxes: list[Box]) -> None:
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b), (a, b)


def _check(scene: Scene) -> None:
    _siblings_disjoint(scene.nodes)
    labels = [r.label_box for r in scene.routes if r.label_box is not None]
    _siblings_disjoint(labels)
    for label in labels:
        assert not any(label.overlaps(node) for node in scene.nodes), label
    for cluster in scene.clusters:  # clusters nest or are apart, never cross
        for other in scene.clusters:
            if other is not cluster and cluster.overlaps(other):
                assert cluster.contains(other) or other.contains(cluster)
    for box in scene.nodes + scene.clusters:
        assert 0 <= box.x and box.x + box.w <= scene.width
        assert 0 <= box.y and box.y + box.h <= scene.height
    for route in scene.routes:  # an edge crosses no box but its own ends and clusters
        ends = {route.edge.source, route.edge.target}   # around it
        for box in scene.nodes + scene.clusters:
            if box.item is None or box.item.id in ends or _around(box, route.points):
                continue
            for a, b in pairwise(route.points):
                assert not _crosses(a, b, box), (route.edge, box.item.id)


def _around(box: Box, points: list[tuple[float, float]]) -> bool:
    return all(box.x <= x <= box.x + box.w and box.y <= y <= box.y + box.h for x, y in points)


def _crosses(a: tuple[float, float], b: tuple[float, float], box: Box) -> bool:
    """Whether segment ab enters the box's interior (Liang-Barsky clipping)."""
    low, high = 0.0, 1.0
    dx, dy = b[0] - a[0], b[1] - a[1]
    for p, q in ((-dx, a[0] - box.x - 0.5), (dx, box.x + box.w - 0.5 - a[0]),
                 (-dy, a[1] - box.y - 0.5), (dy, box.y + box.h - 0.5 - a[1])):
        if p == 0:
            if q < 0:
                return False
        elif p < 0:
            low = max(low, q / p)
        else:
            high = min(high, q / p)
    return low < high


@pytest.mark.parametrize("example", ["finra", "ml-predict", "healthcare", "sentiment"])
def test_the_examples_lay_out_without_overlaps(example: str) -> None:
    graph = build(load(str(EXAMPLES / example), PLANNING))
    scene = layout(graph, add_legend)
    _check(scene)
    inner = [n for n in scene.nodes if "/" in n.item.id]  # states in branches/iterators
    assert inner
    for node in inner:
        assert any(c.contains(node) for c in scene.clusters), node.item.id


def test_a_loop_back_to_an_earlier_state_is_routed_upwards() -> None:
    items = [Node("__start__", "Start", "Start"), Node("Poll", "Poll", "Task"),
             Node("Ready", "Ready", "Choice"), Node("Wait", "Wait", "Wait"),
             Node("Done", "Done", "Succeed")]
    edges = [Edge("__start__", "Poll"), Edge("Poll", "Ready"),
             Edge("Ready", "Done", "$.status == \"done\"", CHOICE),
             Edge("Ready", "Wait", "default"), Edge("Wait", "Poll"), Edge("Wait", "Wait")]
    scene = layout(Graph("loop", "none", Diagram(items, edges)))
    _check(scene)
    back = [r for r in scene.routes if r.back]
    assert [(r.edge.source, r.edge.target) for r in back] == [("Wait", "Poll")]
    boxes = {b.item.id: b for b in scene.nodes}
    assert back[0].points[-1][1] == boxes["Poll"].y + boxes["Poll"].h  # into Poll's bottom
    assert len(scene.routes) == len(edges)


def test_wide_sections_keep_every_branch_apart() -> None:
    lanes = [Diagram([Node(f"P/Branches/{i}/T{i}", f"Task number {i}", "Task")], [],
                     f"branch {i + 1}") for i in range(6)]
    cluster = Cluster("P", "P", "Parallel", ["6 branches in forked processes"], lanes)
    diagram = Diagram([Node("__start__", "Start", "Start"), cluster],
                      [Edge("__start__", "P")])
    scene = layout(Graph("wide", "none", diagram))
    _check(scene)
    _siblings_disjoint(scene.lanes)
    assert len(scene.lanes) == 6


@pytest.mark.parametrize("rule, text", [
    ({"Variable": "$.amount", "NumericGreaterThan": 100}, "$.amount > 100"),
    ({"Variable": "$.a", "StringEqualsPath": "$.b"}, "$.a == $.b"),
    ({"Variable": "$.x", "IsPresent": False}, "$.x is not present"),
    ({"And": [{"Variable": "$.a", "NumericLessThan": 1},
              {"Not": {"Variable": "$.b", "BooleanEquals": True}}]},
     "($.a < 1) and (not ($.b == true))"),
    ({"Condition": "{% $states.input.n > 2 %}"}, "$states.input.n > 2"),
])
def test_choice_rules_read_as_conditions(rule: dict, text: str) -> None:
    assert condition(rule) == text
