"""The composer's cache: where it lives and how its entries are keyed.

One folder, ``$FAASTLANE_CACHE`` (default ``~/.cache/faastlane``), shared with the build
scripts; each entry is named by a hash of everything that goes into it, so a changed
input is a new entry and an unchanged one a hit. Used for vendored requirements, image
build contexts and the profiles. (``cpython-mpk/build.sh`` and ``docker/build.sh`` key
their builds the same way, in shell.)
"""

from __future__ import annotations

import hashlib
import os

KEY_LENGTH = 16  # hex digits: short enough for tags and folder names, never colliding


def cache_root() -> str:
    return os.environ.get("FAASTLANE_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "faastlane")


def key(*parts: str) -> str:
    """The cache key of an entry made from ``parts`` (in order)."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:KEY_LENGTH]


def tree_digest(folder: str, contents: bool) -> str:
    """A folder's files as one digest: their paths and bytes (``contents``: for small
    trees, the action's own code), or their paths, sizes and modes (large package trees,
    where a new install changes the listing)."""
    digest = hashlib.sha256()
    for directory, dirs, names in os.walk(folder):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, folder)
            if not contents:
                info = os.lstat(path)
                digest.update(f"{relative}\0{info.st_size}\0{info.st_mode:o}\n".encode())
                continue
            digest.update(relative.encode() + b"\0")
            if not os.path.islink(path):
                with open(path, "rb") as handle:
                    digest.update(hashlib.sha256(handle.read()).digest())
    return digest.hexdigest()
