"""Function symbols of a loaded ELF shared object, at their addresses in this process.

Standard library only (this ships inside composed actions): reads the section headers
and the symbol tables (``.symtab``, else ``.dynsym``) of a 64-bit little-endian ELF
file, and finds where the file is mapped from ``/proc/self/maps``.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import NamedTuple

_ELF_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_SECTION = struct.Struct("<IIQQQQIIQQ")
_SYMBOL = struct.Struct("<IBBHQQ")
_SHT_SYMTAB, _SHT_DYNSYM = 2, 11
_STT_FUNC = 2


class CodeRange(NamedTuple):
    name: str
    start: int
    end: int


def function_symbols(path: str) -> dict[str, tuple[int, int]]:
    """Name -> (file-relative address, size) of every sized function symbol; empty if
    the file is not a 64-bit little-endian ELF or has no symbol table."""
    with open(path, "rb") as handle:
        data = handle.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return {}
    header = _ELF_HEADER.unpack_from(data)
    shoff, shentsize, shnum = header[6], header[11], header[12]
    sections = [_SECTION.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
    tables = {kind: s for s in sections if (kind := s[1]) in (_SHT_SYMTAB, _SHT_DYNSYM)}
    table = tables.get(_SHT_SYMTAB) or tables.get(_SHT_DYNSYM)
    if table is None:
        return {}
    strings = sections[table[6]]
    found = {}
    for offset in range(table[4], table[4] + table[5], _SYMBOL.size):
        name_at, info, _, shndx, value, size = _SYMBOL.unpack_from(data, offset)
        if info & 0xF == _STT_FUNC and size and shndx:
            start = strings[4] + name_at
            name = data[start:data.index(b"\0", start)].decode("ascii", "replace")
            found[name] = (value, size)
    return found


def load_base(path: str) -> int | None:
    """Where ``path`` is mapped in this process (its file offset 0), or None."""
    real = os.path.realpath(path)
    for line in _maps():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].strip() == real and int(fields[2], 16) == 0:
            return int(fields[0].split("-")[0], 16)
    return None


def code_ranges(path: str, prefixes: tuple[str, ...]) -> list[CodeRange]:
    """The functions of the loaded ``path`` whose names start with one of ``prefixes``,
    at their addresses in this process; empty when it is not loaded or unsymbolled."""
    base = load_base(path)
    if base is None:
        return []
    return [CodeRange(name, base + value, base + value + size)
            for name, (value, size) in sorted(function_symbols(path).items())
            if name.startswith(prefixes)]


def _maps() -> Iterator[str]:
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as handle:
        yield from handle
