"""A function that opens a file shipped beside it by a relative path: on Lambda the
working directory is the function's task root, so ``open("model.json")`` finds it; in a
composed action all functions share one process and its one working directory, the
action folder, so it does not. Found by parsing (never importing) the function's files,
and reported as a warning, not a problem: the path may be meant for something else, and
the action is still composed.

Only what is certain to differ is reported: a call ``open("NAME")`` (also ``io.open``,
``codecs.open``, ``pathlib.Path("NAME")``) whose literal relative path names a file or
folder that exists beside the module, and not from the app's folder.
"""

from __future__ import annotations

import ast
import os

from faastlane.runtime.engine.functions import FunctionSpec
from faastlane.validation.problem import Problem

_OPENERS = {("open",), ("io", "open"), ("codecs", "open"), ("Path",), ("pathlib", "Path"),
            ("os", "listdir"), ("os", "scandir")}
_MAX_FILES = 200  # per function: a folder function may ship a vendored package


def _called(node: ast.Call) -> tuple[str, ...] | None:
    if isinstance(node.func, ast.Name):
        return (node.func.id,)
    if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
        return (node.func.value.id, node.func.attr)
    return None


def _sources(root: str, spec: FunctionSpec) -> list[str]:
    """The function's own Python files, relative to the app."""
    if spec.own_folder is None:
        return [spec.module_file]
    found: list[str] = []
    for folder, dirs, files in os.walk(os.path.join(root, spec.own_folder)):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        found += [os.path.relpath(os.path.join(folder, f), root)
                  for f in sorted(files) if f.endswith(".py")]
        if len(found) >= _MAX_FILES:
            break
    return found[:_MAX_FILES]


def relative_opens(root: str, functions: dict[str, FunctionSpec]) -> list[Problem]:
    """A warning for each relative open of a file beside a function's module."""
    warnings: list[Problem] = []
    for spec in functions.values():
        for shown in _sources(root, spec):
            path = os.path.join(root, shown)
            try:
                with open(path, "rb") as handle:
                    tree = ast.parse(handle.read(), path)
            except (OSError, SyntaxError, ValueError):
                continue  # reported elsewhere, if the function is used
            beside = os.path.dirname(path)
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call) or _called(node) not in _OPENERS \
                        or not node.args:
                    continue
                first = node.args[0]
                if not isinstance(first, ast.Constant) or not isinstance(first.value, str):
                    continue
                name = first.value
                if not name or os.path.isabs(name) or name.startswith("~") \
                        or not os.path.exists(os.path.join(beside, name)) \
                        or os.path.exists(os.path.join(root, name)):
                    continue
                here = "os.path.dirname(os.path.abspath(__file__))"
                warnings.append(Problem(
                    "", f"{'.'.join(_called(node) or ())}({name!r}) is relative to the "
                        f"working directory: on Lambda the function's folder, but in a "
                        f"composed action the action folder, shared by all functions, "
                        f"where it is not found; use os.path.join({here}, {name!r})",
                    shown.replace(os.sep, "/"), node.lineno))
    return warnings
