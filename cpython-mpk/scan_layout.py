"""Run by build.sh with the freshly linked in-tree ``python``: does the runtime's code
hold any PKRU-writing bytes besides its gate?

    python scan_layout.py TREE

Scans the ``python`` binary and every extension module under ``TREE/build`` at every
byte offset (``faastlane/runtime/isolation/pkru_scan.py``, the matcher the inspector and
the hardening use) and exits 1, listing what it found, unless the only WRPKRU is the
gate's and there is no XRSTOR. A compiler's layout can put those bytes inside another
instruction (the displacement of a rip-relative ``leaq`` once held ``0F AE 28``):
build.sh then pads the code and links again (``Modules/mpk_layout.c``).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import _faastlane

# The checkout's matcher, or where a chrooted build (oldroot.sh) binds it.
SCANNER = Path(os.environ.get("FAASTLANE_PKRU_SCAN") or
               Path(__file__).resolve().parent.parent / "composer" / "faastlane" / "runtime"
               / "isolation" / "pkru_scan.py")


def main(tree: Path) -> int:
    spec = importlib.util.spec_from_file_location("pkru_scan", SCANNER)
    assert spec is not None and spec.loader is not None, SCANNER
    scan = importlib.util.module_from_spec(spec)
    sys.modules["pkru_scan"] = scan  # dataclasses looks its module up
    spec.loader.exec_module(scan)
    gate = _faastlane.gate_code()
    files = [tree / "python", *sorted((tree / "build").glob("lib.*/*.so"))]
    stray, sanctioned = [], 0
    for path in files:
        for code_range, found in scan.scan_elf(path.read_bytes(), gate):
            if found.sanctioned:
                sanctioned += 1
            else:
                stray.append(f"{path.name}: {found.kind} at vaddr "
                             f"{code_range.vaddr + found.offset:#x}")
    if sanctioned != 1:
        stray.append(f"{sanctioned} copies of the gate (one expected)")
    for line in stray:
        print(f"scan_layout: {line}")
    print(f"scan_layout: {len(files)} files, {'clean' if not stray else 'NOT clean'}")
    return 1 if stray else 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
