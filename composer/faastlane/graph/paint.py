"""Drawing a laid-out scene: one painter, two canvases (SVG text and a Pillow image).

A canvas draws in the scene's pixels: ``rect``, ``polygon``, ``polyline`` (optionally
dashed, optionally ending in an arrowhead) and ``text`` (left-aligned, ``y`` the top of
the line). Colours say what a state is: a Task's fill its function's trust, a Choice
yellow, Succeed green, Fail red; edges grey (Next), amber (Choice rules, dashed for the
Default) and red dashed (Catch).
"""

from __future__ import annotations

from typing import Protocol

from . import fonts
from .layout import LABEL_SIZE, PAD_Y, Box, Route, Scene, node_lines
from .model import CATCH, CHOICE, DEFAULT, SENSITIVE, TRUSTED, UNTRUSTED, Cluster, Node

Point = tuple[float, float]

# (fill, stroke) per kind of box.
TRUST_COLOURS = {UNTRUSTED: ("#f9d3d0", "#c0392b"), SENSITIVE: ("#fde5c4", "#d35400"),
                 TRUSTED: ("#d7f0d9", "#2e8b57"), None: ("#dde9f8", "#2e6da4")}
KIND_COLOURS = {"Choice": ("#fff4c2", "#a67c00"), "Pass": ("#eeeeee", "#777777"),
                "Wait": ("#eeeeee", "#777777"), "Succeed": ("#d7f0d9", "#2e8b57"),
                "Fail": ("#f5b7b1", "#922b21"), "Start": ("#333333", "#333333"),
                "End": ("#333333", "#333333")}
CLUSTER_COLOURS = {"Parallel": ("#f3f5fa", "#5b6b8c"), "Map": ("#f6f1fb", "#7d5ba6")}
EDGE_COLOURS = {CHOICE: "#a67c00", DEFAULT: "#a67c00", CATCH: "#c0392b"}
TEXT, LIGHT_TEXT, TIME_TEXT, LABEL_TEXT = "#1d1d1d", "#ffffff", "#0b6e4f", "#5a4500"
LANE = ("#ffffff", "#b0b8c8")


class Canvas(Protocol):
    def rect(self, box: Box, fill: str, stroke: str, radius: float = 0,
             dashed: bool = False) -> None: ...

    def polygon(self, points: list[Point], fill: str, stroke: str) -> None: ...

    def polyline(self, points: list[Point], stroke: str, dashed: bool = False,
                 arrow: bool = False) -> None: ...

    def text(self, x: float, y: float, text: str, size: int, colour: str) -> None: ...


def box_colours(item: Node | Cluster) -> tuple[str, str]:
    if isinstance(item, Cluster):
        return CLUSTER_COLOURS.get(item.kind, CLUSTER_COLOURS["Parallel"])
    if item.kind == "Task":
        return TRUST_COLOURS[item.trust]
    return KIND_COLOURS.get(item.kind, KIND_COLOURS["Pass"])


def _hexagon(box: Box) -> list[Point]:
    inset = min(12.0, box.w / 4)
    middle = box.y + box.h / 2
    return [(box.x + inset, box.y), (box.x + box.w - inset, box.y), (box.x + box.w, middle),
            (box.x + box.w - inset, box.y + box.h), (box.x + inset, box.y + box.h),
            (box.x, middle)]


def _node(canvas: Canvas, box: Box) -> None:
    node = box.item
    assert isinstance(node, Node)
    fill, stroke = box_colours(node)
    if node.kind == "Choice":
        canvas.polygon(_hexagon(box), fill, stroke)
    else:
        radius = box.h / 2 if node.kind in ("Start", "End") else 6
        canvas.rect(box, fill, stroke, radius)
    y = box.y + PAD_Y
    for index, (text, size) in enumerate(node_lines(node)):
        colour = LIGHT_TEXT if node.kind in ("Start", "End") else (
            TIME_TEXT if node.time and text == node.time and index > 0 else TEXT)
        canvas.text(box.x + (box.w - fonts.width(text, size)) / 2, y, text, size, colour)
        y += fonts.line_height(size)


def _edge(canvas: Canvas, route: Route) -> None:
    kind = route.edge.kind
    colour = EDGE_COLOURS.get(kind, "#555555")
    canvas.polyline(route.points, colour, dashed=kind in (DEFAULT, CATCH),
                    arrow=bool(route.edge.source or route.edge.target))
    if route.label and route.label_box is not None:
        y = route.label_box.y + 2
        for line in route.label:
            canvas.text(route.label_box.x, y, line, LABEL_SIZE,
                        EDGE_COLOURS.get(kind, LABEL_TEXT))
            y += fonts.line_height(LABEL_SIZE)
    elif route.label:  # a loop: beside its right side
        x, y = route.points[1]
        canvas.text(x + 4, y, " ".join(route.label), LABEL_SIZE, colour)


def paint(scene: Scene, canvas: Canvas) -> None:
    """Clusters outermost first, then branch lanes, edges, boxes, and text on top."""
    for box in sorted(scene.clusters, key=lambda b: b.depth):
        assert box.item is not None
        fill, stroke = box_colours(box.item)
        canvas.rect(box, fill, stroke, 8, dashed=box.item.kind == "Map")
        for lane in scene.lanes:
            if box.contains(lane) and not any(
                    inner is not box and box.contains(inner) and inner.contains(lane)
                    for inner in scene.clusters):
                canvas.rect(lane, LANE[0], LANE[1], 4, dashed=True)
    for route in scene.routes:
        _edge(canvas, route)
    for box in scene.nodes:
        _node(canvas, box)
    for caption in scene.captions:
        colour = TIME_TEXT if caption.role == "time" else TEXT
        canvas.text(caption.x, caption.y, caption.text, caption.size, colour)
