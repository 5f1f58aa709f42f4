"""Where the MPK tier finds the runtime, the harness and the probes; how it runs them.

The probes (probes.py) run under the cpython-mpk runtime, which has ``_faastlane``
built in.  A missing runtime is a failure, never a skip: ``make test`` builds it first.
For work on the C module before the runtime exists, FAASTLANE_TEST_PYTHON names another
interpreter that can import ``_faastlane`` (see build_extension.py).
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from probe_protocol import ProbeResult, parse_results

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RUNTIME = REPO / "cpython-mpk" / "build" / "bin" / "python3"
HARNESS = HERE / "qemu" / "run-in-qemu.sh"
PROBES = HERE / "probes.py"
# Boot (~10 s), Python ~8x slower under TCG, and a loaded 2-core CI machine.
QEMU_TIMEOUT_S = int(os.environ.get("FAASTLANE_QEMU_TIMEOUT", "1200"))
HARNESS_SETUP_FAILED = 126


@dataclass
class ProbeRun:
    """The results of one run of the probe table, with its wall time."""

    results: dict[str, ProbeResult]
    seconds: float
    output: str

    def __getitem__(self, name: str) -> ProbeResult:
        if name not in self.results:
            pytest.fail(f"probe {name} reported nothing; runner output:\n{self.output[-4000:]}")
        return self.results[name]


def runtime_python() -> str:
    """Path of the interpreter the probes run on; fails loudly when it is missing."""
    override = os.environ.get("FAASTLANE_TEST_PYTHON")
    if override:
        return override
    if not RUNTIME.exists():
        pytest.fail(
            f"the cpython-mpk runtime is not built ({RUNTIME} is missing): run "
            "`make -C cpython-mpk` (`make test` does it first), or set "
            "FAASTLANE_TEST_PYTHON to an interpreter that can import _faastlane",
            pytrace=False,
        )
    return str(RUNTIME)


def run_probes(
    command: list[str], timeout: float, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run ``command`` in tests/mpk, returning the finished process and its wall time."""
    started = time.monotonic()
    proc = subprocess.run(
        command, cwd=HERE, capture_output=True, text=True, timeout=timeout, env=env
    )
    return proc, time.monotonic() - started


def run_probes_in_qemu(runtime: str, probes: Path) -> ProbeRun:
    """Run a probe table once inside QEMU's emulated PKU CPU, keys required.

    A harness that cannot set QEMU up is a failure, never a skip.
    """
    command = [str(HARNESS), str(HERE), runtime, str(probes), "--require-keys"]
    try:
        # Keys are what the guest is for: never the native tiers' FAASTLANE_MPK=off
        # (tests/conftest.py), which every FAASTLANE_* variable would carry in.
        env = dict(os.environ, QEMU_TIMEOUT=str(QEMU_TIMEOUT_S), FAASTLANE_MPK="on")
        proc, seconds = run_probes(command, timeout=QEMU_TIMEOUT_S + 60, env=env)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"QEMU run of {probes.name} exceeded {QEMU_TIMEOUT_S + 60} s: {exc}",
                    pytrace=False)
    output = proc.stdout + proc.stderr
    if proc.returncode == HARNESS_SETUP_FAILED:
        pytest.fail(
            "QEMU IS UNAVAILABLE: the MPK tests cannot run without it, and that is a "
            f"failure, not a skip.\n{proc.stderr[-4000:]}",
            pytrace=False,
        )
    assert proc.returncode == 0, (
        f"{probes.name} failed inside QEMU (exit {proc.returncode}):\n{output[-6000:]}"
    )
    return ProbeRun(parse_results(proc.stdout), seconds, output)


def runtime_with_packages(runtime: str, modules: tuple[str, ...] = ("numpy", "PIL")) -> str:
    """An interpreter of ``runtime`` that also imports ``modules``: the one running
    pytest when it is the runtime's test venv (``make test``), else the checkout's
    ``.venv-mpk``.  numpy and Pillow come from the project's extras (pyproject.toml); a
    runtime without them is a failure, never a skip."""
    import sys

    target = os.path.realpath(runtime)
    candidates = [sys.executable, str(REPO / ".venv-mpk" / "bin" / "python")]
    for python in candidates:
        if not os.path.exists(python) or os.path.realpath(python) != target:
            continue
        check = subprocess.run(
            [python, "-c", "import " + ", ".join(modules)], capture_output=True, timeout=120
        )
        if check.returncode == 0:
            return python
    pytest.fail(
        f"no interpreter of {runtime} can import {', '.join(modules)} (tried {candidates}): "
        "run pytest from the runtime's venv (`make test-env`, then .venv-mpk/bin/python "
        "-m pytest)",
        pytrace=False,
    )
