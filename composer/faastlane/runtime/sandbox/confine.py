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
- **writes only under /tmp**, as on Lambda (whose task root is read-only): a Landlock
  ruleset (Linux 5.13+, unprivileged) refuses creating, writing, truncating, renaming
  or removing files anywhere else -- another function's code in the action folder, the
  runtime's -- so a function cannot plant code that a sibling sandbox imports when it is
  (re)started. An action folder under /tmp (composed there by hand) leaves /tmp out
  (``faastlane run`` composes into /var/tmp). From Landlock ABI 6 on, the sandbox also
  cannot signal processes outside it. Where the kernel has no Landlock, this layer is missing and
  :func:`confine` says so (``landlock`` in its answer is False).
- **a memory limit**: ``RLIMIT_AS`` at what the process had mapped when forked plus
  the function's memory (MB): the function's allocations past it fail
  (``MemoryError``), which the sandbox reports as Lambda's ``Runtime.OutOfMemory``.
- **nothing inherited but what it serves**: every other descriptor is closed, and the
  process dies with the zygote (``PR_SET_PDEATHSIG``).

Where a mount namespace can be made, the sandbox also gets its own /tmp and its own
view of the action folder first (``view.py``); no network namespace: a sandbox needs
the network (functions call AWS endpoints).
"""

from __future__ import annotations

import os
import resource
import signal
import struct
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..isolation import seccomp_filter

if TYPE_CHECKING:
    from ctypes import CDLL
    from types import ModuleType

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4


def load_libc() -> tuple[ModuleType, CDLL]:  # ctypes is loaded only where it is used
    import ctypes

    return ctypes, ctypes.CDLL(None, use_errno=True)


def make_undumpable() -> None:
    """Mark this process non-dumpable: a process without ``CAP_SYS_PTRACE`` (a
    sandbox) then cannot open its ``/proc/PID/mem``, ``fd`` or ``environ``, even with
    the same uid. Inherited by forks."""
    _, libc = load_libc()
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def die_with_parent() -> None:
    _, libc = load_libc()
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
    _, libc = load_libc()
    try:
        with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as handle:
            last = int(handle.read())
    except (OSError, ValueError):
        last = 40
    for cap in range(last + 1):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # EPERM without CAP_SETPCAP: none to drop
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    seccomp_filter.clear_capabilities()


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


_LANDLOCK_CREATE_RULESET, _LANDLOCK_ADD_RULE, _LANDLOCK_RESTRICT_SELF = 444, 445, 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_FS_WRITE_FILE, _FS_REMOVE_DIR, _FS_REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
_FS_MAKE = sum(1 << bit for bit in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
_FS_REFER, _FS_TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3
_SCOPE_SIGNAL = 1 << 1  # ABI 6
WRITABLE = ("/tmp", "/dev/shm")
WRITABLE_FILES = ("/dev/null",)


def restrict_writes(protected: str | None, writable: Iterable[str] = WRITABLE) -> bool:
    """Refuse every file-system write outside ``writable`` (Landlock), and inside
    ``protected`` (the action folder: a writable folder holding it is left out; None
    when the sandbox's view of it is read-only already); False where the kernel has no
    Landlock. Needs no-new-privileges set (the seccomp filter sets it)."""
    if protected is not None:
        protected = os.path.realpath(protected) + os.sep
        writable = [path for path in writable
                    if not protected.startswith(os.path.realpath(path) + os.sep)]
    ctypes, libc = load_libc()
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(ctypes.c_long(_LANDLOCK_CREATE_RULESET), None, ctypes.c_size_t(0),
                       ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    if abi < 1:
        return False
    handled = _FS_WRITE_FILE | _FS_REMOVE_DIR | _FS_REMOVE_FILE | _FS_MAKE
    handled |= (_FS_REFER if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0)
    attr = struct.pack("=QQQ", handled, 0, _SCOPE_SIGNAL if abi >= 6 else 0)
    size = len(attr) if abi >= 6 else 8
    ruleset = libc.syscall(ctypes.c_long(_LANDLOCK_CREATE_RULESET), ctypes.c_char_p(attr),
                           ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"landlock_create_ruleset: {os.strerror(code)}")
    try:
        file_rights = _FS_WRITE_FILE | (_FS_TRUNCATE if abi >= 3 else 0)
        rules = [(path, handled) for path in writable] + [
            (path, file_rights) for path in WRITABLE_FILES]
        for path, rights in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # not on this system: nothing to allow there
            try:
                rule = struct.pack("=Qi", rights, fd)
                if libc.syscall(ctypes.c_long(_LANDLOCK_ADD_RULE), ctypes.c_long(ruleset),
                                ctypes.c_long(_LANDLOCK_RULE_PATH_BENEATH),
                                ctypes.c_char_p(rule), ctypes.c_uint32(0)) != 0:
                    code = ctypes.get_errno()
                    raise OSError(code, f"landlock_add_rule({path}): {os.strerror(code)}")
            finally:
                os.close(fd)
        if libc.syscall(ctypes.c_long(_LANDLOCK_RESTRICT_SELF), ctypes.c_long(ruleset),
                        ctypes.c_uint32(0)) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"landlock_restrict_self: {os.strerror(code)}")
    finally:
        os.close(ruleset)
    return True


def confine(memory_mb: int | None, keep_fds: Iterable[int], action_root: str | None
            ) -> dict[str, bool]:
    """Everything above, in the order the kernel needs (capabilities before the filter
    sets no-new-privileges, which Landlock then needs); which optional layers hold.
    ``action_root``: the folder writes must not reach; None when the sandbox's own view
    of it is mounted read-only (``view.py``)."""
    die_with_parent()
    close_fds_except(keep_fds)
    drop_capabilities()
    limit_memory(memory_mb)
    os.umask(0o077)  # what it writes under /tmp is its own
    seccomp_filter.install(seccomp_filter.build_filter(), dumpable=False)
    return {"landlock": restrict_writes(action_root)}
