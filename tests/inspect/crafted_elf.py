"""Crafted ELF objects for the inspector's tests, compiled at test time with gcc.

Nothing binary is committed: each test writes assembly, and ``shared_object`` assembles
and links it into a shared object whose symbols say where every crafted byte is.
"""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

REPO = Path(__file__).resolve().parents[2]
GATE_SOURCE = REPO / "cpython-mpk" / "Modules" / "mpk_pkru.c"
RUNTIME = REPO / "cpython-mpk" / "build" / "bin" / "python3"


def compiler() -> str:
    """gcc, which these tests need: missing is a failure, never a skip."""
    found = shutil.which("gcc") or shutil.which("cc")
    if found is None:
        pytest.fail("no C compiler (gcc): the inspector's crafted objects are compiled "
                    "at test time; apt-get install gcc", pytrace=False)
    return found


def shared_object(directory: Path, name: str, assembly: str,
                  sources: tuple[Path, ...] = ()) -> Path:
    """Assemble ``assembly`` (GNU as, AT&T) plus C ``sources`` into ``name``.so."""
    asm = directory / f"{name}.s"
    asm.write_text(textwrap.dedent(assembly) + "\n")
    out = directory / f"{name}.so"
    proc = subprocess.run([compiler(), "-shared", "-fPIC", "-nostdlib", "-O2",
                           "-I", str(GATE_SOURCE.parent), str(asm),
                           *(str(s) for s in sources), "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


def function(name: str, body: str) -> str:
    """A global function in .text, padded with int3 so neighbours never share bytes."""
    return (f"    .text\n    .p2align 4, 0xcc\n    .globl {name}\n    .type {name}, @function\n"
            f"{name}:\n{textwrap.indent(textwrap.dedent(body), '    ')}\n"
            f"    .size {name}, .-{name}\n    .fill 16, 1, 0xcc\n")


def symbols(path: Path) -> dict[str, tuple[int, int]]:
    """name -> (virtual address, file offset) of every defined symbol."""
    with open(path, "rb") as handle:
        elf = ELFFile(handle)
        found: dict[str, tuple[int, int]] = {}
        for section in elf.iter_sections():
            if isinstance(section, SymbolTableSection):
                for symbol in section.iter_symbols():
                    index = symbol["st_shndx"]
                    if symbol.name and isinstance(index, int):
                        home = elf.get_section(index)
                        offset = symbol["st_value"] - home["sh_addr"] + home["sh_offset"]
                        found[symbol.name] = (symbol["st_value"], offset)
        return found
