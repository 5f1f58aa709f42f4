"""Where the commands that work on a composed app (graph, serve) get it: the one seam for
what APP may name (an app folder or a SAM / CloudFormation template, with the template
options in ``planning``; ``app.sources.load_app`` reads it)."""

from __future__ import annotations

from typing import Any

from faastlane.compose.action import Composition, prepare


def load(app: str, planning: dict[str, Any]) -> Composition:
    """The app, validated and planned as ``faastlane compose`` plans it."""
    return prepare(app, **planning)
