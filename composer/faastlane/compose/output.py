"""The action folder on disk: written whole, and replaced only when it is Faastlane's own.

``faastlane compose APP -o OUT`` (and ``run --keep OUT``) must never delete or overwrite
what it did not create. So an action is built in a staging folder beside OUT and moved
into place at the end; an existing OUT is replaced only when it is empty or holds the
marker a previous compose left (``.faastlane-action.json``, listing what it wrote) and
nothing else. OUT may not be the app itself, hold it, or lie in its ``functions/``.
A failure (or a signal) leaves OUT as it was and no staging folder behind.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from faastlane.errors import FaastlaneError

MARKER = ".faastlane-action.json"


class OutputRefused(FaastlaneError):
    """OUT holds something Faastlane did not write, or is the app itself."""


def check_target(out_dir: str, app_root: str, functions_dir: str) -> None:
    """Refuse an output folder that would replace or mix with what is not ours."""
    out, app = os.path.realpath(out_dir), os.path.realpath(app_root)
    functions = os.path.realpath(functions_dir)
    if out == app or app.startswith(out + os.sep):
        raise OutputRefused(f"{out_dir} is the app folder {app_root} or holds it: "
                            f"write the action to another folder (e.g. {app_root}-action)")
    if out == functions or out.startswith(functions + os.sep):
        raise OutputRefused(f"{out_dir} is inside the app's functions folder "
                            f"{functions_dir}: write the action elsewhere")
    if not os.path.lexists(out_dir):
        return
    if not os.path.isdir(out_dir) or os.path.islink(out_dir):
        raise OutputRefused(f"{out_dir} exists and is not a folder: choose a new path")
    entries = set(os.listdir(out_dir))
    if not entries:
        return
    if MARKER not in entries:
        raise OutputRefused(
            f"{out_dir} is not empty and is not an action faastlane composed (no {MARKER}): "
            f"choose a new or empty folder; nothing was written")
    ours = set(_recorded_entries(out_dir)) | {MARKER}
    foreign = sorted(entries - ours)
    if foreign:
        raise OutputRefused(
            f"{out_dir} is an earlier action but also holds what faastlane did not write "
            f"({', '.join(foreign[:5])}{', ...' if len(foreign) > 5 else ''}): move those "
            f"away or choose another folder; nothing was written")


def _recorded_entries(out_dir: str) -> list[str]:
    try:
        with open(os.path.join(out_dir, MARKER), encoding="utf-8") as handle:
            entries = json.load(handle).get("entries", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [e for e in entries if isinstance(e, str) and "/" not in e and e not in ("", ".", "..")]


@contextmanager
def staged(out_dir: str) -> Iterator[str]:
    """A fresh folder to build the action in; on success it replaces ``out_dir``."""
    parent = os.path.dirname(os.path.abspath(out_dir))
    os.makedirs(parent, exist_ok=True)
    stage = tempfile.mkdtemp(prefix=".faastlane-staging-", dir=parent)
    try:
        yield stage
        _mark(stage)
        _replace(stage, out_dir)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _mark(stage: str) -> None:
    entries = sorted(os.listdir(stage))
    with open(os.path.join(stage, MARKER), "w", encoding="utf-8") as handle:
        json.dump({"written_by": "faastlane compose", "entries": entries}, handle, indent=2)
        handle.write("\n")


def _replace(stage: str, out_dir: str) -> None:
    """Move the staged action into place; an earlier action (checked ours) goes away
    only once the new one is there."""
    if not os.path.lexists(out_dir):
        os.rename(stage, out_dir)
        return
    aside = tempfile.mkdtemp(prefix=".faastlane-old-", dir=os.path.dirname(
        os.path.abspath(out_dir)))
    os.rmdir(aside)
    os.rename(out_dir, aside)
    try:
        os.rename(stage, out_dir)
    except OSError:
        os.rename(aside, out_dir)
        raise
    shutil.rmtree(aside, ignore_errors=True)


def write_into(out_dir: str, app_root: str, functions_dir: str,
               build: Callable[[str], None]) -> str:
    """Check ``out_dir``, build the action into a staging folder, move it into place."""
    check_target(out_dir, app_root, functions_dir)
    with staged(out_dir) as stage:
        build(stage)
    return out_dir
