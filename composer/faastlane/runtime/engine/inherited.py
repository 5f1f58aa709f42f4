"""Set-up of this process that an interpreter started fresh from it must repeat.

The sandboxes' zygote is exec'd clean (``sandbox.zygote``): it holds nothing of the
Orchestrator, and so none of its process-wide set-up either -- where stack traces point
(``functions.show_sources_from``), whether output is labelled with the function that
wrote it (``platforms.labelled_output``). Each such set-up, when made, is remembered
here by module and function name, and the zygote makes it again.
"""

from __future__ import annotations

import importlib
from typing import Any

_STEPS: list[tuple[str, str, list[Any]]] = []


def remember(module: str, function: str, *args: Any) -> None:
    """``module.function(*args)`` was called; a fresh interpreter calls it too
    (``args`` must be JSON values: they cross to it as JSON)."""
    _STEPS.append((module, function, list(args)))


def steps() -> list[tuple[str, str, list[Any]]]:
    return list(_STEPS)


def repeat(steps: list[tuple[str, str, list[Any]]]) -> None:
    """Make the set-up of the process that started this one (``steps()`` there)."""
    for module, function, args in steps:
        getattr(importlib.import_module(module), function)(*args)
