"""A seccomp filter that refuses the system calls which see through protection keys.

MPK guards memory against loads and stores; these calls do not go through them:

- ``pkey_alloc``, ``pkey_free``, ``pkey_mprotect`` -- re-tag a domain's pages with a key
  the caller holds, or free a live domain's key so that the next ``pkey_alloc`` (which
  sets the caller's PKRU rights for it) hands it back with the pages still tagged;
- ``process_vm_readv``/``process_vm_writev`` -- the kernel copies memory ignoring PKRU;
- ``ptrace`` -- ``PTRACE_PEEKDATA`` likewise, and it can rewrite registers, PKRU included.

The filter returns ``EPERM`` for them (the Python caller sees ``PermissionError``),
refuses the x32 ABI and foreign architectures outright (their numbers differ: a filter
checking x86-64 numbers alone can be side-stepped with ``int 0x80``), and allows
everything else.

The runtime itself needs the key calls after the filter is in place (creating, growing
and destroying domains). seccomp cannot read PKRU, but the kernel does report the
instruction pointer of the ``syscall`` (``struct seccomp_data``): the runtime makes its
key calls through ONE ``syscall`` instruction of its own (``_PyMPK_KeySyscall`` in
``cpython-mpk/Modules/mpk_sys.c``), and ``allowed_sites`` lets the key calls through
from there only. :func:`runtime_key_syscall_site` finds that instruction in the running
interpreter by the stub's bytes.

Classic BPF built by hand, standard library only (it ships inside actions), installed
with ``prctl(PR_SET_NO_NEW_PRIVS)`` and ``seccomp(SECCOMP_SET_MODE_FILTER)``. Filters are
per thread and inherited by threads created later; ``all_threads`` synchronises every
thread of the process (``SECCOMP_FILTER_FLAG_TSYNC``). A filter cannot be removed.
"""

from __future__ import annotations

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
_PR_SET_DUMPABLE = 4
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


def _assemble(code: list[tuple[int, int, str | None, str | None] | str]) -> bytes:
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


# _PyMPK_KeySyscall (mpk_sys.c): mov %rdi,%rax; mov %rsi,%rdi; mov %rdx,%rsi;
# mov %rcx,%rdx; mov %r8,%r10; syscall; ret. The kernel reports the address after
# `syscall` (the `ret`) as the instruction pointer.
KEY_SYSCALL_STUB = bytes.fromhex("4889f84889f74889d64889ca4d89c20f05c3")


def runtime_key_syscall_site(maps: str = "/proc/self/maps") -> int | None:
    """Address of the ``ret`` after the runtime's key ``syscall``: the instruction
    pointer seccomp sees for the runtime's pkey calls. None unless the stub is found
    exactly once (a missing or ambiguous site must not be guessed)."""
    found = interpreter_code_addresses(KEY_SYSCALL_STUB, maps)
    return found[0] + len(KEY_SYSCALL_STUB) - 1 if len(found) == 1 else None


def interpreter_code_addresses(needle: bytes, maps: str = "/proc/self/maps") -> list[int]:
    """Where ``needle`` lies in the executable mappings of the interpreter binary (and
    of any libpython), read from the files the mappings come from."""
    exe = os.path.realpath("/proc/self/exe")
    found: list[int] = []
    with open(maps, encoding="ascii", errors="replace") as handle:
        for line in handle:
            fields = line.split(maxsplit=5)
            if len(fields) < 6 or "x" not in fields[1]:
                continue
            path = fields[5].strip()
            if path != exe and "libpython" not in os.path.basename(path):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            offset = int(fields[2], 16)
            found += [start + at - offset
                      for at in _occurrences(path, needle, offset, end - start)]
    return found


def _occurrences(path: str, needle: bytes, offset: int, size: int) -> list[int]:
    """File offsets of ``needle`` within ``size`` bytes of ``path`` from ``offset``."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read(size)
    except OSError:
        return []
    hits: list[int] = []
    at = data.find(needle)
    while at >= 0:
        hits.append(offset + at)
        at = data.find(needle, at + 1)
    return hits


def install(program: bytes, all_threads: bool = False, dumpable: bool = True) -> None:
    """Install ``program`` on the calling thread (``all_threads``: on every thread).

    ``dumpable=False`` also marks the process non-dumpable (``PR_SET_DUMPABLE`` 0):
    another process -- a function's subprocess, say -- then needs ``CAP_SYS_PTRACE``
    to open this one's ``/proc/<pid>/mem``, which ignores keys.

    ctypes is imported here, not at module level, so that the caller can drop it
    afterwards (``hardening.activate`` does: a loaded ctypes lets any code call any
    native address). OSError naming the call if the kernel refuses (no seccomp, or
    TSYNC failed because a thread already runs another filter).
    """
    import ctypes

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"prctl(PR_SET_NO_NEW_PRIVS) failed: {os.strerror(code)}")
    if not dumpable and libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"prctl(PR_SET_DUMPABLE, 0) failed: {os.strerror(code)}")
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = Program(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    flags = _SECCOMP_FILTER_FLAG_TSYNC if all_threads else 0
    libc.syscall.restype = ctypes.c_long
    result = libc.syscall(ctypes.c_long(_SYS_SECCOMP), ctypes.c_long(_SECCOMP_SET_MODE_FILTER),
                          ctypes.c_long(flags), ctypes.byref(fprog))
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"seccomp(SET_MODE_FILTER, flags={flags}) failed: "
                            f"{os.strerror(code) if code else f'thread {result} differs'}")


CAP_SYS_PTRACE = 19
_PR_CAPBSET_READ = 23
_PR_CAPBSET_DROP = 24
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


def thread_capabilities(status: str = "/proc/thread-self/status") -> dict[str, int]:
    """The calling thread's capability sets (``CapEff``, ``CapPrm``, ``CapBnd``, ...),
    read from procfs: capabilities are per thread."""
    sets: dict[str, int] = {}
    with open(status, encoding="ascii") as handle:
        for line in handle:
            if line.startswith("Cap"):
                name, _, value = line.partition(":")
                sets[name] = int(value.strip(), 16)
    return sets


def holds_capability(capability: int = CAP_SYS_PTRACE) -> bool:
    """Whether the calling thread still has ``capability`` in its effective, permitted
    or bounding set."""
    sets = thread_capabilities()
    return any(sets.get(name, 0) >> capability & 1 for name in ("CapEff", "CapPrm", "CapBnd"))


def drop_capability(capability: int = CAP_SYS_PTRACE) -> None:
    """Drop ``capability`` from the calling thread's bounding set (when it may:
    ``CAP_SETPCAP``), and from its effective, permitted and inheritable sets (always
    allowed; this also clears it from the ambient set). Threads and processes the
    thread starts inherit the result; other threads keep theirs (capabilities are per
    thread). ``CAP_SYS_PTRACE`` is what lets a process read another's
    ``/proc/<pid>/mem`` although the target is non-dumpable.

    OSError if the capability is still held afterwards. ctypes is imported here, as in
    :func:`install`."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                           ctypes.c_ulong]
    if libc.prctl(_PR_CAPBSET_READ, capability, 0, 0, 0) == 1:
        # EPERM without CAP_SETPCAP: then exec cannot regain it either (no_new_privs).
        libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0)

    clear_capabilities(1 << capability)
    sets = thread_capabilities()
    if any(sets.get(name, 0) >> capability & 1 for name in ("CapEff", "CapPrm")):
        raise OSError(errno.EPERM, f"capability {capability} is still held")


def clear_capabilities(mask: int = -1) -> None:
    """Clear the capabilities of ``mask`` (bit N: capability N; default all) from the
    calling thread's effective, permitted and inheritable sets (always allowed)."""
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    libc = ctypes.CDLL(None, use_errno=True)
    header = Header(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (Data * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"capget failed: {os.strerror(code)}")
    for word in (0, 1):
        keep = ~(mask >> (32 * word)) & 0xFFFFFFFF
        data[word].effective &= keep
        data[word].permitted &= keep
        data[word].inheritable &= keep
    if libc.capset(ctypes.byref(header), data) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"capset failed: {os.strerror(code)}")
