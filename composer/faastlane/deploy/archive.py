"""Deterministic zip files: the same inputs give the same bytes (stable hashes, and no
needless re-uploads), and executable bits survive (Lambda's ``bootstrap`` needs them)."""

from __future__ import annotations

import os
import stat
import zipfile
from collections.abc import Callable
from dataclasses import dataclass

_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip can record
_SKIP_DIRS = {"__pycache__"}


@dataclass(frozen=True)
class Archive:
    """A written zip: where it is, and its sizes for the platforms' limits."""

    path: str
    size: int
    unzipped_size: int


def _files(folder: str, pyc_tag: str | None) -> list[tuple[str, str]]:
    """(absolute path, archive path) of every file under folder, sorted; compiled files
    only those for the target (``__pycache__/*.{pyc_tag}.pyc``: ``bytecode``)."""
    found = []
    for directory, subdirs, names in os.walk(folder):
        subdirs[:] = sorted(d for d in subdirs if pyc_tag or d not in _SKIP_DIRS)
        for name in names:
            if name.endswith(".pyc") and not (
                    pyc_tag and os.path.basename(directory) == "__pycache__"
                    and name.endswith(f".{pyc_tag}.pyc")):
                continue
            path = os.path.join(directory, name)
            found.append((path, os.path.relpath(path, folder).replace(os.sep, "/")))
    return sorted(found, key=lambda pair: pair[1])


def write_zip(path: str, trees: list[tuple[str, str]],
              check: Callable[[int], None] | None = None,
              pyc_tag: str | None = None) -> Archive:
    """Zip each (folder, prefix in the archive) into path. ``check(size)`` may refuse the
    zip (a platform's limit): it is then not written, and what was at path stays.
    ``pyc_tag`` (``cpython-313``): the target's compiled files go in too."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    unzipped = 0
    with zipfile.ZipFile(path + ".tmp", "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for folder, prefix in trees:
            for source, name in _files(folder, pyc_tag):
                info = zipfile.ZipInfo(f"{prefix}{name}", _EPOCH)
                info.compress_type = zipfile.ZIP_DEFLATED
                if os.path.islink(source):
                    # Stored as a link (as Info-ZIP does), not a second copy of its target.
                    info.external_attr = (stat.S_IFLNK | 0o777) << 16
                    data = os.readlink(source).encode()
                else:
                    mode = os.stat(source).st_mode
                    executable = 0o755 if mode & stat.S_IXUSR else 0o644
                    info.external_attr = (stat.S_IFREG | executable) << 16
                    with open(source, "rb") as handle:
                        data = handle.read()
                archive.writestr(info, data)
                unzipped += len(data)
    if check is not None:
        try:
            check(os.path.getsize(path + ".tmp"))
        except BaseException:
            os.remove(path + ".tmp")
            raise
    os.replace(path + ".tmp", path)
    return Archive(path, os.path.getsize(path), unzipped)
