"""Reading ELF files with pyelftools: executable ranges, symbols, needed libraries.

What may execute is what the loader maps executable: ``PT_LOAD`` segments with ``PF_X``.
Sections are only the linker's bookkeeping (they can be stripped or lie), so they are
reported as context -- which section a finding lies in -- and used as the executable
ranges only for relocatable objects, which have no segments.
"""

from __future__ import annotations

import bisect
import io
from dataclasses import dataclass, field

from elftools.common.exceptions import ELFError
from elftools.elf.constants import P_FLAGS, SH_FLAGS
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from faastlane.runtime.isolation.pkru_scan import ELF_MAGIC, CodeRange

from .errors import InspectionError


@dataclass
class ElfImage:
    """One ELF file in memory, with what the inspector needs from its headers."""

    path: str
    data: bytes
    machine: str
    kind: str  # ET_EXEC, ET_DYN, ET_REL
    ranges: list[CodeRange]
    exec_sections: list[tuple[str, int, int, int]]  # name, file offset, size, address
    needed: list[str]
    _symbols: list[tuple[int, int, str]] | None = None  # addr, size, name; read lazily
    _starts: list[int] = field(default_factory=list)

    def section_at(self, file_offset: int) -> str | None:
        """The executable section holding ``file_offset``, if the file names one."""
        for name, offset, size, _ in self.exec_sections:
            if offset <= file_offset < offset + size:
                return name
        return None

    def symbol_address(self, name: str) -> int | None:
        """The address of the code symbol ``name``, if the file defines one."""
        self.symbol_at(0)  # reads the symbols once
        return next((start for start, _, n in self._symbols or () if n == name), None)

    def symbol_at(self, vaddr: int) -> tuple[str, int, int] | None:
        """(name, start address, size) of the function symbol covering ``vaddr``."""
        if self._symbols is None:
            # Only files with findings need symbols; big binaries have tens of thousands.
            self._symbols = _read_symbols(self.data)
            self._starts = [s[0] for s in self._symbols]
        index = bisect.bisect_right(self._starts, vaddr) - 1
        while index >= 0:
            start, size, name = self._symbols[index]
            if start <= vaddr < start + max(size, 1):
                return name, start, size
            if vaddr - start > 1 << 20:
                break
            index -= 1
        return None


def is_elf(path: str) -> bool:
    """Whether ``path`` starts with the ELF magic (unreadable files are not)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == ELF_MAGIC
    except OSError:
        return False


def read_elf(path: str) -> ElfImage:
    """Parse ``path``; InspectionError if it is not a well-formed ELF file."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise InspectionError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return _parse(path, data)
    except (ELFError, ValueError, KeyError, IndexError) as exc:
        # A truncated or hostile file must not pass for "nothing found".
        raise InspectionError(f"{path}: not a well-formed ELF file: {exc}") from None


def _parse(path: str, data: bytes) -> ElfImage:
    elf = ELFFile(io.BytesIO(data))
    ranges: list[CodeRange] = []
    for index, segment in enumerate(elf.iter_segments()):
        if segment["p_type"] == "PT_LOAD" and segment["p_flags"] & P_FLAGS.PF_X \
                and segment["p_filesz"]:
            ranges.append(CodeRange(segment["p_offset"], segment["p_filesz"],
                                    segment["p_vaddr"], f"segment {index}"))
    sections: list[tuple[str, int, int, int]] = []
    needed: list[str] = []
    for section in elf.iter_sections():
        if section["sh_flags"] & SH_FLAGS.SHF_EXECINSTR and section["sh_type"] != "SHT_NOBITS" \
                and section["sh_size"]:
            sections.append((section.name, section["sh_offset"], section["sh_size"],
                             section["sh_addr"]))
        if isinstance(section, DynamicSection):  # pyelftools' kind of an SHT_DYNAMIC one
            # A DT_NEEDED tag's .needed is set with setattr: the checker cannot see it.
            needed.extend(tag.needed for tag in section.iter_tags()  # type: ignore[attr-defined]
                          if tag.entry.d_tag == "DT_NEEDED")
    if elf.num_segments() == 0:
        ranges = [CodeRange(offset, size, address, f"section {name}")
                  for name, offset, size, address in sections]
    return ElfImage(path, data, elf["e_machine"], elf["e_type"], ranges, sections, needed)


def _read_symbols(data: bytes) -> list[tuple[int, int, str]]:
    """Defined code symbols of ``.symtab`` and ``.dynsym``, sorted by address."""
    symbols: set[tuple[int, int, str]] = set()
    for section in ELFFile(io.BytesIO(data)).iter_sections():
        if isinstance(section, SymbolTableSection):
            for symbol in section.iter_symbols():
                if symbol["st_info"]["type"] in ("STT_FUNC", "STT_NOTYPE") and \
                        symbol["st_shndx"] != "SHN_UNDEF" and symbol.name:
                    symbols.add((symbol["st_value"], symbol["st_size"], symbol.name))
    return sorted(symbols)


def symbol_bytes(image: ElfImage, start: str, end: str) -> bytes:
    """The bytes between two symbols of a relocatable object's one code section."""
    elf = ELFFile(io.BytesIO(image.data))
    found: dict[str, tuple[int, int]] = {}
    for section in elf.iter_sections():
        if isinstance(section, SymbolTableSection):
            for symbol in section.iter_symbols():
                if symbol.name in (start, end) and isinstance(symbol["st_shndx"], int):
                    found[symbol.name] = (symbol["st_shndx"], symbol["st_value"])
    if start not in found or end not in found or found[start][0] != found[end][0]:
        raise InspectionError(f"{image.path}: no {start}..{end} in one section")
    code = elf.get_section(found[start][0]).data()
    return code[found[start][1]:found[end][1]]
