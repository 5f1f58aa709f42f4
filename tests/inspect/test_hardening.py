"""Run-time hardening, natively: the audit hook and the seccomp filter each refuse what
they promise, in a fresh child process per case (hooks and filters are permanent), and a
control shows the same action succeeding without them."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

from crafted_elf import compiler, function, shared_object

PRELUDE = """
import ctypes, os, sys
from faastlane.runtime import hardening
from faastlane.runtime.hardening import IsolationViolation, Policy, function_scope
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
    assert "string_at REFUSED function 'peeker': ctypes (ctypes.string_at)" in out
    assert "private-data" not in out.split("outside")[0]


SECCOMP = """
import ctypes, errno, os
from faastlane.runtime.seccomp_filter import build_filter, install
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
