"""plan.json as the action reads it: once, when it starts.

``faastlane compose`` writes plan.json beside the Orchestrator: the options, every
function's marks from faastlane.json, and each state's placement with its reason. The
Orchestrator, the warm workers and the local runner take what they need from one
:class:`ActionPlan`; an Orchestrator made without one (a test, a script) has defaults.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from typing import Any

from .options import Options

PLAN_FILE = "plan.json"


@dataclass(frozen=True)
class ActionPlan:
    """The options and marks an action was composed with."""

    options: Options = field(default_factory=Options)
    # function -> its marks ("untrusted", "sensitive", "trusted") from faastlane.json
    marks: dict[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def read(cls, root: str) -> ActionPlan:
        """The plan in the action folder ``root``; defaults where there is none."""
        try:
            with open(os.path.join(root, PLAN_FILE), encoding="utf-8") as handle:
                document = json.load(handle)
        except FileNotFoundError:
            return cls()
        return cls.from_json(document)

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> ActionPlan:
        recorded = document.get("options", {})
        options = Options(**{k: v for k, v in recorded.items()
                             if k in Options.__dataclass_fields__})
        marks = {name: frozenset(mark for mark in ("untrusted", "sensitive", "trusted")
                                 if entry.get(mark))
                 for name, entry in document.get("functions", {}).items()
                 if isinstance(entry, dict)}
        return cls(options, marks)

    def marked(self, *marks: str) -> frozenset[str]:
        """The functions marked with any of ``marks``."""
        return frozenset(name for name, have in self.marks.items() if have & set(marks))

    def overriding(self, isolation: str | None) -> ActionPlan:
        """This plan run under another isolation mode (``faastlane run --isolation``,
        the action's own ``--isolation``): its functions are loaded for that mode."""
        if isolation is None:
            return self
        return replace(self, options=replace(self.options, isolation=isolation))
