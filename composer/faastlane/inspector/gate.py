"""The runtime's gate: the one sequence allowed to hold a WRPKRU.

It is defined once, in ``cpython-mpk/Modules/mpk_pkru.c`` (file-scope assembly between
the symbols ``_PyMPK_GateWrite`` and ``_PyMPK_GateWriteEnd``); nothing here spells its
bytes. They come, in this order, from:

1. ``_faastlane.gate_code()`` when this interpreter is the cpython-mpk runtime;
2. compiling ``mpk_pkru.c`` with the C compiler, as the runtime build does, and reading
   the bytes between the two symbols from the object file;
3. asking the built runtime (``$FAASTLANE_PYTHON_PREFIX/bin/python3``, in a checkout
   ``cpython-mpk/build/bin/python3``) for ``gate_code()``.

The C file (and the header it includes) is package data, ``gate_source/``, so an
installed faastlane compiles the same file a checkout has: it is a copy of
``cpython-mpk/Modules/``, and tests/integration/test_installed_cli.py fails when the two
differ.

The scanned binaries are never asked: a file could define a symbol of that name around
any bytes it likes.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile

from faastlane.checkout import runtime_python
from faastlane.runtime.isolation.pkru_scan import check_gate

from .elf_files import read_elf, symbol_bytes
from .errors import GateUnavailable

# Package data: copies of cpython-mpk/Modules/{mpk_pkru.c,faastlane_mpk.h}.
SOURCE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gate_source")
GATE_SOURCE = os.path.join(SOURCE_DIR, "mpk_pkru.c")
SHIPPED_SOURCES = ("mpk_pkru.c", "faastlane_mpk.h")  # what SOURCE_DIR holds
GATE_START, GATE_END = "_PyMPK_GateWrite", "_PyMPK_GateWriteEnd"


def compile_gate(source: str = GATE_SOURCE, cflags: tuple[str, ...] = ("-O2",)) -> bytes:
    """Compile the gate's C file and return the bytes of the gate it defines."""
    compiler = os.environ.get("CC", "cc")
    if shutil.which(compiler) is None:
        raise GateUnavailable(f"no C compiler ({compiler}) to build the gate from {source}")
    with tempfile.TemporaryDirectory(prefix="faastlane-gate-") as scratch:
        obj = os.path.join(scratch, "gate.o")
        proc = subprocess.run([compiler, *cflags, "-c", "-I", os.path.dirname(source),
                               source, "-o", obj], capture_output=True, text=True)
        if proc.returncode != 0:
            raise GateUnavailable(f"compiling {source} failed: "
                                  f"{proc.stderr.strip().splitlines()[-1:]}")
        return symbol_bytes(read_elf(obj), GATE_START, GATE_END)


def _from_module() -> bytes | None:
    try:
        import _faastlane
    except ImportError:
        return None
    code: bytes = _faastlane.gate_code()
    return code or None


def _from_runtime(python: str | None) -> bytes | None:
    if python is None or not os.access(python, os.X_OK):
        return None
    proc = subprocess.run([python, "-c", "import _faastlane; "
                           "print(_faastlane.gate_code().hex())"],
                          capture_output=True, text=True, timeout=60)
    return bytes.fromhex(proc.stdout.strip()) if proc.returncode == 0 else None


@functools.lru_cache(maxsize=1)
def runtime_gate() -> bytes:
    """The gate's bytes, from the first source that has them; GateUnavailable if none.

    Whichever source answers, the sequence must hold exactly one WRPKRU and no XRSTOR.
    """
    tried: list[str] = []
    gate = _from_module()
    if gate is None:
        tried.append("_faastlane is not built into this interpreter")
        if os.path.exists(GATE_SOURCE):
            try:
                gate = compile_gate()
            except GateUnavailable as exc:
                tried.append(str(exc))
        else:
            tried.append(f"no gate source at {GATE_SOURCE}")
    if gate is None:
        python = runtime_python()
        gate = _from_runtime(python)
        if gate is None:
            tried.append(f"no cpython-mpk runtime at {python}" if python else
                         "no cpython-mpk runtime named ($FAASTLANE_PYTHON_PREFIX)")
    if gate is None:
        raise GateUnavailable("cannot obtain the runtime's gate sequence: " + "; ".join(tried))
    try:
        check_gate(gate)
    except ValueError as exc:
        raise GateUnavailable(str(exc)) from None
    return gate
