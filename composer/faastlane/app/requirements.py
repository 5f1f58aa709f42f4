"""An app's requirements files: what ``package`` vendors and what ``inspect APP`` says
it did not scan."""

from __future__ import annotations

import os
from collections.abc import Iterable

from .folder import FUNCTIONS_DIR

REQUIREMENTS = "requirements.txt"


def requirement_files(app_root: str, code_dirs: Iterable[str] = ()) -> list[str]:
    """The app's requirements files, the app-wide one first, then per function by name;
    for a template, those of its functions' code folders (``code_dirs``: App.code)."""
    found = []
    top = os.path.join(app_root, REQUIREMENTS)
    if os.path.isfile(top):
        found.append(top)
    functions = os.path.join(app_root, FUNCTIONS_DIR)
    folders = list(code_dirs) or ([os.path.join(functions, name)
                                   for name in sorted(os.listdir(functions))]
                                  if os.path.isdir(functions) else [])
    for folder in folders:
        candidate = os.path.join(folder, REQUIREMENTS)
        if os.path.isfile(candidate) and candidate not in found:
            found.append(candidate)
    return found
