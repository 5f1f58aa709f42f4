"""Fixtures of the MPK tier: the cpython-mpk runtime, and probe runs natively and in QEMU.

Shared code lives in probe_runs.py (a module name no other test folder uses).
"""

from __future__ import annotations

import pytest
from probe_protocol import parse_results
from probe_runs import (
    PROBES,
    ProbeRun,
    run_probes,
    run_probes_in_qemu,
    runtime_python,
)


@pytest.fixture(scope="session")
def runtime() -> str:
    """The cpython-mpk interpreter (or the FAASTLANE_TEST_PYTHON override)."""
    return runtime_python()


@pytest.fixture(scope="session")
def native_probes(runtime: str) -> ProbeRun:
    """Every probe that applies on this host, run natively (no keys here: the no-keys
    implementation)."""
    proc, seconds = run_probes([runtime, str(PROBES)], timeout=600)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"probe runner failed natively:\n{output[-4000:]}"
    return ProbeRun(parse_results(proc.stdout), seconds, output)


@pytest.fixture(scope="session")
def qemu_probes(runtime: str) -> ProbeRun:
    """Every probe, keys required, run once inside QEMU's emulated PKU CPU."""
    return run_probes_in_qemu(runtime, PROBES)
