"""Finding the instructions that can change PKRU, at every byte offset of machine code.

MPK isolates only if no code but the runtime's gate can write PKRU. Two user-mode
instructions can:

- ``WRPKRU``: ``0F 01 EF``;
- ``XRSTOR``/``XRSTOR64``: ``0F AE /5`` with a memory operand (ModRM ``reg`` = 5,
  ``mod`` != 3), which loads PKRU from an XSAVE area whenever XCR0 enables the PKRU
  component (Linux does wherever PKU exists) and EDX:EAX selects bit 9.

x86 code can be entered at any byte, so an occurrence *inside* another instruction (an
immediate, a displacement) is as reachable as an aligned one: the scan looks at every
offset, not at a disassembly. Prefixes do not hide anything -- a jump can land after
them -- so ``0F AE`` is matched on its own and a REX.W byte before it only names the
instruction ``xrstor64`` and widens the reported span.

A ``WRPKRU`` is sanctioned only as part of a complete copy of the runtime's gate (the
checked ``wrpkru; cmp; jne`` sequence of ``cpython-mpk/Modules/mpk_pkru.c``, whose bytes
``_faastlane.gate_code()`` returns). No ``XRSTOR`` is ever sanctioned: ERIM found no
benign pattern for it either.

Standard library only: this module ships inside actions, where ``hardening.py`` inspects
native code loaded after start-up; the composer's inspector (``faastlane.inspector``)
uses the same matcher over what pyelftools reads.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

WRPKRU = b"\x0f\x01\xef"
WRPKRU_KIND = "wrpkru"
XRSTOR_KIND = "xrstor"
XRSTOR64_KIND = "xrstor64"

# 0F AE, then a ModRM byte with reg = 5 and mod in {0, 1, 2}: 0x28-0x2F, 0x68-0x6F,
# 0xA8-0xAF. (mod = 3 is LFENCE or INCSSP, which touch no XSAVE state.) The lookahead
# makes overlapping matches count.
_XRSTOR = re.compile(rb"(?=\x0f\xae[\x28-\x2f\x68-\x6f\xa8-\xaf])")
_WRPKRU = re.compile(rb"(?=\x0f\x01\xef)")
_REX_W = range(0x48, 0x50)  # REX prefixes with the W bit set

ELF_MAGIC = b"\x7fELF"
_PT_LOAD = 1
_PF_X = 1
_SHF_EXECINSTR = 4


class NotAnELF(ValueError):
    """The bytes are not an ELF file this reader understands."""


@dataclass(frozen=True)
class Occurrence:
    """One PKRU-writing instruction found in a buffer of machine code."""

    kind: str  # WRPKRU_KIND, XRSTOR_KIND or XRSTOR64_KIND
    offset: int  # of the 0F byte, relative to the buffer scanned
    start: int  # of the instruction's first byte (a REX.W prefix for xrstor64)
    length: int  # bytes from ``start`` to the end of the opcode + ModRM
    sanctioned: bool = False  # a WRPKRU inside a complete copy of the gate


@dataclass(frozen=True)
class CodeRange:
    """Bytes of a file that may execute: where they are in the file and in memory."""

    file_offset: int
    size: int
    vaddr: int
    origin: str  # "segment N" (PT_LOAD with PF_X) or "section NAME" (SHF_EXECINSTR)


def check_gate(gate: bytes) -> int:
    """Validate a gate sequence; return the offset of its one ``WRPKRU``.

    A gate that holds no ``WRPKRU``, several, or any ``XRSTOR`` would sanction more than
    the one checked write, so it is refused.
    """
    wrpkrus = [m.start() for m in _WRPKRU.finditer(gate)]
    if len(wrpkrus) != 1 or _XRSTOR.search(gate):
        raise ValueError(f"not a gate sequence: {gate.hex()} must hold exactly one "
                         f"WRPKRU (0f01ef) and no XRSTOR")
    return wrpkrus[0]


def scan_code(code: bytes, gate: bytes | None) -> list[Occurrence]:
    """Every WRPKRU and XRSTOR in ``code``, at any byte offset, in offset order.

    A WRPKRU is ``sanctioned`` when the bytes around it are exactly ``gate``, with the
    WRPKRU at the gate's own position. ``gate=None`` sanctions nothing.
    """
    anchor = check_gate(gate) if gate is not None else -1
    found: list[Occurrence] = []
    for match in _WRPKRU.finditer(code):
        offset = match.start()
        begin = offset - anchor
        sanctioned = (gate is not None and begin >= 0
                      and code[begin:begin + len(gate)] == gate)
        found.append(Occurrence(WRPKRU_KIND, offset, offset, len(WRPKRU), sanctioned))
    for match in _XRSTOR.finditer(code):
        offset = match.start()
        if offset > 0 and code[offset - 1] in _REX_W:
            found.append(Occurrence(XRSTOR64_KIND, offset, offset - 1, 4))
        else:
            found.append(Occurrence(XRSTOR_KIND, offset, offset, 3))
    return sorted(found, key=lambda o: o.offset)


def code_ranges(data: bytes) -> list[CodeRange]:
    """The executable bytes of an ELF image, read from its headers.

    Loadable files (executables, shared objects) map what their ``PT_LOAD`` segments
    with ``PF_X`` say, whatever the section table claims, so those are the ranges.
    Relocatable objects have no segments: their ``SHF_EXECINSTR`` sections are used.
    """
    if data[:4] != ELF_MAGIC or len(data) < 0x40:
        raise NotAnELF("no ELF header")
    elf_class, byte_order = data[4], data[5]
    if elf_class not in (1, 2) or byte_order not in (1, 2):
        raise NotAnELF(f"unknown ELF class {elf_class} / data encoding {byte_order}")
    end = "<" if byte_order == 1 else ">"
    wide = elf_class == 2
    header = struct.unpack_from(end + ("HHIQQQIHHHHHH" if wide else "HHIIIIIHHHHHH"),
                                data, 16)
    _, _, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, shstrndx = header
    ranges: list[CodeRange] = []
    for index in range(phnum):
        base = phoff + index * phentsize
        if wide:
            p_type, p_flags, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(
                end + "IIQQQQ", data, base)
        else:
            p_type, p_offset, p_vaddr, _, p_filesz, _, p_flags = struct.unpack_from(
                end + "IIIIIII", data, base)
        if p_type == _PT_LOAD and p_flags & _PF_X and p_filesz:
            ranges.append(CodeRange(p_offset, p_filesz, p_vaddr, f"segment {index}"))
    if phnum:
        return ranges
    names_offset = _section(data, end, wide, shoff + shstrndx * shentsize)[3] \
        if shnum and shstrndx < shnum else None
    for index in range(shnum):
        name, sh_type, flags, offset, size, addr = _section(
            data, end, wide, shoff + index * shentsize)
        if flags & _SHF_EXECINSTR and sh_type != 8 and size:  # 8: SHT_NOBITS
            label = _c_string(data, names_offset + name) if names_offset is not None \
                else str(index)
            ranges.append(CodeRange(offset, size, addr, f"section {label}"))
    return ranges


def _section(data: bytes, end: str, wide: bool,
             base: int) -> tuple[int, int, int, int, int, int]:
    """(name, type, flags, offset, size, addr) of the section header at ``base``."""
    if wide:
        name, sh_type, flags, addr, offset, size = struct.unpack_from(
            end + "IIQQQQ", data, base)
    else:
        name, sh_type, flags, addr, offset, size = struct.unpack_from(
            end + "IIIIII", data, base)
    return name, sh_type, flags, offset, size, addr


def _c_string(data: bytes, offset: int) -> str:
    stop = data.find(b"\0", offset)
    return data[offset:stop if stop >= 0 else len(data)].decode("ascii", "replace")


def scan_elf(data: bytes, gate: bytes | None) -> list[tuple[CodeRange, Occurrence]]:
    """Every occurrence in an ELF image's executable ranges, offsets relative to the
    range (add ``file_offset`` for the file, ``vaddr`` for memory)."""
    found: list[tuple[CodeRange, Occurrence]] = []
    for code_range in code_ranges(data):
        code = data[code_range.file_offset:code_range.file_offset + code_range.size]
        found.extend((code_range, o) for o in scan_code(code, gate))
    return found
