"""Fixtures of the MPK tier: the cpython-mpk runtime, and probe runs natively and in QEMU.

Shared code lives in probe_runs.py (a module name no other test folder uses).
"""

from __future__ import annotations

import os
import subprocess

import pytest
from probe_protocol import parse_results
from probe_runs import (
    HARNESS,
    HARNESS_SETUP_FAILED,
    HERE,
    PROBES,
    QEMU_TIMEOUT_S,
    ProbeRun,
    run_probes,
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
    command = [str(HARNESS), str(HERE), runtime, str(PROBES), "--require-keys"]
    try:
        env = dict(os.environ, QEMU_TIMEOUT=str(QEMU_TIMEOUT_S))
        proc, seconds = run_probes(command, timeout=QEMU_TIMEOUT_S + 60, env=env)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"QEMU probe run exceeded {QEMU_TIMEOUT_S + 60} s: {exc}", pytrace=False)
    output = proc.stdout + proc.stderr
    if proc.returncode == HARNESS_SETUP_FAILED:
        pytest.fail(
            "QEMU IS UNAVAILABLE: the MPK tests cannot run without it, and that is a "
            f"failure, not a skip.\n{proc.stderr[-4000:]}",
            pytrace=False,
        )
    assert proc.returncode == 0, (
        f"probe runner failed inside QEMU (exit {proc.returncode}):\n{output[-6000:]}"
    )
    return ProbeRun(parse_results(proc.stdout), seconds, output)
