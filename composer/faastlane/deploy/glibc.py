"""The newest glibc a tree of ELF files needs (what ``objdump -T`` shows as GLIBC_x.y).

A binary linked against glibc records, per symbol, the symbol version it was linked
with (``.gnu.version_r``); the loader refuses to start it on an older glibc. The custom
runtime layer must start on the Lambda base image's glibc, so every ELF file in it is
read here before it is zipped.
"""

from __future__ import annotations

import os
import re

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection

Version = tuple[int, ...]
_GLIBC = re.compile(r"^GLIBC_(\d+(?:\.\d+)+)$")
_ELF_MAGIC = b"\x7fELF"

# What the custom runtime runs on: provided.al2023 is Amazon Linux 2023 (glibc 2.34).
LAMBDA_CUSTOM_RUNTIME_GLIBC: Version = (2, 34)


def glibc_versions(path: str) -> set[Version]:
    """The GLIBC_x.y versions the ELF file at ``path`` needs (empty: none, or not ELF)."""
    with open(path, "rb") as handle:
        if handle.read(4) != _ELF_MAGIC:
            return set()
        handle.seek(0)
        try:
            elf = ELFFile(handle)
            found = set()
            for section in elf.iter_sections():
                if not isinstance(section, GNUVerNeedSection):
                    continue
                for _, auxiliaries in section.iter_versions():
                    for aux in auxiliaries:
                        match = _GLIBC.match(aux.name)
                        if match:
                            found.add(tuple(int(p) for p in match.group(1).split(".")))
            return found
        except ELFError:
            return set()


def newest_needed(folder: str) -> tuple[Version, str] | None:
    """The newest glibc version any ELF file under ``folder`` needs and that file (the
    first one found needing it), or None when none needs glibc."""
    newest: tuple[Version, str] | None = None
    for directory, _, names in os.walk(folder):
        for name in sorted(names):
            path = os.path.join(directory, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            for version in glibc_versions(path):
                if newest is None or version > newest[0]:
                    newest = (version, path)
    return newest


def dotted(version: Version) -> str:
    return ".".join(str(p) for p in version)
