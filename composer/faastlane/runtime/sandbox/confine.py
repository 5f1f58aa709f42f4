"""Confining a sandbox process before it imports its function's code.

What a sandboxed function must not reach is the Orchestrator's memory and its siblings':

- **no ptrace rights.** Every capability is dropped (effective, permitted, inheritable,
  ambient, and the bounding set, so nothing it executes regains one): without
  ``CAP_SYS_PTRACE`` even root cannot open a non-dumpable process's ``/proc/PID/mem``
  or attach to it. The Orchestrator makes itself non-dumpable before the zygote is
  forked (:func:`make_undumpable`), so its forks -- pool workers, branches -- are too.
- **non-dumpable itself**, and the runtime's seccomp filter (``ptrace``,
  ``process_vm_readv``/``writev`` and the key calls refused): one filter more than the
  Orchestrator, which is also how listeners recognise a sandbox (``wire.peer_allowed``).
- **a memory limit**: ``RLIMIT_AS`` at what the process had mapped when forked plus
  the function's memory (MB): the function's allocations past it fail
  (``MemoryError``), which the sandbox reports as Lambda's ``Runtime.OutOfMemory``.
- **nothing inherited but what it serves**: every other descriptor is closed, and the
  process dies with the zygote (``PR_SET_PDEATHSIG``).

Namespaces are not used: creating them needs privileges a Lambda function does not
have, and a sandbox needs the network (functions call AWS endpoints).
"""

from __future__ import annotations

import os
import resource
import signal
from collections.abc import Iterable

from ..isolation import seccomp_filter

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


def _libc():  # noqa: ANN202 - ctypes is loaded only where it is used
    import ctypes

    return ctypes, ctypes.CDLL(None, use_errno=True)


def make_undumpable() -> None:
    """Mark this process non-dumpable: a process without ``CAP_SYS_PTRACE`` (a
    sandbox) then cannot open its ``/proc/PID/mem``, ``fd`` or ``environ``, even with
    the same uid. Inherited by forks."""
    _, libc = _libc()
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def die_with_parent() -> None:
    _, libc = _libc()
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def close_fds_except(keep: Iterable[int]) -> None:
    kept = set(keep) | {0, 1, 2}
    for entry in os.listdir("/proc/self/fd"):
        fd = int(entry)
        if fd not in kept:
            try:
                os.close(fd)
            except OSError:
                pass  # the listdir's own descriptor


def drop_capabilities() -> None:
    """Drop every capability, for good (see the module's docstring)."""
    ctypes, libc = _libc()
    try:
        with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as handle:
            last = int(handle.read())
    except (OSError, ValueError):
        last = 40
    for cap in range(last + 1):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # EPERM without CAP_SETPCAP: none to drop
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header = Header(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (Data * 2)()
    if libc.capset(ctypes.byref(header), data) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"capset: {os.strerror(code)}")


def limit_memory(memory_mb: int | None) -> None:
    """Let the function map ``memory_mb`` MB more than the process holds now."""
    if not memory_mb:
        return
    mapped = 0
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                mapped = int(line.split()[1]) * 1024
    limit = mapped + memory_mb * 1024 * 1024
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def confine(memory_mb: int | None, keep_fds: Iterable[int]) -> None:
    """Everything above, in the order the kernel needs (capabilities before the filter
    sets no-new-privileges, the filter last)."""
    die_with_parent()
    close_fds_except(keep_fds)
    drop_capabilities()
    limit_memory(memory_mb)
    seccomp_filter.install(seccomp_filter.build_filter(), dumpable=False)
