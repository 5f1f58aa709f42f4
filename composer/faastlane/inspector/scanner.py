"""Scanning files and folders: every ELF file, every executable byte, every offset.

The matcher itself is ``faastlane.runtime.isolation.pkru_scan`` (shared with the runtime's
load-time checks); this module reads files with pyelftools, asks for the gate only
when a WRPKRU turns up, and turns occurrences into findings with disassembly.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from faastlane.runtime.isolation.pkru_scan import (
    WRPKRU,
    WRPKRU_KIND,
    CodeRange,
    Occurrence,
    scan_code,
)

from .disassembly import disassemble
from .elf_files import ElfImage, is_elf, read_elf
from .errors import GateUnavailable
from .gate import runtime_gate
from .report import FileResult, Finding, Report
from .waivers import Waiver, waiver_for

_X86 = ("EM_X86_64", "EM_386")
_SKIPPED_DIRS = {"__pycache__", ".git"}


@dataclass(frozen=True)
class Target:
    """A file to inspect and the name it is reported (and waived) under."""

    path: str
    label: str


class _LazyGate:
    """The runtime's gate, fetched the first time a WRPKRU needs judging."""

    def __init__(self, gate: bytes | None = None) -> None:
        self.gate = gate
        self.note: str | None = None  # why there is no gate, once asked
        self._asked = gate is not None

    def get(self) -> bytes | None:
        if not self._asked:
            self._asked = True
            try:
                self.gate = runtime_gate()
            except GateUnavailable as exc:
                self.note = f"{exc}: every WRPKRU is reported"
        return self.gate


def elf_targets(root: str, prefix: str = "") -> Iterator[Target]:
    """Every ELF file under ``root`` (or ``root`` itself), labelled ``prefix`` + its
    path relative to ``root``. Symlinks are not followed: their targets are scanned
    where they live, once."""
    if os.path.isfile(root):
        if is_elf(root):
            yield Target(root, prefix + os.path.basename(root))
        return
    for directory, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        for name in sorted(names):
            path = os.path.join(directory, name)
            if not os.path.islink(path) and is_elf(path):
                yield Target(path, prefix + os.path.relpath(path, root).replace(os.sep, "/"))


def inspect_targets(targets: Iterable[Target], waivers: list[Waiver] | None = None,
                    gate: bytes | None = None) -> Report:
    """Scan each target (each file once, by real path); findings covered by a waiver are
    kept in the report, marked with it."""
    lazy = _LazyGate(gate)
    results: list[FileResult] = []
    seen: set[str] = set()
    for target in targets:
        real = os.path.realpath(target.path)
        if real in seen:
            continue
        seen.add(real)
        results.append(inspect_file(target, lazy, waivers or []))
    return Report(lazy.gate, lazy.note, results, list(waivers or []))


def inspect_file(target: Target, lazy: _LazyGate, waivers: list[Waiver]) -> FileResult:
    """Scan one ELF file's executable ranges."""
    image = read_elf(target.path)
    digest = hashlib.sha256(image.data).hexdigest()
    result = FileResult(target.label, target.path, digest, image.machine,
                        sum(r.size for r in image.ranges),
                        [f"{r.origin}: offset {r.file_offset:#x} size {r.size:#x} "
                         f"vaddr {r.vaddr:#x}" for r in image.ranges])
    if image.machine not in _X86:
        result.skipped = f"machine {image.machine}: not x86 code, cannot run on a PKU CPU"
        result.code_bytes = 0
        return result
    waiver = waiver_for(waivers, target.label, digest)
    for code_range in image.ranges:
        code = image.data[code_range.file_offset:code_range.file_offset + code_range.size]
        gate = lazy.get() if WRPKRU in code else None
        for occurrence in scan_code(code, gate):
            if occurrence.sanctioned:
                result.gates.append(code_range.file_offset + occurrence.offset)
                continue
            result.findings.append(_finding(image, target.label, code_range, occurrence,
                                            waiver))
    return result


def _finding(image: ElfImage, label: str, code_range: CodeRange, occurrence: Occurrence,
             waiver: Waiver | None) -> Finding:
    vaddr = code_range.vaddr + occurrence.start
    file_offset = code_range.file_offset + occurrence.start
    code = disassemble(image, code_range, occurrence)
    symbol = image.symbol_at(vaddr)
    return Finding(
        file=label, kind=occurrence.kind, file_offset=file_offset, vaddr=vaddr,
        origin=code_range.origin, section=image.section_at(file_offset),
        symbol=f"{symbol[0]}+{vaddr - symbol[1]:#x}" if symbol else None,
        aligned=code.aligned, container=code.container, if_entered=code.if_entered,
        listing=code.listing, synchronised_from=code.synchronised_from, waiver=waiver)


def has_wrpkru(finding: Finding) -> bool:
    return finding.kind == WRPKRU_KIND
