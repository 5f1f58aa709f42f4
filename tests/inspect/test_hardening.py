"""Run-time hardening, natively: the audit hook and the seccomp filter each refuse what
they promise, in a fresh child process per case (hooks and filters are permanent), and a
control shows the same action succeeding without them."""

from __future__ import annotations

import errno
import hashlib
import json
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from crafted_elf import compiler, function, shared_object

PRELUDE = """
import ctypes, os, sys
from faastlane.runtime.isolation import hardening
from faastlane.runtime.isolation.hardening import IsolationViolation, Policy, function_scope
SECRET = b"private-data-of-function-A"
def attempt(label, action):
    try:
        result = action()
    except IsolationViolation as exc:
        print(label, "REFUSED", exc)
    except OSError as exc:
        print(label, "OSERROR", exc.errno)
    else:
        print(label, "DONE", result)
"""


def child(body: str, harden: bool = True, **policy: object) -> str:
    setup = f"hardening.install(Policy(hardening.runtime_gate(), **{policy!r}))\n" \
        if harden else ""
    proc = subprocess.run([sys.executable, "-c", PRELUDE + setup + textwrap.dedent(body)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_proc_self_mem_is_refused_naming_the_function(tmp_path: Path) -> None:
    body = f"""
    buffer = ctypes.create_string_buffer(SECRET)
    address = ctypes.addressof(buffer)
    os.symlink("/proc/self/mem", {str(tmp_path / 'innocent')!r})
    def steal(path):
        with open(path, "rb") as memory:
            memory.seek(address)
            return memory.read(len(SECRET))
    with function_scope("thief"):
        attempt("direct", lambda: steal("/proc/self/mem"))
        attempt("by-pid", lambda: steal(f"/proc/{{os.getpid()}}/mem"))
        attempt("symlink", lambda: steal({str(tmp_path / 'innocent')!r}))
        attempt("os.open", lambda: os.open("/proc/thread-self/mem", os.O_RDONLY))
    attempt("orchestrator", lambda: steal("/proc/self/mem"))
    """
    hardened = child(body)
    assert "private-data" not in hardened
    for label in ("direct", "by-pid", "symlink", "os.open"):
        assert f"{label} REFUSED function 'thief': opening " in hardened, hardened
    assert "orchestrator REFUSED the Orchestrator: opening /proc/self/mem" in hardened
    control = child(body.replace('os.symlink', 'pass  # ').replace(
        'attempt("symlink"', 'pass  # '), harden=False)
    assert "direct DONE b'private-data-of-function-A'" in control  # the hole is real


def test_native_code_loaded_with_ctypes_is_inspected_first(tmp_path: Path) -> None:
    bad = shared_object(tmp_path, "libbad", function("grant_all", "xorl %eax, %eax\n"
                                                     "xorl %ecx, %ecx\nxorl %edx, %edx\n"
                                                     "wrpkru\nret"))
    good = shared_object(tmp_path, "libgood", function("answer", "movl $42, %eax\nret"))
    out = child(f"""
    with function_scope("loader"):
        attempt("bad", lambda: ctypes.CDLL({str(bad)!r}))
        attempt("good", lambda: ctypes.CDLL({str(good)!r}).answer())
    """)
    assert f"bad REFUSED function 'loader': loading {bad}: wrpkru at offset 0x" in out
    assert "good DONE 42" in out


def test_extension_modules_are_inspected_before_they_load(tmp_path: Path) -> None:
    source = tmp_path / "evilext.c"
    source.write_text(textwrap.dedent("""
        #include <Python.h>
        static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "evilext", NULL, -1, NULL};
        void evil_reset(void) { __asm__ volatile(".byte 0x0f, 0x01, 0xef" ::: "memory"); }
        PyMODINIT_FUNC PyInit_evilext(void) { return PyModule_Create(&def); }
    """))
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    built = tmp_path / f"evilext{suffix}"
    subprocess.run([compiler(), "-shared", "-fPIC", "-O2", "-I",
                    sysconfig.get_paths()["include"], str(source), "-o", str(built)],
                   check=True)
    body = f"""
    sys.path.insert(0, {str(tmp_path)!r})
    with function_scope("importer"):
        attempt("import", lambda: __import__("evilext"))
    print("loaded", "evilext" in sys.modules)
    """
    out = child(body)
    assert f"import REFUSED function 'importer': loading {built}: wrpkru" in out
    assert "loaded False" in out
    assert "import DONE <module 'evilext'" in child(body, harden=False)


def test_ctypes_lookups_of_pkey_wrappers_are_refused_in_functions() -> None:
    out = child("""
    libc = ctypes.CDLL(None)
    with function_scope("keysmith"):
        attempt("pkey_set", lambda: libc.pkey_set)
        attempt("process_vm_readv", lambda: libc.process_vm_readv)
        attempt("getpid", lambda: libc.getpid() == os.getpid())
    attempt("outside", lambda: libc.pkey_set is not None)
    """)
    assert "pkey_set REFUSED function 'keysmith': ctypes lookup of 'pkey_set'" in out
    assert "process_vm_readv REFUSED function 'keysmith'" in out
    assert "getpid DONE True" in out and "outside DONE True" in out


def test_refuse_ctypes_stops_raw_memory_access_in_functions() -> None:
    out = child("""
    buffer = ctypes.create_string_buffer(SECRET)
    address = ctypes.addressof(buffer)
    with function_scope("peeker"):
        attempt("string_at", lambda: ctypes.string_at(address, len(SECRET)))
    attempt("outside", lambda: ctypes.string_at(address, 7))
    """, refuse_ctypes=True)
    # The call into ctypes' string_at helper is refused first (patch 0009).
    assert "string_at REFUSED function 'peeker': ctypes (ctypes." in out
    assert "private-data" not in out.split("outside")[0]


SECCOMP = """
import ctypes, errno, os
from faastlane.runtime.isolation.seccomp_filter import build_filter, install
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
secret = ctypes.create_string_buffer(b"private-data-of-function-A")
copy = ctypes.create_string_buffer(64)
def call(number, *args):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(number), *args)
    return result, ctypes.get_errno()
def read_own_memory():
    local = IoVec(ctypes.addressof(copy), 26)
    remote = IoVec(ctypes.addressof(secret), 26)
    result, err = call(310, ctypes.c_long(os.getpid()), ctypes.byref(local), ctypes.c_long(1),
                       ctypes.byref(remote), ctypes.c_long(1), ctypes.c_long(0))
    return result, err, copy.raw[:26]
"""


def seccomp_child(body: str) -> str:
    proc = subprocess.run([sys.executable, "-c", SECCOMP + textwrap.dedent(body)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_seccomp_refuses_process_vm_readv_ptrace_and_pkey_calls() -> None:
    out = seccomp_child("""
    print("before", read_own_memory())
    copy.raw = bytes(64)
    install(build_filter())
    print("after", read_own_memory())
    print("ptrace", call(101, ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0),
                         ctypes.c_long(0)))
    print("pkey_alloc", call(330, ctypes.c_long(0), ctypes.c_long(0)))
    print("pkey_mprotect", call(329, ctypes.c_long(0), ctypes.c_long(4096), ctypes.c_long(0),
                                ctypes.c_long(1)))
    print("getppid", call(110)[0] == os.getppid())
    """)
    before, after = out.split("after")
    assert "b'private-data-of-function-A'" in before  # the control: the call works
    assert "(-1, 1, b'\\x00" in after and "private-data" not in after
    assert "ptrace (-1, 1)" in out and "pkey_alloc (-1, 1)" in out
    assert "pkey_mprotect (-1, 1)" in out and "getppid True" in out


def test_seccomp_lets_the_runtime_call_site_through() -> None:
    """A call made from an allowed instruction range reaches the kernel (here libc's
    syscall() wrapper: pkey_alloc then fails as the hardware says, EINVAL without pku
    or a key number with it -- never the filter's EPERM)."""
    out = seccomp_child("""
    start = ctypes.cast(libc.syscall, ctypes.c_void_p).value
    install(build_filter(allowed_sites=[(start, start + 64)]))
    result, err = call(330, ctypes.c_long(0), ctypes.c_long(0))
    print("pkey_alloc", "passed" if err != errno.EPERM else "refused", result, err)
    print("pvr", read_own_memory()[:2])
    """)
    assert "pkey_alloc passed" in out
    assert "pvr (-1, 1)" in out  # libc's wrapper is in the range, but only pkey_* are


@pytest.mark.mpk
def test_the_runtime_key_syscall_site_passes_the_filter_and_nothing_else_does() -> None:
    """The runtime's one key ``syscall`` (mpk_sys.c), found by its bytes and called
    directly: pkey_alloc from there reaches the kernel (EINVAL without pku, a key with
    it -- never the filter's EPERM); process_vm_readv from there is still refused, and
    pkey_alloc through libc's syscall() is refused."""
    out = seccomp_child("""
    from faastlane.runtime.isolation.seccomp_filter import (
        KEY_SYSCALL_STUB,
        runtime_key_syscall_site,
    )
    site = runtime_key_syscall_site()
    start = site + 1 - len(KEY_SYSCALL_STUB)
    print("bytes", ctypes.string_at(start, len(KEY_SYSCALL_STUB)) == KEY_SYSCALL_STUB)
    stub = ctypes.CFUNCTYPE(ctypes.c_long, *[ctypes.c_long] * 5)(start)
    install(build_filter(allowed_sites=[(site, site + 1)]))
    print("site pkey_alloc", stub(330, 0, 3, 0, 0))
    print("site process_vm_readv", stub(310, os.getpid(), 0, 0, 0, 0))
    print("libc pkey_alloc", call(330, ctypes.c_long(0), ctypes.c_long(3)))
    """)
    assert "bytes True" in out
    result = int(out.split("site pkey_alloc ")[1].split()[0])
    assert result == -errno.EINVAL or result > 0, out  # the kernel answered, not seccomp
    assert f"site process_vm_readv -{errno.EPERM}" in out
    assert f"libc pkey_alloc (-1, {errno.EPERM})" in out


ACTIVATE = """
import json, os, sys, threading
from faastlane.runtime.isolation import hardening
from faastlane.runtime.isolation.hardening import IsolationViolation, function_scope
def attempt(label, action):
    try:
        result = action()
    except IsolationViolation as exc:
        print(label, "REFUSED", type(exc).__name__, isinstance(exc, ImportError), exc)
    except OSError as exc:
        print(label, "OSERROR", exc.errno)
    else:
        print(label, "DONE", result)
"""


def activate_child(body: str, action: Path | None = None, before: str = "",
                   **options: object) -> subprocess.CompletedProcess[str]:
    setup = f"activation = hardening.activate({str(action) if action else None!r}, " \
            f"**{options!r})\n"
    script = ACTIVATE + textwrap.dedent(before) + setup + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)


def activated(body: str, action: Path | None = None, **options: object) -> str:
    proc = activate_child(body, action, **options)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.mpk
def test_activate_switches_on_hook_filter_and_ffi_refusal_once() -> None:
    out = activated("""
    print("site", activation.key_syscall_site is not None, activation.refuse_ffi)
    print("again", hardening.activate() is activation)
    status = open("/proc/self/status").read()
    print("seccomp", "Seccomp:\t2" in status, "NoNewPrivs:\t1" in status)
    print("ctypes loaded", "_ctypes" in sys.modules)
    with function_scope("thief"):
        attempt("mem", lambda: open("/proc/self/mem", "rb"))
        attempt("ctypes", lambda: __import__("ctypes"))
        attempt("testcapi", lambda: __import__("_testcapi"))
    attempt("orchestrator", lambda: __import__("ctypes"))
    try:
        hardening.install(hardening.Policy(None))
    except hardening.HardeningError as exc:
        print("replace REFUSED", exc)
    """)
    assert "site True True" in out and "again True" in out
    assert "seccomp True True" in out and "ctypes loaded False" in out
    assert "mem REFUSED IsolationViolation False function 'thief': opening /proc/self/mem" \
        in out
    assert "ctypes REFUSED NativeCallRefused True function 'thief': importing ctypes " \
        "(it calls any native address) refused (mpk isolation)" in out
    assert "testcapi REFUSED NativeCallRefused True function 'thief': importing " \
        "_testcapi" in out
    assert "orchestrator REFUSED NativeCallRefused True the Orchestrator: importing " \
        "ctypes" in out
    assert "replace REFUSED the hardening's audit hook is already installed" in out


@pytest.mark.mpk
def test_activate_fails_closed_when_ctypes_was_loaded_and_kept_before() -> None:
    proc = activate_child("print('activated')", before="""
    import ctypes
    kept = ctypes.c_int(1)
    """)
    assert proc.returncode != 0 and "activated" not in proc.stdout
    assert "HardeningError: native-call modules are loaded and still referenced " \
        "(_ctypes." in proc.stderr
    assert "call hardening.activate() before anything imports ctypes" in proc.stderr
    # Imported and dropped again before (nothing keeps it): accepted.
    out = activated("print('activated')", before="import ctypes\ndel ctypes\n")
    assert "activated" in out


@pytest.mark.mpk
def test_a_thread_inside_a_domain_is_function_code_without_a_scope() -> None:
    """The C module's per-thread domain, not only the Python marker, says who runs:
    code that sheds its function_scope inside a domain is still refused, named after
    the function last seen in that domain."""
    out = activated("""
    import _faastlane
    domain = _faastlane.Domain()
    with domain, function_scope("fn"):
        pass
    with domain:
        print("current", hardening.current_function())
        attempt("mem", lambda: open("/proc/self/mem", "rb"))
    print("outside", hardening.current_function())
    """)
    assert "current fn" in out
    assert "mem REFUSED IsolationViolation False function 'fn': opening /proc/self/mem" in out
    assert "outside None" in out


@pytest.mark.mpk
def test_waivers_come_from_the_action_record_pinned_by_sha256(tmp_path: Path) -> None:
    action = tmp_path / "action"
    (action / "functions" / "codec").mkdir(parents=True)
    library = shared_object(tmp_path, "libvendor", function(
        "reset", "xorl %eax, %eax\nxorl %ecx, %ecx\nxorl %edx, %edx\nwrpkru\nret"))
    waived = action / "functions" / "codec" / "libvendor.so"
    waived.write_bytes(library.read_bytes())
    unwaived = action / "functions" / "codec" / "libother.so"
    unwaived.write_bytes(library.read_bytes())
    digest = hashlib.sha256(library.read_bytes()).hexdigest()
    record = {"files": [{"file": "functions/codec/libvendor.so", "sha256": digest,
                         "findings": [{"kind": "wrpkru", "waived": {"reason": "vendor"}}]},
                        {"file": "functions/codec/libother.so", "sha256": digest,
                         "findings": [{"kind": "wrpkru", "waived": None}]}]}
    (action / "inspection.json").write_text(json.dumps(record))
    body = f"""
    import ctypes
    print("waived", activation.waived)
    attempt("vendor", lambda: ctypes.CDLL({str(waived)!r}) and "loaded")
    attempt("other", lambda: ctypes.CDLL({str(unwaived)!r}) and "loaded")
    """
    out = activated(body, action, refuse_ffi=False)
    assert f"waived ('{waived.resolve()}',)" in out
    assert "vendor DONE loaded" in out
    assert "other REFUSED IsolationViolation False the Orchestrator: loading " in out
    waived.write_bytes(library.read_bytes() + b"\0")  # rebuilt after the review
    out = activated(body, action, refuse_ffi=False)
    assert "vendor REFUSED IsolationViolation False the Orchestrator: loading " in out
