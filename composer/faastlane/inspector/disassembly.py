"""Capstone disassembly around a finding: what the bytes mean in the instruction stream,
and what runs when something jumps straight to them.

x86 cannot be decoded backwards. The stream is decoded forwards from the start of the
function symbol covering the finding when the file has one nearby; otherwise from a
few dozen bytes before it, relying on x86 decoding re-synchronising within a few
instructions (said so in the result, so nobody mistakes it for ground truth).
"""

from __future__ import annotations

from dataclasses import dataclass

import capstone

from faastlane.runtime.isolation.pkru_scan import CodeRange, Occurrence

from .elf_files import ElfImage

_LEAD_IN = 48  # bytes decoded before a finding when no symbol gives a start
_SYMBOL_REACH = 1 << 14  # decode from a symbol only this far back
_CONTEXT = 3  # instructions shown either side


@dataclass(frozen=True)
class Disassembly:
    """The code around one finding."""

    listing: list[str]  # "0x1234: mnemonic operands", the finding's instruction marked
    aligned: bool  # an instruction of the stream starts exactly at the finding
    container: str | None  # the instruction the finding hides in, when not aligned
    if_entered: str  # the first instructions decoded from the finding itself
    synchronised_from: str  # "symbol NAME" or "N bytes before (heuristic)"


def _engine() -> capstone.Cs:
    engine = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    engine.syntax = capstone.CS_OPT_SYNTAX_ATT
    engine.skipdata = True  # keep going over bytes that are not instructions
    return engine


def _text(instruction: capstone.CsInsn) -> str:
    return f"{instruction.mnemonic} {instruction.op_str}".strip()


def disassemble(image: ElfImage, code_range: CodeRange, occurrence: Occurrence,
                context: int = _CONTEXT) -> Disassembly:
    """Decode the stream around ``occurrence`` (offsets relative to ``code_range``)."""
    engine = _engine()
    base = code_range.file_offset
    target = code_range.vaddr + occurrence.start
    symbol = image.symbol_at(target)
    if symbol and 0 <= target - symbol[1] <= _SYMBOL_REACH \
            and symbol[1] >= code_range.vaddr:
        start = symbol[1] - code_range.vaddr
        origin = f"symbol {symbol[0]}"
    else:
        start = max(0, occurrence.start - _LEAD_IN)
        origin = f"{occurrence.start - start} bytes before (heuristic)"
    stop = min(code_range.size, occurrence.offset + 64)
    code = image.data[base + start:base + stop]
    stream = list(engine.disasm(code, code_range.vaddr + start))
    index = next((i for i, ins in enumerate(stream)
                  if ins.address <= target < ins.address + ins.size), len(stream) - 1)
    hit = stream[index] if stream else None
    aligned = hit is not None and hit.address == target
    listing = []
    for ins in stream[max(0, index - context):index + context + 1]:
        mark = "  <==" if ins is hit else ""
        listing.append(f"{ins.address:#x}: {ins.bytes.hex(' ')}  {_text(ins)}{mark}")
    entered = list(engine.disasm(image.data[base + occurrence.start:base + stop], target))[:3]
    return Disassembly(listing, aligned, None if aligned or hit is None else _text(hit),
                       "; ".join(_text(i) for i in entered), origin)
