"""A seccomp filter that refuses the system calls which see through protection keys.

MPK guards memory against loads and stores; these calls do not go through them:

- ``pkey_alloc``, ``pkey_free``, ``pkey_mprotect`` -- re-tag a domain's pages with a key
  the caller holds, or free a live domain's key for reuse;
- ``process_vm_readv``/``process_vm_writev`` -- the kernel copies memory ignoring PKRU;
- ``ptrace`` -- ``PTRACE_PEEKDATA`` likewise, and it can rewrite registers, PKRU included.

The filter returns ``EPERM`` for them (the Python caller sees ``PermissionError`` and the
Orchestrator names the function), refuses the x32 ABI and foreign architectures
outright (their numbers differ: a filter checking x86-64 numbers alone can be side-
stepped with ``int 0x80``), and allows everything else. The runtime's own commits of
domain memory use ``pkey_mprotect`` too: ``allowed_sites`` lets calls whose ``syscall``
instruction lies in given address ranges through (the kernel reports the instruction
pointer in ``seccomp_data``), for the allocator to name its one call site.

Classic BPF built by hand, standard library only (it ships inside actions), installed
with ``prctl(PR_SET_NO_NEW_PRIVS)`` and ``seccomp(SECCOMP_SET_MODE_FILTER)``. Filters are
per thread and inherited by threads created later; ``all_threads`` synchronises every
thread of the process (``SECCOMP_FILTER_FLAG_TSYNC``). A filter cannot be removed.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
from collections.abc import Iterable, Sequence

# x86-64 system call numbers (arch/x86/entry/syscalls/syscall_64.tbl).
SYSCALLS = {"ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
            "pkey_mprotect": 329, "pkey_alloc": 330, "pkey_free": 331}
REFUSED = tuple(SYSCALLS)
_SYS_SECCOMP = 317
_X32_BIT = 0x40000000
AUDIT_ARCH_X86_64 = 0xC000003E
_PR_SET_NO_NEW_PRIVS = 38
_SECCOMP_SET_MODE_FILTER = 1
_SECCOMP_FILTER_FLAG_TSYNC = 1
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6]
_NR, _ARCH, _IP_LOW, _IP_HIGH = 0, 4, 8, 12
# BPF opcodes
_LD_W_ABS = 0x20
_JEQ_K, _JGE_K = 0x15, 0x35
_RET_K = 0x06


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


PKEY_CALLS = ("pkey_alloc", "pkey_free", "pkey_mprotect")


def build_filter(refused: Iterable[str] = REFUSED, error: int = errno.EPERM,
                 allowed_sites: Sequence[tuple[int, int]] = ()) -> bytes:
    """The BPF program: ``error`` for ``refused`` calls; the pkey calls among them pass
    when made from one of the ``allowed_sites`` (start, end) address ranges (each within
    one 4 GiB line). Everything else is allowed."""
    for start, end in allowed_sites:
        if end <= start or start >> 32 != (end - 1) >> 32:
            raise ValueError(f"allowed site {start:#x}-{end:#x} must lie within 4 GiB")
    names = set(refused)
    always = sorted(SYSCALLS[n] for n in names if n not in PKEY_CALLS or not allowed_sites)
    checked = sorted(SYSCALLS[n] for n in names if n in PKEY_CALLS and allowed_sites)
    # (opcode, k, jump-true label, jump-false label); labels resolve to relative jumps.
    code: list[tuple[int, int, str | None, str | None] | str] = [
        (_LD_W_ABS, _ARCH, None, None),
        (_JEQ_K, AUDIT_ARCH_X86_64, "native", "foreign"),
        "native",
        (_LD_W_ABS, _NR, None, None),
        (_JGE_K, _X32_BIT, "foreign", "numbers"),  # the x32 ABI's numbers
        "numbers",
        *((_JEQ_K, n, "deny", None) for n in always),
        *((_JEQ_K, n, "sites", None) for n in checked),
        (_RET_K, _RET_ALLOW, None, None),
        "sites",
    ]
    for index, (start, end) in enumerate(allowed_sites):
        following = f"site{index + 1}" if index + 1 < len(allowed_sites) else "deny"
        code += [(_LD_W_ABS, _IP_HIGH, None, None),
                 (_JEQ_K, start >> 32, None, following),
                 (_LD_W_ABS, _IP_LOW, None, None),
                 (_JGE_K, start & 0xFFFFFFFF, None, following),
                 (_JGE_K, end & 0xFFFFFFFF, following, None),
                 (_RET_K, _RET_ALLOW, None, None),
                 f"site{index + 1}"]
    code += ["deny", (_RET_K, _RET_ERRNO | (error & 0xFFFF), None, None),
             "foreign", (_RET_K, _RET_ERRNO | errno.ENOSYS, None, None)]
    return _assemble(code)


def _assemble(code: list) -> bytes:
    """Resolve labels (strings in the list) into BPF's forward relative jumps."""
    labels: dict[str, int] = {}
    position = 0
    for item in code:
        if isinstance(item, str):
            labels[item] = position
        else:
            position += 1
    out: list[bytes] = []
    position = 0
    for item in code:
        if isinstance(item, str):
            continue
        opcode, k, true, false = item
        jt = labels[true] - position - 1 if true else 0
        jf = labels[false] - position - 1 if false else 0
        assert 0 <= jt < 256 and 0 <= jf < 256, "BPF jumps go forwards, at most 255"
        out.append(_insn(opcode, k, jt, jf))
        position += 1
    return b"".join(out)


def install(program: bytes, all_threads: bool = False) -> None:
    """Install ``program`` on the calling thread (``all_threads``: on every thread).

    OSError naming the call if the kernel refuses (no seccomp, or TSYNC failed because a
    thread already runs another filter).
    """
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"prctl(PR_SET_NO_NEW_PRIVS) failed: {os.strerror(code)}")
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _Program(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    flags = _SECCOMP_FILTER_FLAG_TSYNC if all_threads else 0
    libc.syscall.restype = ctypes.c_long
    result = libc.syscall(ctypes.c_long(_SYS_SECCOMP), ctypes.c_long(_SECCOMP_SET_MODE_FILTER),
                          ctypes.c_long(flags), ctypes.byref(fprog))
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"seccomp(SET_MODE_FILTER, flags={flags}) failed: "
                            f"{os.strerror(code) if code else f'thread {result} differs'}")
