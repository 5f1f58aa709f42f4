"""Whether Intel MPK protection keys can isolate functions on this host.

Detect, never assume, and never execute RDPKRU/WRPKRU to find out: on a CPU without
``pku`` they raise SIGILL. Three independent facts are gathered:

- the CPU flags in ``/proc/cpuinfo``: ``pku`` (the CPU has protection keys) and
  ``ospke`` (the kernel enabled them; absent with ``nopku`` or an old kernel);
- a ``pkey_alloc(0, 0)`` system call through ctypes: a key (freed at once) or the errno,
  ``EINVAL`` where keys are unsupported, ``ENOSPC`` when all are taken, ``ENOSYS`` for a
  kernel without the call. The kernel answers without touching PKRU on such CPUs;
- the interpreter: whether it has the cpython-mpk ``_faastlane`` module, and that
  module's own verdict (``runtime/isolation/domains.py``).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from .runtime_modules import domains

# pkey_alloc's system call number where glibc has no wrapper (before 2.27).
_SYS_PKEY_ALLOC = {"x86_64": 330}
_SYS_PKEY_FREE = {"x86_64": 331}


@dataclass(frozen=True)
class PkeyProbe:
    ok: bool
    errno: int | None
    detail: str


@dataclass(frozen=True)
class MPKSupport:
    cpu_pku: bool
    os_pke: bool
    pkey_alloc: PkeyProbe
    interpreter: str  # domains.MPKStatus.implementation: keys | no-keys | missing
    interpreter_reason: str | None

    @property
    def usable(self) -> bool:
        """Protection keys isolate functions here: hardware, kernel and interpreter."""
        return self.cpu_pku and self.os_pke and self.pkey_alloc.ok and \
            self.interpreter == "keys"

    def to_json(self) -> dict[str, Any]:
        return dict(asdict(self), usable=self.usable)


def cpu_flags(cpuinfo: str) -> set[str]:
    """The flags of the first processor in ``/proc/cpuinfo`` text (x86 ``flags`` line)."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return set(value.split())
    return set()


def probe_pkey_alloc() -> PkeyProbe:
    """Ask the kernel for a protection key, and give it back."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError as exc:
        return PkeyProbe(False, None, f"no C library to call: {exc}")
    machine = platform.machine()
    allocate: Callable[[], int]
    free: Callable[[int], object]
    if hasattr(libc, "pkey_alloc"):
        allocate = lambda: libc.pkey_alloc(0, 0)  # noqa: E731
        free = libc.pkey_free
    elif machine in _SYS_PKEY_ALLOC:
        allocate = lambda: libc.syscall(_SYS_PKEY_ALLOC[machine], 0, 0)  # noqa: E731
        free = lambda key: libc.syscall(_SYS_PKEY_FREE[machine], key)  # noqa: E731
    else:
        return PkeyProbe(False, errno.ENOSYS, f"no pkey_alloc on {machine}")
    ctypes.set_errno(0)
    key = allocate()
    if key >= 0:
        free(key)
        return PkeyProbe(True, None, f"pkey_alloc gave key {key}")
    code = ctypes.get_errno()
    return PkeyProbe(False, code, f"pkey_alloc failed: {errno.errorcode.get(code, code)} "
                                  f"({os.strerror(code)})")


def detect(cpuinfo_path: str = "/proc/cpuinfo") -> MPKSupport:
    try:
        with open(cpuinfo_path, encoding="utf-8", errors="replace") as handle:
            flags = cpu_flags(handle.read())
    except OSError:
        flags = set()
    status = domains.status()
    return MPKSupport("pku" in flags, "ospke" in flags, probe_pkey_alloc(),
                      status.implementation, status.reason)
