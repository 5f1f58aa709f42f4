"""The inspection ``compose``, ``package`` and ``deploy`` run on what an action ships.

``compose`` scans the action folder (functions may carry ``.so`` files) and records the
result -- files, digests, accepted gates, findings and the waivers applied with their
reasons -- in the action's ``inspection.json``; ``package``/``deploy`` add the trees
they ship besides it (vendored requirements such as numpy, the custom runtime layer).
An unwaived finding fails the command with its file, offset and disassembly. The record
is written first, so ``faastlane inspect OUT`` can list every finding of a failed
compose.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from .errors import InspectionFailed
from .report import Report
from .scanner import Target, elf_targets, inspect_targets
from .targets import RECORD_FILE
from .waivers import Waiver, parse_waivers

SETTINGS_SOURCE = "faastlane.json"


def app_waivers(raw: Iterable[Any] | None) -> list[Waiver]:
    """The waivers an app's ``faastlane.json`` lists (``inspector_waivers``)."""
    return parse_waivers(raw, SETTINGS_SOURCE)


def inspect_shipment(action_dir: str, waivers: list[Waiver],
                     extra: Iterable[tuple[str, str]] = ()) -> Report:
    """Scan the action folder and ``extra`` (root, label prefix) trees; record the
    report in the action's ``inspection.json``; raise InspectionFailed on a finding."""
    targets: list[Target] = [t for t in elf_targets(action_dir)]
    for root, prefix in extra:
        targets.extend(elf_targets(root, prefix))
    report = inspect_targets(targets, waivers)
    with open(os.path.join(action_dir, RECORD_FILE), "w", encoding="utf-8") as handle:
        json.dump(report.to_json(), handle, indent=2, sort_keys=True)
        handle.write("\n")
    enforce(report, action_dir)
    return report


def check_trees(trees: Iterable[tuple[str, str]], waivers: list[Waiver], what: str) -> Report:
    """Scan shipped trees that are not part of the action folder (a runtime layer)."""
    targets: list[Target] = []
    for root, prefix in trees:
        targets.extend(elf_targets(root, prefix))
    report = inspect_targets(targets, waivers)
    enforce(report, what)
    return report


def enforce(report: Report, where: str) -> None:
    """InspectionFailed naming the first unwaived finding, if there is any."""
    unwaived = report.unwaived
    if not unwaived:
        return
    more = f" (and {len(unwaived) - 1} more)" if len(unwaived) > 1 else ""
    raise InspectionFailed(
        f"{unwaived[0].one_line()}{more}: native code that can change PKRU outside the "
        f"runtime's gate, in {where}; `faastlane inspect` lists every finding with its "
        f"disassembly and what to do; to accept a file, list it in faastlane.json "
        f"\"inspector_waivers\" with a reason", report)
