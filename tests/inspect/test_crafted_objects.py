"""Crafted shared objects: every WRPKRU/XRSTOR is found at its exact offset, aligned or
hidden inside another instruction, and nothing else is."""

from __future__ import annotations

import subprocess
from pathlib import Path

from crafted_elf import compiler, function, shared_object, symbols

from faastlane.inspector.scanner import Target, inspect_targets
from faastlane.runtime.isolation.pkru_scan import scan_elf

CRAFTED = "".join([
    function("aligned_wrpkru", "xorl %ecx, %ecx\nxorl %edx, %edx\nwrpkru\nret"),
    # b8 90 0f 01 ef: the WRPKRU is the immediate's upper three bytes.
    function("wrpkru_in_immediate", "movl $0xef010f90, %eax\nret"),
    function("aligned_xrstor", "xrstor (%rdi)\nret"),
    function("aligned_xrstor64", "xrstor64 0x40(%rsp)\nret"),
    # 48 8d 05 0f ae 2f 00: an XRSTOR (%rdi) in a RIP-relative displacement.
    function("xrstor_in_displacement", "leaq 0x2fae0f(%rip), %rax\nret"),
    # b8 48 0f ae 2f: REX.W + XRSTOR, i.e. XRSTOR64, inside an immediate.
    function("xrstor64_in_immediate", "movl $0x2fae0f48, %eax\nret"),
    # Same opcode bytes, other instructions: LFENCE (mod 3), XSAVE (/4), FXRSTOR (/1),
    # RDPKRU (0f 01 ee) -- none can write PKRU.
    function("benign", "lfence\nxsave (%rdi)\nfxrstor (%rdi)\nsfence\n"
                       "movl $0xee010f00, %eax\nret"),
    # Not executable: read-only data may hold any bytes.
    "    .section .rodata\n    .globl data_bytes\ndata_bytes:\n"
    "    .byte 0x0f, 0x01, 0xef, 0x0f, 0xae, 0x2f\n",
    # Executable, but not .text: the loader maps it PF_X all the same.
    '    .section .faastlane_extra,"ax",@progbits\n    .globl extra_section_wrpkru\n'
    "extra_section_wrpkru:\n    wrpkru\n    ret\n",
])

# symbol -> (kind, bytes from the symbol to the instruction's start)
EXPECTED = {
    "aligned_wrpkru": ("wrpkru", 4),
    "wrpkru_in_immediate": ("wrpkru", 2),
    "aligned_xrstor": ("xrstor", 0),
    "aligned_xrstor64": ("xrstor64", 0),
    "xrstor_in_displacement": ("xrstor", 3),
    "xrstor64_in_immediate": ("xrstor64", 1),
    "extra_section_wrpkru": ("wrpkru", 0),
}


def crafted(tmp_path: Path) -> tuple[Path, dict[str, tuple[int, int]]]:
    path = shared_object(tmp_path, "crafted", CRAFTED)
    return path, symbols(path)


def test_every_occurrence_is_found_at_its_offset_and_nothing_else(tmp_path: Path) -> None:
    path, syms = crafted(tmp_path)
    report = inspect_targets([Target(str(path), "crafted.so")])
    found = {(f.kind, f.file_offset, f.vaddr) for f in report.findings}
    expected = {(kind, syms[name][1] + delta, syms[name][0] + delta)
                for name, (kind, delta) in EXPECTED.items()}
    assert found == expected
    assert report.unwaived == report.findings


def test_findings_say_whether_they_hide_inside_another_instruction(tmp_path: Path) -> None:
    path, syms = crafted(tmp_path)
    report = inspect_targets([Target(str(path), "crafted.so")])
    by_symbol = {f.symbol.split("+")[0]: f for f in report.findings if f.symbol}
    hidden = by_symbol["wrpkru_in_immediate"]
    assert not hidden.aligned and hidden.container == "movl $0xef010f90, %eax"
    assert hidden.if_entered.startswith("wrpkru")
    assert hidden.symbol == "wrpkru_in_immediate+0x2"
    assert "wrpkru" in hidden.one_line() and f"offset {hidden.file_offset:#x}" in \
        hidden.one_line()
    displaced = by_symbol["xrstor_in_displacement"]
    assert not displaced.aligned and displaced.container.startswith("leaq 0x2fae0f(%rip)")
    assert displaced.if_entered.startswith("xrstor (%rdi)")
    assert by_symbol["xrstor64_in_immediate"].if_entered.startswith("xrstor64 (%rdi)")
    for name in ("aligned_wrpkru", "aligned_xrstor", "aligned_xrstor64"):
        assert by_symbol[name].aligned and by_symbol[name].container is None
    listing = "\n".join(by_symbol["aligned_wrpkru"].listing)
    assert "xorl %edx, %edx" in listing and "wrpkru  <==" in listing
    assert by_symbol["extra_section_wrpkru"].section == ".faastlane_extra"


def test_the_runtime_reader_agrees_with_pyelftools(tmp_path: Path) -> None:
    """The standard-library reader that ships in actions finds the same occurrences."""
    path, _ = crafted(tmp_path)
    report = inspect_targets([Target(str(path), "crafted.so")])
    shipped = {(o.kind, r.file_offset + o.start) for r, o in scan_elf(path.read_bytes(), None)}
    assert shipped == {(f.kind, f.file_offset) for f in report.findings}


def test_a_relocatable_object_is_scanned_by_its_code_sections(tmp_path: Path) -> None:
    source = tmp_path / "object.s"
    source.write_text(function("f", "nop\nwrpkru\nret"))
    obj = tmp_path / "object.o"
    subprocess.run([compiler(), "-c", str(source), "-o", str(obj)], check=True)
    report = inspect_targets([Target(str(obj), "object.o")])
    (finding,) = report.findings
    assert finding.origin == "section .text" and finding.kind == "wrpkru"
