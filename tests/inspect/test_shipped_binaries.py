"""The shipped runtime and real dependencies (numpy, Pillow, the system libraries the
runtime loads) are scanned and reported accurately.

"Accurately" is checked against tools that share no code with the inspector: every
WRPKRU/XRSTOR that binutils' ``objdump`` decodes in its linear sweep is a finding at the
same address, every finding's bytes really are the instruction, and the executable
ranges pyelftools reads are those the runtime's standard-library reader reads.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from crafted_elf import RUNTIME

from faastlane.inspector.elf_files import read_elf
from faastlane.inspector.gate import GATE_START, runtime_gate
from faastlane.inspector.report import Report
from faastlane.inspector.scanner import Target, elf_targets, inspect_targets
from faastlane.inspector.targets import python_targets
from faastlane.runtime.isolation.pkru_scan import WRPKRU, check_gate, code_ranges

_OBJDUMP_HIT = re.compile(r"^\s*([0-9a-f]+):\s+(?:[0-9a-f]{2} )+\s*(wrpkru|xrstor64|xrstor)\b",
                          re.M)


def runtime() -> str:
    if not RUNTIME.exists():
        pytest.fail(f"the cpython-mpk runtime is not built ({RUNTIME}): make -C cpython-mpk",
                    pytrace=False)
    return os.path.realpath(RUNTIME)


def package_files(name: str) -> list[Target]:
    """Every ELF file of an installed package and its bundled ``NAME.libs``."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        pytest.fail(f"{name} is not installed in the test environment (pip install -e "
                    f"'.[test]' installs it)", pytrace=False)
    root = Path(list(spec.submodule_search_locations)[0])
    targets = list(elf_targets(str(root), name + "/"))
    for libs in root.parent.glob(f"{'pillow' if name == 'PIL' else name}.libs"):
        targets.extend(elf_targets(str(libs), libs.name + "/"))
    assert targets, f"no extension modules found under {root}"
    return targets


def objdump_hits(path: str) -> set[tuple[str, int]]:
    tool = shutil.which("objdump")
    if tool is None:
        pytest.fail("objdump (binutils) is needed to cross-check the inspector",
                    pytrace=False)
    out = subprocess.run([tool, "-d", "-w", path], capture_output=True, text=True,
                         check=True).stdout
    return {(kind, int(address, 16)) for address, kind in _OBJDUMP_HIT.findall(out)}


def assert_accurate(report: Report, targets: list[Target]) -> None:
    """objdump's hits are findings; each finding's bytes are what it says."""
    by_label = {t.label: t.path for t in targets}
    for result in report.files:
        found = {(f.kind, f.vaddr) for f in result.findings}
        assert objdump_hits(by_label[result.file]) <= found, result.file
        data = Path(by_label[result.file]).read_bytes()
        for finding in result.findings:
            at = data[finding.file_offset:finding.file_offset + 4]
            if finding.kind == "wrpkru":
                assert at[:3] == WRPKRU
            else:
                opcode = at[1:] if finding.kind == "xrstor64" else at
                assert opcode[:2] == b"\x0f\xae" and (opcode[2] >> 3) & 7 == 5 \
                    and opcode[2] >> 6 != 3, finding
        image = read_elf(by_label[result.file])
        assert [(r.file_offset, r.size, r.vaddr) for r in image.ranges] == \
            [(r.file_offset, r.size, r.vaddr) for r in code_ranges(image.data)]


def describe(report: Report) -> str:
    return "\n".join(f.one_line() for f in report.findings) + "\n" + report.summary()


@pytest.mark.mpk
def test_the_runtime_holds_exactly_one_wrpkru_its_gate() -> None:
    binary = runtime()
    report = inspect_targets([Target(binary, "python3")])
    (result,) = report.files
    assert result.findings == [], describe(report)
    image = read_elf(binary)
    start = image.symbol_address(GATE_START)
    assert start is not None, f"{binary} has no {GATE_START} symbol"
    segment = next(r for r in image.ranges if r.vaddr <= start < r.vaddr + r.size)
    expected = start - segment.vaddr + segment.file_offset + check_gate(runtime_gate())
    assert result.gates == [expected]


@pytest.mark.mpk
def test_the_whole_runtime_prefix_passes_without_system_libraries() -> None:
    targets = python_targets(runtime(), system_libraries=False)
    assert any("lib-dynload" in t.path for t in targets)
    report = inspect_targets(targets)
    print(describe(report))
    assert report.unwaived == [], describe(report)
    assert sum(len(r.gates) for r in report.files) == 1


def test_numpy_is_reported_accurately() -> None:
    targets = package_files("numpy")
    report = inspect_targets(targets)
    print(describe(report))
    assert_accurate(report, targets)


def test_pillow_is_reported_accurately() -> None:
    targets = package_files("PIL")
    report = inspect_targets(targets)
    print(describe(report))
    assert_accurate(report, targets)


@pytest.mark.mpk
def test_the_system_libraries_the_runtime_loads_are_reported_accurately() -> None:
    """libc and the dynamic loader are mapped executable in every process: whatever they
    hold (glibc's pkey_set has a bare WRPKRU, ld.so's lazy-binding trampolines XRSTOR)
    is reported, and matches objdump."""
    everything = python_targets(runtime(), system_libraries=True)
    own = {t.path for t in python_targets(runtime(), system_libraries=False)}
    system = [t for t in everything if t.path not in own]
    assert any(os.path.basename(t.path).startswith("libc.so") for t in system)
    report = inspect_targets(system)
    print(describe(report))
    assert_accurate(report, system)
    for finding in report.findings:
        if finding.symbol and finding.symbol.startswith("pkey_set+"):
            assert finding.kind == "wrpkru" and finding.aligned
