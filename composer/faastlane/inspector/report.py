"""The inspector's findings and how they are shown: one line each for the CLI, the
full listing for ``faastlane inspect``, JSON for ``inspection.json``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from faastlane.runtime.isolation.pkru_scan import WRPKRU_KIND

from .waivers import Waiver

# What the user can do, per kind; shown once per report, after the findings.
ADVICE = {
    WRPKRU_KIND: (
        "WRPKRU outside the runtime's gate lets the code holding it set any protection "
        "key's rights. Rebuild the library without it (an unaligned occurrence is an "
        "accident of encoding: a different immediate, displacement or instruction "
        "order removes it, as ERIM's rewriter does), drop the dependency, or run the "
        "functions that load it with --isolation process."),
    "xrstor": (
        "XRSTOR/XRSTOR64 loads PKRU from memory when the requested-feature mask in "
        "EDX:EAX has bit 9 set, and no instruction sequence around it can be proven to "
        "prevent that (a jump can land on the XRSTOR itself): ERIM sanctions none. The "
        "choices: rebuild without it (e.g. a library's own context-switch code), run "
        "the functions that load it with --isolation process, or waive the file in "
        "faastlane.json \"inspector_waivers\" with a reason, accepting that code able "
        "to jump there with a chosen EAX and XSAVE area can change PKRU."),
}


@dataclass
class Finding:
    """One PKRU-writing instruction outside the gate, in one file."""

    file: str  # as reported and as waivers name it
    kind: str  # wrpkru, xrstor, xrstor64
    file_offset: int
    vaddr: int
    origin: str  # "segment 3" or "section .text"
    section: str | None
    symbol: str | None  # "name+0x12"
    aligned: bool
    container: str | None
    if_entered: str
    listing: list[str]
    synchronised_from: str
    waiver: Waiver | None = None

    def one_line(self) -> str:
        """file, offset, address, where, and the code: what the CLI prints."""
        where = ", ".join(p for p in (self.section, self.symbol) if p)
        placement = "aligned" if self.aligned else f"inside `{self.container}`"
        return (f"{self.file}: offset {self.file_offset:#x} (vaddr {self.vaddr:#x}"
                f"{', ' + where if where else ''}): {self.kind} {placement}; "
                f"entered there: `{self.if_entered}`")

    def to_json(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k != "waiver"}
        data["waived"] = self.waiver.to_json() if self.waiver else None
        return data


@dataclass
class FileResult:
    """What was read of one ELF file and what it holds."""

    file: str
    path: str
    sha256: str
    machine: str
    code_bytes: int  # executable bytes scanned
    ranges: list[str]  # "segment 3: offset 0x1000 size 0x2000 vaddr 0x1000"
    gates: list[int] = field(default_factory=list)  # file offsets of sanctioned gates
    findings: list[Finding] = field(default_factory=list)
    skipped: str | None = None  # why a file was read but not scanned (another CPU)

    def to_json(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k not in ("findings", "path")}
        data["findings"] = [f.to_json() for f in self.findings]
        return data


@dataclass
class Report:
    """Everything one inspection read and found."""

    gate: bytes | None
    gate_note: str | None  # why no gate was available, when none was
    files: list[FileResult]
    waivers: list[Waiver]

    @property
    def findings(self) -> list[Finding]:
        return [f for result in self.files for f in result.findings]

    @property
    def unwaived(self) -> list[Finding]:
        return [f for f in self.findings if f.waiver is None]

    @property
    def unused_waivers(self) -> list[Waiver]:
        used = {id(f.waiver) for f in self.findings if f.waiver is not None}
        return [w for w in self.waivers if id(w) not in used]

    def summary(self) -> str:
        scanned = [r for r in self.files if r.skipped is None]
        gates = sum(len(r.gates) for r in self.files)
        waived = len(self.findings) - len(self.unwaived)
        return (f"{len(scanned)} ELF file(s), {sum(r.code_bytes for r in scanned):,} "
                f"executable bytes scanned at every offset; {gates} runtime gate(s) "
                f"accepted; {len(self.unwaived)} finding(s)"
                f"{f', {waived} waived' if waived else ''}")

    def text(self) -> str:
        """The full human-readable report."""
        lines: list[str] = []
        for finding in self.findings:
            status = f"WAIVED ({finding.waiver.reason})" if finding.waiver else "FINDING"
            lines.append(f"{status}: {finding.one_line()}")
            lines.append(f"    decoded from {finding.synchronised_from}:")
            lines.extend(f"    {row}" for row in finding.listing)
        for result in self.files:
            if result.skipped:
                lines.append(f"skipped {result.file}: {result.skipped}")
        for waiver in self.unused_waivers:
            lines.append(f"unused waiver: {waiver.file} ({waiver.reason})")
        if self.gate_note:
            lines.append(f"note: {self.gate_note}")
        kinds = {"xrstor" if f.kind.startswith("xrstor") else f.kind
                 for f in self.unwaived}
        lines.extend(f"what to do ({kind}): {ADVICE[kind]}" for kind in sorted(kinds))
        lines.append(self.summary())
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "gate": self.gate.hex() if self.gate else None,
            "gate_note": self.gate_note,
            "summary": self.summary(),
            "files": [r.to_json() for r in self.files],
            "inspector_waivers": [w.to_json() for w in self.waivers],
        }
