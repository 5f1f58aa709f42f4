"""The legend under the picture: what the colours, line styles and placement words mean.
Drawn as more of the scene (sample boxes and edges), so both outputs paint it alike."""

from __future__ import annotations

from . import fonts
from .layout import (
    DETAIL_SIZE,
    PAD_X,
    Box,
    Caption,
    Route,
    Scene,
    node_lines,
    text_block,
    wrap,
)
from .model import CATCH, CHOICE, DEFAULT, NEXT, SENSITIVE, TRUSTED, UNTRUSTED, Edge, Node

PLACEMENT_NOTES = (
    "Where a Task runs: thread = a thread of the Orchestrator, state by reference; "
    "sandboxed process = its own warm sandboxed process (isolation process); "
    "forked process = a process per call (-P).",
    "Parallel branches and Map iterations run on threads, in forked processes, or also in "
    "extra containers (copies of the action) when wider than the vCPUs, as plan.json says.",
)
_TRUST_SAMPLES = ((UNTRUSTED, "untrusted"), (SENSITIVE, "sensitive"), (TRUSTED, "trusted"),
                  (None, "not marked"))
_EDGE_SAMPLES = ((NEXT, "Next"), (CHOICE, "Choice rule"), (DEFAULT, "Default"),
                 (CATCH, "Catch"))
ROW_GAP = 10
SAMPLE_LINE = 36
NOTE_WRAP = 96  # characters a line


def add_legend(scene: Scene, x: float, y: float) -> tuple[float, float]:
    """Append the legend at (x, y); its width and height."""
    top = y
    scene.captions.append(Caption(x, y, "Task functions:", DETAIL_SIZE))
    left = x + fonts.width("Task functions:", DETAIL_SIZE) + 12
    row_h = 0.0
    for trust, word in _TRUST_SAMPLES:
        node = Node(f"legend-{word}", word, "Task", trust=trust)
        w, h = text_block(node_lines(node))
        box = Box(left, y, w + 2 * PAD_X, h + 8, node)
        scene.nodes.append(box)
        left += box.w + 10
        row_h = max(row_h, box.h)
    width = left - x
    y += row_h + ROW_GAP
    left = x
    line_h = fonts.line_height(DETAIL_SIZE)
    for kind, word in _EDGE_SAMPLES:
        middle = y + line_h / 2
        scene.routes.append(Route(Edge("", "", "", kind),
                                  [(left, middle), (left + SAMPLE_LINE, middle)]))
        scene.captions.append(Caption(left + SAMPLE_LINE + 6, y, word, DETAIL_SIZE))
        left += SAMPLE_LINE + 6 + fonts.width(word, DETAIL_SIZE) + 18
    width = max(width, left - x)
    y += line_h + ROW_GAP
    for note in PLACEMENT_NOTES:
        for line in wrap(note, NOTE_WRAP):
            scene.captions.append(Caption(x, y, line, DETAIL_SIZE))
            width = max(width, fonts.width(line, DETAIL_SIZE))
            y += line_h
    return width, y - top
