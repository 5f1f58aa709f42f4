"""Values nested thousands of levels deep, for the tests of issue 18 ("any input the JSON
parser accepts runs through"), and how deep this interpreter's ``json`` reads.

CPython 3.13's parser reads about 10,000 levels (a C recursion limit); 3.11's about
1,000 (the Python one). A test of a depth this Python cannot even parse skips, naming
the reason: CI runs 3.13, where none skips.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest


def nested(depth: int, leaf: Any = "leaf") -> Any:
    """``leaf`` inside ``depth`` containers, objects ``{"a": ...}`` and one-element arrays
    alternating (the outermost an array when ``depth`` is even)."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"a": value}
    return value


@cache
def json_reads(depth: int) -> bool:
    """Whether this interpreter's json parses (and writes) a value ``depth`` levels deep,
    with a few levels to spare for what a workflow adds (a Parallel's array, say)."""
    try:
        json.loads(json.dumps(nested(depth + 10)))
    except RecursionError:
        return False
    return True


def needs_json_depth(depth: int) -> None:
    if not json_reads(depth):
        pytest.skip(f"this Python's json reads fewer than {depth} levels (3.13 reads ~10,000)")


def chain_equal(left: Any, right: Any, depth: int) -> bool:
    """``left == right`` for two :func:`nested` chains, level by level: ``==`` itself is
    limited by the C stack on 3.11."""
    for _ in range(depth):
        if type(left) is not type(right) or len(left) != 1 or len(right) != 1:
            return False
        step = "a" if isinstance(left, dict) else 0
        if isinstance(left, dict) and (list(left) != ["a"] or list(right) != ["a"]):
            return False
        left, right = left[step], right[step]
    return bool(left == right)
