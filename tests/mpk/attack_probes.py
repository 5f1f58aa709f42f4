"""Attack probes: a function thread inside its own domain tries to read another
function's private data by going around protection keys.

Run under QEMU with keys: ``python attack_probes.py --require-keys [NAME...]`` prints
one FAASTLANE-PROBE line per probe (probe_protocol.py).  Each probe is a forked child
that *execs a fresh interpreter* (``--scenario NAME FD``): the hardening refuses to
start in a process where ctypes is loaded, and the runner itself uses ctypes.

The victim ("victim", domain A with a private heap) keeps a secret bytes object made
at run time; the thief ("thief", domain B) knows A's key and the object's address
(keys are 1..15, addresses come from ``id``), tries one attack, then reads the object.
Each attack runs in up to four modes:

- ``control``: no hardening, the thief entered with ``enter()`` -- the attack must
  work, or the probe proves nothing;
- ``hardened``: ``hardening.activate()`` (ctypes refused everywhere), the thief run
  sealed (``Domain.run_sealed``);
- ``libraries``: as the Orchestrator runs ``mpk`` mode: ctypes imported outside
  functions first (as scipy does), ``activate(libraries_ffi=True)``, the thief sealed
  -- ctypes is there, but every use of it by function code is refused;
- ``native``: ctypes loaded and libc entry points resolved *before*
  ``activate(refuse_ffi=False)``, as native code shipped with a function holds them:
  the audit hook sees nothing of it, so only seccomp (and MPK) stand in the way.  The
  thief is not sealed: native code can clear the seal's thread-local word as it can
  write tls_pkru.

The scenario notes what happened (``refused``, ``errno``, ``stolen``); if nothing was
stolen it reads the object directly, which must die of SEGV_PKUERR on A's key.  The
tests in test_attacks_qemu.py decide.  Standard library only in the scenario until
an attack imports ctypes itself.
"""

from __future__ import annotations

import _thread
import json
import os
import struct

# Imported before any function runs, as the Orchestrator imports what a function's files
# import (library_loader.import_dependencies): the thief's `import subprocess` finds it.
import subprocess  # noqa: E402, F401
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _faastlane

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "composer"))
from faastlane.runtime.isolation import hardening, seccomp_filter  # noqa: E402

Note = Callable[[str, Any], None]
MODES = ("control", "hardened", "native", "libraries")
SEALED_MODES = ("hardened", "libraries")  # the thief runs as the Orchestrator runs it
SYS_PKEY_MPROTECT = 329
PROT_READ_WRITE = 3
SPAN = 8192  # the pages around the secret object
READ_SIZE = 96  # object header + the secret's bytes
ALL_KEYS_OPEN = 0  # the PKRU value a thief wants: every key read/write
BYTES_DATA = 32  # offset of a bytes object's data (PyBytesObject.ob_sval) on x86-64
NATIVE: dict[str, Any] = {}  # native mode: what a function's native code would hold
LIBRARY: list[Any] = []  # libraries mode: the ctypes a library imported (and keeps)
# The born thread of domain_api_thread: made here, at import, so shared.
BORN: dict[str, Any] = {"done": _thread.allocate_lock(), "refused": None, "sealed": None}


def _tls_offset(symbol: str) -> int:
    """``symbol``'s address minus the thread pointer, for a TLS variable of the
    executable (static TLS, x86-64 variant II: the block ends at the thread pointer)."""
    data = Path("/proc/self/exe").read_bytes()
    phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 0x36)
    tls = None
    for i in range(phnum):
        p_type, _, _, p_vaddr, _, _, p_memsz, p_align = struct.unpack_from(
            "<IIQQQQQQ", data, phoff + i * phentsize)
        if p_type == 7:  # PT_TLS
            tls = (p_vaddr, p_memsz, p_align)
    assert tls is not None, "the runtime has no TLS segment"
    vaddr, memsz, align = tls
    first = -vaddr & (align - 1)
    block = -(-(memsz - first) // align) * align + first  # glibc's l_tls_offset
    for i in range(shnum):
        _, sh_type, _, _, offset, size, link, _, _, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize)
        if sh_type != 2:  # SHT_SYMTAB
            continue
        strings = struct.unpack_from("<Q", data, shoff + link * shentsize + 24)[0]
        for at in range(offset, offset + size, entsize):
            name, info, _, _, value, _ = struct.unpack_from("<IBBHQQ", data, at)
            end = data.index(b"\0", strings + name)
            if info & 0xF == 6 and data[strings + name:end] == symbol.encode():  # STT_TLS
                return value - block
    raise LookupError(f"{symbol} is not in the runtime's symbol table")


def _ctypes() -> Any:
    import ctypes  # refused (NativeCallRefused) once hardened: the attack stops here

    return ctypes


def _resolve_native() -> None:
    """Native mode, before activation: load ctypes and hold the entry points."""
    ctypes = _ctypes()
    libc = ctypes.CDLL(None, use_errno=True)
    for name in ("pkey_set", "pkey_mprotect", "syscall", "process_vm_readv", "open",
                 "pread", "close", "pthread_self", "system"):
        NATIVE[name] = _typed(ctypes, name, getattr(libc, name))
    NATIVE["ctypes"] = ctypes
    _iovec(ctypes)


IOVEC: dict[str, Any] = {}  # struct iovec, made where ctypes is loaded outside the thief


def _iovec(ctypes: Any) -> Any:
    """``struct iovec`` as a ctypes Structure: made once, by whoever loads ctypes first
    (a library, outside functions, in the modes where it is loaded): a class the thief
    made in its heap-less domain would be shared, its fields refused by the write guard
    before the attack's own refusal."""
    if "type" not in IOVEC:
        class IoVec(ctypes.Structure):
            _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
        IOVEC["type"] = IoVec
    return IOVEC["type"]


def _typed(ctypes: Any, name: str, function: Any) -> Any:
    if name == "pkey_mprotect":
        function.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int]
    if name == "pread":
        function.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_long]
    function.restype = {"syscall": ctypes.c_long, "pread": ctypes.c_ssize_t,
                        "process_vm_readv": ctypes.c_ssize_t,
                        "pthread_self": ctypes.c_void_p}.get(name, ctypes.c_int)
    return function


@dataclass
class Scene:
    """A victim's secret in domain A, a thief's domain B, and where to look."""

    mode: str
    a: _faastlane.Domain
    b: _faastlane.Domain
    loot: list[object]  # shared; holds the victim's private secret
    address: int  # of the secret bytes object, in A's slot
    out: bytearray = field(default_factory=lambda: bytearray(256))  # shared

    def ctypes(self) -> Any:
        return NATIVE["ctypes"] if self.mode == "native" else _ctypes()

    def libc(self, name: str) -> Any:
        """A libc entry point: held already (native) or looked up now, by the thief."""
        if self.mode == "native":
            return NATIVE[name]
        ctypes = _ctypes()
        return _typed(ctypes, name, getattr(ctypes.CDLL(None, use_errno=True), name))


def _run_as(domain: _faastlane.Domain, name: str, body: Callable[[], None]) -> None:
    with domain, hardening.function_scope(name):
        body()


def in_thread(body: Callable[[], None]) -> None:
    """Run ``body`` on a new thread (a function's), re-raising what it raised."""
    import threading

    failure: list[BaseException] = []

    def run() -> None:
        try:
            body()
        except BaseException as exc:  # handed to the caller below
            failure.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


def scene(note: Note, mode: str) -> Scene:
    """The victim's secret, set up as the Orchestrator and the victim would."""
    a = _faastlane.Domain(private_heap=True)
    b = _faastlane.Domain()
    if hasattr(_faastlane, "name_slot"):  # the names the write guard's refusals give
        _faastlane.name_slot(a.slot, "victim")
        _faastlane.name_slot(b.slot, "thief")
    loot: list[object] = [None]
    where = bytearray(8)  # shared: the victim reports its object's address here

    def victim() -> None:
        # Made at run time inside A: a constant would be a shared code object's.
        loot[0] = b"TOP-SECRET-" + str(4242 * 1000 + 17).encode() + b"-of-victim"
        where[:] = id(loot[0]).to_bytes(8, "little")

    in_thread(lambda: _run_as(a, "victim", victim))
    address = int.from_bytes(where, "little")
    for key, value in (("a_key", a.key), ("b_key", b.key), ("a_slot", a.slot),
                       ("b_slot", b.slot), ("a_address", address)):
        note(key, value)
    return Scene(mode, a, b, loot, address)


def steal(note: Note, s: Scene, attack: Callable[[Scene], bytes | None]) -> None:
    """The thief: inside B, as function 'thief', try ``attack``; report what it got,
    or read the object itself (which faults unless the attack changed PKRU).  In the
    sealed modes it runs as the Orchestrator runs function code: ``run_sealed``."""

    def body() -> None:
        with hardening.function_scope("thief"):
            stolen = None
            try:
                stolen = attack(s)
            except (hardening.IsolationViolation, _faastlane.SealedError) as exc:
                note("refused", str(exc))
            except OSError as exc:
                note("errno", exc.errno)
            if stolen:
                note("stolen", stolen.decode("latin-1"))
                return
            note("about_to_read", True)
            data = s.loot[0]
            assert isinstance(data, bytes)
            note("stolen", data.decode("latin-1"))
            del data  # before the exit gate: dropping it touches A's object

    def thief() -> None:
        if s.mode in SEALED_MODES:
            s.b.run_sealed(body)
        else:
            with s.b:
                body()

    in_thread(thief)


def _checked(s: Scene, result: int, call: str) -> None:
    if result == -1:
        raise OSError(s.ctypes().get_errno(), f"{call} failed")


# ---------------------------------------------------------------------------
# The attacks: each returns the bytes it read, or None when it only changed access


def via_pkey_set(s: Scene) -> bytes | None:
    """glibc's pkey_set: an unchecked WRPKRU giving this thread A's key."""
    _checked(s, s.libc("pkey_set")(s.a.key, 0), "pkey_set")
    return None


def via_pkey_mprotect(s: Scene) -> bytes | None:
    """Re-tag A's pages with the thief's own key."""
    page = s.address & ~0xFFF
    _checked(s, s.libc("pkey_mprotect")(page, SPAN, PROT_READ_WRITE, s.b.key),
             "pkey_mprotect")
    return None


def via_syscall(s: Scene) -> bytes | None:
    """The same through syscall(SYS_pkey_mprotect, ...), no libc wrapper."""
    c_long = s.ctypes().c_long
    args = (SYS_PKEY_MPROTECT, s.address & ~0xFFF, SPAN, PROT_READ_WRITE, s.b.key)
    _checked(s, s.libc("syscall")(*map(c_long, args)), "syscall(SYS_pkey_mprotect)")
    return None


def via_key_stub(s: Scene) -> bytes | None:
    """The same through the runtime's own key syscall (found by its bytes, called by
    address): the one site the seccomp filter lets pkey calls through from."""
    ctypes = s.ctypes()
    start = seccomp_filter.interpreter_code_addresses(seccomp_filter.KEY_SYSCALL_STUB)[0]
    stub = ctypes.CFUNCTYPE(ctypes.c_long, *[ctypes.c_long] * 5)(start)
    result = stub(SYS_PKEY_MPROTECT, s.address & ~0xFFF, SPAN, PROT_READ_WRITE, s.b.key)
    if result < 0:
        raise OSError(-result, "pkey_mprotect through the runtime's stub failed")
    return None


def via_proc_self_mem(s: Scene) -> bytes | None:
    """The kernel's access to /proc/self/mem ignores PKRU."""
    if s.mode == "native":
        ctypes = s.ctypes()
        fd = NATIVE["open"](b"/proc/self/mem", os.O_RDONLY)
        _checked(s, fd, "open(/proc/self/mem)")
        buffer = ctypes.create_string_buffer(READ_SIZE)
        _checked(s, NATIVE["pread"](fd, buffer, READ_SIZE, s.address), "pread")
        NATIVE["close"](fd)
        return bytes(buffer.raw)
    with open("/proc/self/mem", "rb", buffering=0) as memory:
        memory.seek(s.address)
        return memory.read(READ_SIZE)


def via_proc_mem_dir_fd(s: Scene) -> bytes | None:
    """/proc/self/mem by a name relative to a descriptor of /proc/self (``dir_fd``): the
    ``open`` audit event carries only "mem"."""
    directory = os.open("/proc/self", os.O_RDONLY | os.O_DIRECTORY)
    try:
        memory = os.open("mem", os.O_RDONLY, dir_fd=directory)
    finally:
        os.close(directory)
    try:
        return os.pread(memory, READ_SIZE, s.address)
    finally:
        os.close(memory)


CHILD_READER = ("import os, sys; fd = os.open(f'/proc/{sys.argv[3]}/mem', os.O_RDONLY); "
                "sys.stdout.buffer.write(os.pread(fd, int(sys.argv[2]), int(sys.argv[1])))")


def via_child_process(s: Scene) -> bytes | None:
    """A child process reads this one's /proc/PPID/mem: as root with CAP_SYS_PTRACE it
    may, even though the process is non-dumpable -- unless the hardening dropped the
    capability. Native code starts it with libc's system() (no audit event at all)."""
    args = [sys.executable, "-c", CHILD_READER, str(s.address), str(READ_SIZE),
            str(os.getpid())]
    if s.mode == "native":
        out = f"/tmp/faastlane-child-{os.getpid()}"
        command = " ".join(f"'{a}'" for a in args) + f" > {out} 2>/dev/null"
        NATIVE["system"](command.encode())
        try:
            with open(out, "rb") as handle:
                return handle.read() or None
        finally:
            os.unlink(out)

    return subprocess.run(args, capture_output=True, check=True).stdout


def via_process_vm_readv(s: Scene) -> bytes | None:
    """process_vm_readv on its own pid: the kernel copies ignoring PKRU."""
    ctypes = s.ctypes()
    IoVec = _iovec(ctypes)
    buffer = ctypes.create_string_buffer(READ_SIZE)
    local = IoVec(ctypes.addressof(buffer), READ_SIZE)
    remote = IoVec(s.address, READ_SIZE)
    _checked(s, s.libc("process_vm_readv")(os.getpid(), ctypes.byref(local), 1,
                                           ctypes.byref(remote), 1, 0), "process_vm_readv")
    return bytes(buffer.raw)


def via_gate_word(s: Scene) -> bytes | None:
    """Write the word the gate loads (this thread's tls_pkru, key-0 memory), then ask
    the runtime to restore this thread's PKRU from it."""
    ctypes = s.ctypes()
    word = ctypes.c_uint32.from_address(s.libc("pthread_self")() + _tls_offset("tls_pkru"))
    if word.value != s.b.pkru:  # the probe's own check that it found the word
        raise LookupError(f"tls_pkru not found: read {word.value:#x}")
    word.value = ALL_KEYS_OPEN
    _faastlane.restore_thread_pkru()
    return None


def via_gate_call(s: Scene) -> bytes | None:
    """Call the gate by address (found by its bytes) with a pointer to a forged value:
    it checks the value against the same word, so the check passes. No ctypes call
    here raises an audit event."""
    ctypes = s.ctypes()
    gate_address = seccomp_filter.interpreter_code_addresses(_faastlane.gate_code())[0]
    gate = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_uint32))(gate_address)
    gate(ctypes.byref(ctypes.c_uint32(ALL_KEYS_OPEN)))
    return None


def via_gate_call_int(s: Scene) -> bytes | None:
    """The gate called through a prototype made from an integer address, its pointer
    argument an integer (the data of a bytes object of zeros): no ctypes object
    touches memory, so stock CPython raises no audit event at all; patch 0009 makes
    the call raise ``ctypes.call_function``."""
    ctypes = s.ctypes()
    gate_address = seccomp_filter.interpreter_code_addresses(_faastlane.gate_code())[0]
    zeros = bytes(8)  # ALL_KEYS_OPEN, in the thief's own heap
    gate = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(gate_address)
    gate(id(zeros) + BYTES_DATA)
    return None


def via_domain_api(s: Scene) -> bytes | None:
    """No native code at all: leave its own domain and enter the victim's through
    the runtime's Python API, copy the secret into a shared buffer, come back."""
    mine = _faastlane.current_domain()
    assert mine is not None
    mine.exit()
    victim = next(d for d in _faastlane.live_domains() if d.key == s.a.key)
    victim.enter()
    try:
        data = s.loot[0]
        assert isinstance(data, bytes)
        s.out[:len(data)] = data
        del data  # inside A: dropping it elsewhere touches A's object
    finally:
        victim.exit()
        mine.enter()
    return bytes(s.out).rstrip(b"\0")


def _born_thief(key: int, loot: list[object], out: bytearray) -> None:
    """A thread started by the thief: not inside any domain, holding B's PKRU (the
    kernel copies it). Unsealed it enters A; born sealed, the API is refused to it.
    Module-level and fed shared objects: after its gates it holds no key but 0."""
    try:
        BORN["sealed"] = _faastlane.sealed()
        victim = next(d for d in _faastlane.live_domains() if d.key == key)
        victim.enter()
        try:
            data = loot[0]
            assert isinstance(data, bytes)
            out[:len(data)] = data
            del data  # inside A
        finally:
            victim.exit()
    except _faastlane.SealedError as exc:
        BORN["refused"] = str(exc)
    finally:
        BORN["done"].release()


def via_domain_api_thread(s: Scene) -> bytes | None:
    """The domain API from a thread the function starts: threads started while
    sealed are sealed for life (mpk_thread.c), so this is refused too."""
    BORN["done"].acquire()
    _thread.start_new_thread(_born_thief, (s.a.key, s.loot, s.out))
    BORN["done"].acquire()  # released by the born thread
    BORN["done"].release()
    if BORN["refused"] is not None:
        raise _faastlane.SealedError(f"born sealed in slot {BORN['sealed']}: "
                                     f"{BORN['refused']}")
    return bytes(s.out).rstrip(b"\0")


def via_born_thread_read(s: Scene) -> bytes | None:
    """Not an attack that can succeed: a thread the thief starts reads the victim's
    object itself. It dies of the victim's key; the fault must name the thief (the
    thread's creator, whose domain it is sealed to), not the Orchestrator."""
    import threading

    def read() -> None:
        NOTE[0]("about_to_read", True)
        data = s.loot[0]
        NOTE[0]("stolen", bytes(data).decode("latin-1"))

    thread = threading.Thread(target=read)
    thread.start()
    thread.join()
    return None


NOTE: list[Note] = []  # the scenario's note(), for threads the attacks start


ATTACKS: dict[str, Callable[[Scene], bytes | None]] = {
    "pkey_set": via_pkey_set,
    "pkey_mprotect": via_pkey_mprotect,
    "syscall_pkey_mprotect": via_syscall,
    "key_stub": via_key_stub,
    "proc_self_mem": via_proc_self_mem,
    "process_vm_readv": via_process_vm_readv,
    "gate_word": via_gate_word,
    "gate_call": via_gate_call,
    "gate_call_int": via_gate_call_int,
    "domain_api": via_domain_api,
    "domain_api_thread": via_domain_api_thread,
    "proc_mem_dir_fd": via_proc_mem_dir_fd,
    "child_process": via_child_process,
    "born_thread_read": via_born_thread_read,
}
# Pure Python, nothing native (native code opens /proc/self/mem through libc: that is
# the proc_self_mem attack's native mode).
NO_NATIVE_MODE = ("domain_api", "domain_api_thread", "proc_mem_dir_fd",
                  "born_thread_read")


def attack_scenario(note: Note, attack: str, mode: str) -> Scene:
    """Returns the scene, which the caller keeps until it exits: dropping it would
    drop the victim's object from the Orchestrator's thread (a fault on A's key)."""
    if mode == "native":
        _resolve_native()
    if mode == "libraries":
        LIBRARY.append(_ctypes())  # a library imported it, outside every function
        _iovec(LIBRARY[-1])
    if mode != "control":
        activation = hardening.activate(refuse_ffi=mode != "native",
                                        libraries_ffi=mode == "libraries")
        note("key_syscall_site", activation.key_syscall_site)
        note("ffi_loaded", "_ctypes" in sys.modules)
    kept = scene(note, mode)
    steal(note, kept, ATTACKS[attack])
    return kept


def runtime_scenario(note: Note) -> None:
    """The runtime's own key calls (pkey_alloc, pkey_mprotect on every commit,
    pkey_free) pass the filter from its one syscall site; the same call from
    anywhere else -- libc's syscall() through ctypes here -- gets EPERM."""
    _resolve_native()
    activation = hardening.activate(refuse_ffi=False)
    note("key_syscall_site", activation.key_syscall_site)
    sizes: list[int] = []
    for _ in range(3):
        domain = _faastlane.Domain(private_heap=True)
        size = bytearray(8)  # shared

        def grow(size: bytearray = size) -> None:
            size[:] = len(b"x" * (4 << 20)).to_bytes(8, "little")  # many commits

        in_thread(lambda d=domain, g=grow: _run_as(d, "grower", g))
        sizes.append(int.from_bytes(size, "little"))
        note("committed", domain.committed)
        domain.destroy()
    note("sizes", sizes)
    counters = _faastlane.counters()
    note("keys", [counters["keys_allocated"], counters["keys_freed"]])
    ctypes = NATIVE["ctypes"]
    ctypes.set_errno(0)
    result = NATIVE["syscall"](ctypes.c_long(330), ctypes.c_long(0), ctypes.c_long(3))
    note("libc_pkey_alloc", [result, ctypes.get_errno()])


def numpy_scenario(note: Note) -> None:
    """numpy's ``ndarray.ctypes`` inside a function, as the Orchestrator runs it: ctypes
    and numpy loaded outside functions, after activation; the function sealed in its
    private heap (C malloc routed there too). Its own array's ``.ctypes.data`` works;
    ctypes itself stays refused to it."""
    os.environ["FAASTLANE_MPK_MALLOC"] = "on"  # before the first private heap
    LIBRARY.append(_ctypes())
    hardening.activate(libraries_ffi=True)
    import numpy

    note("trusted", hardening.trust_numpy_ctypes())
    domain = _faastlane.Domain(private_heap=True)
    out = bytearray(64)  # shared: what the function reports

    def body() -> None:
        with hardening.function_scope("numeric"):
            array = numpy.arange(6.0).reshape(2, 3) * 7
            data = array.ctypes.data
            same = data == array.__array_interface__["data"][0]
            mine = _faastlane.slot_of(data) == domain.slot
            total = int(array.sum())
            try:
                _ctypes().string_at(data, 8)
                refused = 0
            except hardening.IsolationViolation:
                refused = 1
            out[:5] = bytes([same, mine, refused, total & 0xFF, total >> 8])
            del array

    in_thread(lambda: domain.run_sealed(body))
    note("numpy", {"data_matches": bool(out[0]), "data_in_own_heap": bool(out[1]),
                   "ctypes_refused": bool(out[2]), "sum": out[3] | out[4] << 8})


RUNTIME_PROBE = "hardened_runtime_still_creates_grows_and_destroys_domains"
NUMPY_PROBE = "numpy_ctypes_in_a_function_libraries"
PROBES = [RUNTIME_PROBE, NUMPY_PROBE,
          *(f"attack_{attack}_{mode}" for attack in ATTACKS for mode in MODES
            if mode != "native" or attack not in NO_NATIVE_MODE)]


def run_scenario(name: str, fd: int) -> None:
    """Body of the exec'd child: never returns."""
    _faastlane.install_fault_reporter(fd)

    def note(key: str, value: Any) -> None:
        os.write(fd, ("note " + json.dumps({key: value}) + "\n").encode())

    NOTE.append(note)
    code = 0
    _kept = None  # alive until os._exit
    try:
        if name == RUNTIME_PROBE:
            runtime_scenario(note)
        elif name == NUMPY_PROBE:
            numpy_scenario(note)
        else:
            attack, _, mode = name[len("attack_"):].rpartition("_")
            _kept = attack_scenario(note, attack, mode)
    except BaseException:
        note("__error__", traceback.format_exc())
        code = 3
    os._exit(code)


def run_exec_probe(name: str) -> Any:
    """Fork, exec a fresh interpreter running scenario ``name``, describe its end."""
    import time

    from probe_protocol import FAULT_PREFIX, ProbeResult, parse_fault_line
    from probes import PROBE_TIMEOUT, read_until_eof

    result = ProbeResult(name=name)
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        os.set_inheritable(write_fd, True)
        os.execv(sys.executable, [sys.executable, __file__, "--scenario", name,
                                  str(write_fd)])
    os.close(write_fd)
    data, result.timed_out = read_until_eof(read_fd, pid, time.monotonic() + PROBE_TIMEOUT)
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        result.signal = os.WTERMSIG(status)
    else:
        result.exit_code = os.WEXITSTATUS(status)
    for line in data.decode(errors="replace").splitlines():
        if line.startswith("note "):
            result.notes.update(json.loads(line[5:]))
        elif line.startswith(FAULT_PREFIX):
            result.fault = parse_fault_line(line)
    result.error = result.notes.pop("__error__", None)
    return result


def main(argv: list[str]) -> int:
    """Run the selected probes (all by default), one line each; keys required."""
    if argv[:1] == ["--scenario"]:
        run_scenario(argv[1], int(argv[2]))
    if not _faastlane.available():
        print(f"attack probes: keys required: {_faastlane.unavailable_reason()}", flush=True)
        return 2 if "--require-keys" in argv else 0
    names = [a for a in argv if not a.startswith("--")]
    for name in PROBES:
        if not names or name in names:
            print(run_exec_probe(name).to_line(), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
