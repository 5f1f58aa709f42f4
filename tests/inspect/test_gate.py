"""The runtime's gate is accepted; a copy with any one byte changed is not.

The gate's bytes are never written here: they come from compiling
cpython-mpk/Modules/mpk_pkru.c, where the gate is defined once.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from crafted_elf import GATE_SOURCE, RUNTIME, function, shared_object, symbols

from faastlane.inspector.gate import GATE_START, compile_gate, runtime_gate
from faastlane.inspector.scanner import Target, inspect_targets
from faastlane.runtime.isolation.pkru_scan import WRPKRU, check_gate, scan_code


@pytest.fixture(scope="module")
def gate() -> bytes:
    return compile_gate(str(GATE_SOURCE))


@pytest.mark.mpk
def test_the_compiled_gate_is_the_one_the_runtime_reports(gate: bytes) -> None:
    if not RUNTIME.exists():
        pytest.fail(f"the cpython-mpk runtime is not built ({RUNTIME}): make -C cpython-mpk",
                    pytrace=False)
    proc = subprocess.run([str(RUNTIME), "-c", "import _faastlane; "
                           "print(_faastlane.gate_code().hex())"],
                          capture_output=True, text=True, check=True)
    assert bytes.fromhex(proc.stdout.strip()) == gate
    assert runtime_gate() == gate


def test_the_gate_is_the_checked_write(gate: bytes) -> None:
    """One WRPKRU, ECX and EDX zeroed before it, and the cmp/jne after it."""
    anchor = check_gate(gate)
    assert gate.count(WRPKRU) == 1 and anchor == gate.index(WRPKRU)
    assert gate[anchor + 3:anchor + 5] == b"\x3b\x07"  # cmp (%rdi), %eax
    assert gate[anchor + 5] == 0x75 and gate[-1] == 0xC3  # jne back; ret


def test_the_gate_compiled_from_the_c_source_is_accepted(tmp_path: Path) -> None:
    path = shared_object(tmp_path, "gate", "", sources=(GATE_SOURCE,))
    report = inspect_targets([Target(str(path), "gate.so")])
    (result,) = report.files
    assert result.findings == []
    assert result.gates == [symbols(path)[GATE_START][1] + check_gate(runtime_gate())]


def test_every_one_byte_change_of_the_gate_is_rejected(gate: bytes) -> None:
    """All 255 other values of every byte: never sanctioned; the WRPKRU, where it
    survives, is a finding at the gate's own offset."""
    anchor = check_gate(gate)
    for index in range(len(gate)):
        for value in range(256):
            if value == gate[index]:
                continue
            variant = gate[:index] + bytes([value]) + gate[index + 1:]
            found = scan_code(b"\xcc" * 16 + variant + b"\xcc" * 16, gate)
            assert not any(o.sanctioned for o in found), (index, value)
            if not anchor <= index < anchor + len(WRPKRU):
                assert any(o.kind == "wrpkru" and o.offset == 16 + anchor for o in found)


def test_one_flipped_byte_in_a_shared_object_is_a_finding(tmp_path: Path, gate: bytes) -> None:
    anchor = check_gate(gate)
    body = [function("gate_copy", ".byte " + ", ".join(hex(b) for b in gate))]
    for index in range(len(gate)):
        flipped = bytearray(gate)
        flipped[index] ^= 0x01
        body.append(function(f"flipped_{index}", ".byte " + ", ".join(hex(b) for b in flipped)))
    path = shared_object(tmp_path, "flipped", "".join(body))
    syms = symbols(path)
    (result,) = inspect_targets([Target(str(path), "flipped.so")]).files
    assert result.gates == [syms["gate_copy"][1] + anchor]
    surviving = {syms[f"flipped_{i}"][1] + anchor for i in range(len(gate))
                 if not anchor <= i < anchor + len(WRPKRU)}
    assert {f.file_offset for f in result.findings} == surviving
    assert {f.kind for f in result.findings} == {"wrpkru"}
