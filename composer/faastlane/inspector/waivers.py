"""Waivers: a file the user accepts with its findings, and why.

An app lists them in ``faastlane.json``; ``compose`` records the ones it applied in the
action's ``inspection.json``, so the action carries its own justification::

    "inspector_waivers": [
      {"file": "functions/legacy/libvendor.so",
       "reason": "vendor codec; its XRSTOR is in a signal trampoline, reviewed 2025-06",
       "sha256": "9f2c..."}
    ]

``file`` is the path as the inspector reports it (relative to the action, or to a
vendored tree); shell wildcards (``*``, ``?``, ``[...]``) are allowed, ``*`` crossing
``/``. ``reason`` is required: a waiver nobody can explain is a hole. ``sha256`` is
optional and pins the waiver to the exact bytes reviewed -- a rebuilt library is then
inspected afresh instead of inheriting the old verdict.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .errors import InvalidWaiver

SETTING = "inspector_waivers"
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Waiver:
    """One accepted file (pattern), its reason and optionally the bytes reviewed."""

    file: str
    reason: str
    sha256: str | None = None

    def covers(self, label: str, digest: str) -> bool:
        """Whether this waiver applies to the file ``label`` with content ``digest``."""
        return fnmatch.fnmatchcase(label, self.file) and self.sha256 in (None, digest)

    def to_json(self) -> dict[str, str]:
        entry = {"file": self.file, "reason": self.reason}
        if self.sha256:
            entry["sha256"] = self.sha256
        return entry


def parse_waivers(raw: Iterable[Any] | None, source: str) -> list[Waiver]:
    """Waivers from their JSON form; InvalidWaiver names ``source`` and the pointer."""
    if raw is None:
        return []
    if isinstance(raw, (str, dict)) or not isinstance(raw, Iterable):
        raise InvalidWaiver(f"{source}: /{SETTING} must be a list of "
                            f"{{\"file\", \"reason\"}} objects")
    waivers: list[Waiver] = []
    for index, entry in enumerate(raw):
        where = f"{source}: /{SETTING}/{index}"
        if not isinstance(entry, dict):
            raise InvalidWaiver(f"{where} must be an object with \"file\" and \"reason\"")
        unknown = set(entry) - {"file", "reason", "sha256"}
        if unknown:
            raise InvalidWaiver(f"{where}: unknown key(s) {', '.join(sorted(unknown))} "
                                f"(known: file, reason, sha256)")
        file, reason, digest = entry.get("file"), entry.get("reason"), entry.get("sha256")
        if not isinstance(file, str) or not file.strip():
            raise InvalidWaiver(f"{where}/file must name a file (a path or a pattern)")
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidWaiver(f"{where}/reason must say why {file} is accepted")
        if digest is not None and (not isinstance(digest, str)
                                   or not _SHA256.fullmatch(digest.lower())):
            raise InvalidWaiver(f"{where}/sha256 must be 64 hex digits")
        waivers.append(Waiver(file.strip(), reason.strip(),
                              digest.lower() if isinstance(digest, str) else None))
    return waivers


def waiver_for(waivers: Iterable[Waiver], label: str, digest: str) -> Waiver | None:
    """The first waiver covering a file, or None."""
    return next((w for w in waivers if w.covers(label, digest)), None)
