"""The QEMU harness's contract: a command's output and exit status come back, concurrent
runs do not mix, and a machine where QEMU cannot be installed fails loudly."""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from probe_runs import HARNESS, HARNESS_SETUP_FAILED, QEMU_TIMEOUT_S

# What the harness may still find when QEMU and apt-get are taken away.
HIDDEN = {"qemu-system-x86_64", "apt-get", "apt-cache"}


def test_concurrent_runs_return_their_own_output_and_exit_status() -> None:
    def run(code: int) -> subprocess.CompletedProcess[str]:
        script = f"echo out-{code} in $(pwd); echo err-{code} >&2; exit {code}"
        env = dict(os.environ, QEMU_SMP="1", QEMU_TIMEOUT=str(QEMU_TIMEOUT_S))
        return subprocess.run(
            [str(HARNESS), "/usr", "sh", "-c", script],
            capture_output=True,
            text=True,
            timeout=QEMU_TIMEOUT_S + 60,
            env=env,
        )

    with ThreadPoolExecutor(2) as pool:
        seven, nine = pool.map(run, [7, 9])
    for proc, code in [(seven, 7), (nine, 9)]:
        assert proc.returncode == code, proc.stdout + proc.stderr
        lines = proc.stdout.splitlines()
        assert f"out-{code} in /usr" in lines and f"err-{code}" in lines
        other = 9 if code == 7 else 7
        assert f"out-{other}" not in proc.stdout


def test_cpu_with_pku_but_keys_disabled_by_the_kernel_is_detected_without_sigill(
    runtime: str,
) -> None:
    """Booted with ``nopku`` the CPU still has PKU but the OS leaves CR4.PKE clear, so
    RDPKRU/WRPKRU would be SIGILL: detection must stop at the OSPKE bit."""
    code = (
        "import _faastlane as f; d = f.Domain(); d.enter(); d.exit(); d.destroy(); "
        "print('RESULT', f.available(), hasattr(f, 'read_pkru'), f.unavailable_reason())"
    )
    # The guest's own detection (auto), not the native tiers' FAASTLANE_MPK=off.
    env = dict(os.environ, QEMU_SMP="1", QEMU_APPEND="nopku", QEMU_TIMEOUT=str(QEMU_TIMEOUT_S),
               FAASTLANE_MPK="auto")
    proc = subprocess.run(
        [str(HARNESS), "/", runtime, "-c", code],
        capture_output=True,
        text=True,
        timeout=QEMU_TIMEOUT_S + 60,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr  # 132 would be SIGILL
    result = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert result == [
        "RESULT False False the kernel did not enable protection keys (CPUID.7.0:ECX.OSPKE clear)"
    ], proc.stdout


def test_without_qemu_or_apt_the_harness_fails_loudly(tmp_path: Path) -> None:
    # A PATH with every tool of this machine except QEMU and apt.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for directory in ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        for tool in Path(directory).iterdir() if Path(directory).is_dir() else []:
            target = bin_dir / tool.name
            if tool.name not in HIDDEN and not target.exists():
                target.symlink_to(tool)
    env = dict(os.environ, PATH=str(bin_dir), FAASTLANE_CACHE=str(tmp_path / "cache"))
    proc = subprocess.run(
        [str(HARNESS), "/", "true"], capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == HARNESS_SETUP_FAILED
    assert "QEMU-HARNESS-ERROR:" in proc.stderr
    assert "apt-get is missing" in proc.stderr
