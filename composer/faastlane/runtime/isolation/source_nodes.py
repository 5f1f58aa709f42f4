"""The syntax nodes of a function's source files, for what the runtime reads from them
before running them (which modules they import, which AWS services they name)."""

from __future__ import annotations

import ast
from collections.abc import Iterator


def source_nodes(files: list[str]) -> Iterator[ast.AST]:
    """Every node of every file that parses; files that do not are skipped (importing
    them inside the function's domain reports the error)."""
    for path in files:
        try:
            with open(path, encoding="utf-8") as handle:
                tree = ast.parse(handle.read(), path)
        except (OSError, SyntaxError, ValueError):
            continue
        yield from ast.walk(tree)
