"""The hardening against whole classes of attack (issue 17), natively: no protection keys
here, but the audit hook, the seal, the seccomp filter and the capability drop work
without them. Each case runs in a fresh child process (hooks and filters are permanent)
as the Orchestrator runs function code -- ``hardening.activate(libraries_ffi=True)``,
the function sealed in its own private-heap domain (``Domain.run_sealed``) inside
``function_scope`` -- and a control runs the same attack without the hardening, where it
must work (or the test proves nothing).

- class 4: memory files reached through a directory descriptor, ``/proc/thread-self``,
  ``/proc/<pid>``, ``/dev/fd/N``, a symlink in a directory only a descriptor names;
- class 5: process creation, and a child reading its parent's ``/proc/PPID/mem``;
- numpy: ``ndarray.ctypes`` of a function's own array works, ctypes stays refused;
- class 6: threads a function starts are that function (refusals name it); hooks that
  every thread runs (trace, profile, sys.monitoring) are refused to function code.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.mpk  # the cpython-mpk runtime: _faastlane, patch 0009, 0013

PRELUDE = """
import os, sys, threading
import _faastlane
from faastlane.runtime.isolation import hardening
from faastlane.runtime.isolation.hardening import IsolationViolation, function_scope
SHARED_WRITE_ERROR = _faastlane.SharedWriteError  # the write guard's refusal (patch 0014)
HARDEN = sys.argv[1] == "hardened"
if HARDEN:
    hardening.activate(libraries_ffi=True)
SECRET = b"TOP-SECRET-" + str(4242 * 1000 + 17).encode() + b"-of-victim"  # run-time bytes
ADDRESS = id(SECRET) + 32  # PyBytesObject.ob_sval on x86-64
DOMAIN = _faastlane.Domain(private_heap=True)

def attempt(label, action):
    try:
        result = action()
    except IsolationViolation as exc:
        print(label, "REFUSED", exc, flush=True)
    except SHARED_WRITE_ERROR as exc:
        print(label, "GUARDED", exc, flush=True)
    except OSError as exc:
        print(label, "OSERROR", exc.errno, flush=True)
    else:
        print(label, "DONE", result, flush=True)

def as_function(name, body):
    '''body() as function code: sealed in its domain (hardened) or just scoped.'''
    def scoped():
        with function_scope(name):
            body()
    def run():
        if HARDEN:
            DOMAIN.run_sealed(scoped)
        else:
            scoped()
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()

def fork_and_wait():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return "forked"

def read_mem(fd):
    try:
        return os.pread(fd, len(SECRET), ADDRESS)
    finally:
        os.close(fd)
"""


def run(body: str, mode: str) -> str:
    proc = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body), mode],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def lines(out: str) -> dict[str, str]:
    found = {}
    for line in out.splitlines():
        label, _, rest = line.partition(" ")
        found[label] = rest
    return found


MEMORY_BY_DESCRIPTOR = """
import tempfile
pid, tid = os.getpid(), threading.get_native_id()
links = tempfile.mkdtemp()
os.symlink("/proc/self/mem", os.path.join(links, "innocent"))  # not by the function
with open(os.path.join(links, "data.txt"), "w") as handle:
    handle.write("ordinary")
proc_self = os.open("/proc/self", os.O_RDONLY | os.O_DIRECTORY)
RO = os.O_RDONLY
import pathlib

class Sneaky:
    # A path that answers the hook differently from the open it precedes.
    calls = 0
    def __fspath__(self):
        Sneaky.calls += 1
        return "/proc/self/mem" if Sneaky.calls == 1 else "/etc/hostname"

def body():
    attempt("dir_fd_self", lambda: read_mem(os.open("mem", RO, dir_fd=proc_self)))
    thread_self = os.open("/proc/thread-self", RO | os.O_DIRECTORY)
    attempt("dir_fd_thread_self", lambda: read_mem(os.open("mem", RO, dir_fd=thread_self)))
    by_pid = os.open(f"/proc/{pid}", os.O_PATH | os.O_DIRECTORY)
    attempt("dir_fd_pid_o_path", lambda: read_mem(os.open("mem", RO, dir_fd=by_pid)))
    proc = os.open("/proc", RO | os.O_DIRECTORY)
    attempt("dir_fd_proc_self_mem", lambda: read_mem(os.open("self/mem", RO, dir_fd=proc)))
    attempt("dir_fd_dotdot", lambda: read_mem(os.open("task/../mem", RO, dir_fd=proc_self)))
    attempt("dev_fd", lambda: read_mem(os.open(f"/dev/fd/{proc_self}/mem", RO)))
    attempt("pagemap", lambda: os.read(os.open("pagemap", RO, dir_fd=proc_self), 8))
    attempt("opener", lambda: open("mem", "rb", buffering=0,
                                   opener=lambda p, f: os.open(p, f, dir_fd=proc_self)
                                   ).read(0))
    folder = os.open(links, RO | os.O_DIRECTORY)
    attempt("symlink_in_dir_fd", lambda: read_mem(os.open("innocent", RO, dir_fd=folder)))
    attempt("make_symlink_to_proc", lambda: os.symlink(f"/proc/{pid}",
                                                       os.path.join(links, "p")))
    attempt("make_symlink_to_mem", lambda: os.symlink("/proc/self/mem",
                                                      os.path.join(links, "m")))
    attempt("ordinary_dir_fd", lambda: os.read(os.open("data.txt", RO, dir_fd=folder), 8))
    attempt("pathlib", lambda: pathlib.Path(f"/proc/{pid}/mem").open("rb").read(0))
    # os.open converts the path first, then raises the event with the object itself.
    attempt("pathlike", lambda: read_mem(os.open(Sneaky(), RO)))
    attempt("ordinary_pathlib", lambda: pathlib.Path(links, "data.txt").read_text())

as_function("thief", body)
"""


def test_memory_files_through_a_directory_descriptor_are_refused_to_function_code() -> None:
    out = lines(run(MEMORY_BY_DESCRIPTOR, "hardened"))
    for label in ("dir_fd_self", "dir_fd_thread_self", "dir_fd_pid_o_path",
                  "dir_fd_proc_self_mem", "dir_fd_dotdot", "dev_fd", "pagemap", "opener",
                  "symlink_in_dir_fd", "make_symlink_to_proc", "make_symlink_to_mem"):
        assert out[label].startswith("REFUSED function 'thief': "), (label, out)
    assert out["dir_fd_self"] == "REFUSED function 'thief': opening mem refused " \
        "(mpk isolation)"
    assert out["make_symlink_to_proc"].startswith("REFUSED function 'thief': a symlink to "
                                                  "/proc/")
    assert out["pathlib"].startswith("REFUSED function 'thief': opening /proc/"), out
    # Refused whichever way the event names it: the converted path, or the object (a
    # path-like other than pathlib's is not asked: it could answer differently).
    assert out["pathlike"] in ("REFUSED function 'thief': opening /proc/self/mem refused "
                               "(mpk isolation)", "REFUSED function 'thief': opening a "
                               "path given as a Sneaky (str, bytes or pathlib only) "
                               "refused (mpk isolation)"), out
    assert out["ordinary_dir_fd"] == "DONE b'ordinary'"  # other files still open
    assert out["ordinary_pathlib"] == "DONE ordinary"
    assert "4242017" not in str(out)


def test_memory_files_through_a_directory_descriptor_leak_without_the_hardening() -> None:
    """The control: the same opens read the secret (the kernel's mem ignores keys)."""
    out = lines(run(MEMORY_BY_DESCRIPTOR, "none"))
    for label in ("dir_fd_self", "dir_fd_thread_self", "dir_fd_pid_o_path",
                  "dir_fd_proc_self_mem", "dir_fd_dotdot", "dev_fd", "symlink_in_dir_fd"):
        assert "TOP-SECRET-4242017-of-victim" in out[label], (label, out)
    assert "TOP-SECRET-4242017-of-victim" in out["pathlike"], out  # asked once: mem


PROCESSES = """
import pty, subprocess, _posixsubprocess
READER = ("import os, sys; fd = os.open(f'/proc/{os.getppid()}/mem', os.O_RDONLY); "
          "print(os.pread(fd, int(sys.argv[2]), int(sys.argv[1])))")
CHILD = [sys.executable, "-c", READER, str(ADDRESS), str(len(SECRET))]

def child_reads_parent():
    proc = subprocess.run(CHILD, capture_output=True, text=True)
    return (proc.stdout + proc.stderr).strip().splitlines()[-1]

def fork_exec():
    '''_posixsubprocess.fork_exec called directly: no subprocess.Popen event.'''
    read_end, write_end = os.pipe()
    errors_read, errors_write = os.pipe()
    pid = _posixsubprocess.fork_exec(
        CHILD, [os.fsencode(sys.executable)], True, tuple(sorted((write_end, errors_write))),
        None, None, -1, -1, -1, write_end, -1, -1, errors_read, errors_write, False, False, -1,
        None, None, None, -1, None, False)
    os.close(write_end)
    os.close(errors_write)
    os.waitpid(pid, 0)
    return os.read(read_end, 4096).decode().strip()

def body():
    attempt("subprocess", child_reads_parent)
    attempt("fork_exec", fork_exec)
    attempt("fork", fork_and_wait)
    attempt("system", lambda: os.system("true"))
    attempt("posix_spawn", lambda: os.waitpid(os.posix_spawn("/bin/true", ["true"],
                                                            os.environ), 0)[1])
    if HARDEN:  # unrefused, it would replace this process
        attempt("execv", lambda: os.execv("/bin/true", ["true"]))
    attempt("popen", lambda: os.popen("echo hi").read())
    attempt("pty_spawn", lambda: pty.spawn(["/bin/true"]))

as_function("spawner", body)
attempt("orchestrator_child", child_reads_parent)
status = open("/proc/self/status").read()
print("parent_caps", [l.split()[1] for l in status.splitlines()
                      if l.startswith(("CapEff", "CapBnd"))])
"""
CAP_SYS_PTRACE = 1 << 19


def test_function_code_cannot_start_processes_and_children_cannot_read_the_parent() -> None:
    out = lines(run(PROCESSES, "hardened"))
    for label, event in (("subprocess", "subprocess.Popen"),
                         ("fork_exec", "_posixsubprocess.fork_exec"), ("fork", "os.fork"),
                         ("system", "os.system"), ("posix_spawn", "os.posix_spawn"),
                         ("execv", "os.exec"), ("popen", "subprocess.Popen"),
                         ("pty_spawn", "pty.spawn")):
        assert out[label] == (f"REFUSED function 'spawner': starting a process ({event}) "
                              "refused (mpk isolation)"), (label, out)
    # The Orchestrator may still start processes, but without CAP_SYS_PTRACE (dropped
    # from the bounding set too) a child cannot open the non-dumpable parent's memory,
    # root or not: what a process some unaudited path started would meet.
    assert out["orchestrator_child"].startswith("DONE PermissionError"), out
    effective, bounding = (int(v, 16) for v in eval(out["parent_caps"]))
    assert not effective & CAP_SYS_PTRACE and not bounding & CAP_SYS_PTRACE


def test_a_child_reads_the_parents_memory_without_the_hardening() -> None:
    """The control: as root with CAP_SYS_PTRACE (this machine, and Lambda's or a
    container's root), the child reads the parent's secret; every way to start it works."""
    assert (int(next(line for line in open("/proc/self/status") if line.startswith("CapEff"))
                .split()[1], 16) & CAP_SYS_PTRACE), "the control needs CAP_SYS_PTRACE"
    out = lines(run(PROCESSES, "none"))
    assert "TOP-SECRET-4242017-of-victim" in out["subprocess"], out
    assert "TOP-SECRET-4242017-of-victim" in out["fork_exec"], out
    assert "TOP-SECRET-4242017-of-victim" in out["orchestrator_child"], out
    assert out["fork"] == "DONE forked" and out["system"] == "DONE 0"


def test_threads_that_existed_before_activation_are_confined_before_running_functions(
) -> None:
    """Capabilities are per thread: a thread started before ``activate`` keeps
    CAP_SYS_PTRACE until ``confine_thread`` (what the invoker calls before a function
    runs on a thread)."""
    out = lines(run("""
    from faastlane.runtime.isolation import seccomp_filter
    go, done = threading.Event(), threading.Event()
    def older():
        go.wait()
        print("before", seccomp_filter.holds_capability(), flush=True)
        hardening.confine_thread()
        print("after", seccomp_filter.holds_capability(), flush=True)
        done.set()
    thread = threading.Thread(target=older)
    thread.start()
    hardening.activate(libraries_ffi=True)
    print("activating_thread", seccomp_filter.holds_capability(), flush=True)
    go.set()
    done.wait()
    """, "none"))
    assert out == {"activating_thread": "False", "before": "True", "after": "False"}, out


NUMPY = """
import numpy  # after activate, outside functions: as private_heaps.load imports it
if HARDEN:
    hardening.trust_numpy_ctypes()
import ctypes  # numpy loaded it already; a library's
shared = ctypes.c_void_p(ADDRESS)  # made outside functions: shared, not the function's
internal = sys.modules["numpy._core._internal"]

class Fake:
    pass

def body():
    array = numpy.arange(6.0).reshape(2, 3)
    attempt("data", lambda: array.ctypes.data == array.__array_interface__["data"][0])
    attempt("shape", lambda: type(array.ctypes.shape).__name__)
    attempt("strides", lambda: type(array.ctypes.strides_as(ctypes.c_long)).__name__)
    attempt("sum", lambda: float(array.sum()))
    attempt("read_shape_item", lambda: array.ctypes.shape[0])
    attempt("data_as", lambda: array.ctypes.data_as(ctypes.POINTER(ctypes.c_double)))
    attempt("own_ctypes", lambda: ctypes.c_double(1.5).value)
    attempt("string_at", lambda: ctypes.string_at(ADDRESS, len(SECRET)))
    fake = Fake()
    fake._data = shared  # numpy's trusted code on an object that is not the function's
    attempt("trusted_code_shared_object", lambda: internal._ctypes.data.fget(fake))

as_function("numeric", body)
"""


def test_numpy_ctypes_data_of_a_functions_own_array_works_and_ctypes_stays_refused(
) -> None:
    out = lines(run(NUMPY, "hardened"))
    assert out["data"] == "DONE True", out
    assert out["shape"].startswith("DONE c_long_Array_2"), out
    assert out["strides"].startswith("DONE c_long_Array_2"), out
    assert out["sum"] == "DONE 15.0", out
    for label, event in (("read_shape_item", "cdata/access"), ("data_as", "call_function"),
                         ("own_ctypes", "cdata/access"), ("string_at", "call_function"),
                         ("trusted_code_shared_object", "cdata/access")):
        assert out[label] == (f"REFUSED function 'numeric': ctypes (ctypes.{event}) "
                              "refused (mpk isolation)"), (label, out)
    control = lines(run(NUMPY, "none"))
    assert control["string_at"] == "DONE b'TOP-SECRET-4242017-of-victim'", control


THREADS_AND_HOOKS = """
def started():
    attempt("thread_mem", lambda: open("/proc/self/mem", "rb"))
    attempt("thread_fork", fork_and_wait)
    print("thread_function", hardening.current_function(), flush=True)

def body():
    thread = threading.Thread(target=started)
    thread.start()
    thread.join()
    attempt("settrace", lambda: sys.settrace(lambda *a: None))
    attempt("setprofile", lambda: sys.setprofile(lambda *a: None))
    attempt("setprofile_all_threads",
            lambda: threading.setprofile_all_threads(lambda *a: None))
    attempt("settrace_all_threads", lambda: threading.settrace_all_threads(lambda *a: None))
    attempt("monitoring", lambda: sys.monitoring.register_callback(
        3, sys.monitoring.events.CALL, lambda *a: None))

as_function("hooker", body)
print("main_hooks", sys.gettrace(), sys.getprofile(), flush=True)
attempt("orchestrator_settrace", lambda: sys.settrace(None))
"""


def test_threads_a_function_starts_are_that_function_and_global_hooks_are_refused(
) -> None:
    out = lines(run(THREADS_AND_HOOKS, "hardened"))
    assert out["thread_mem"] == "REFUSED function 'hooker': opening /proc/self/mem " \
        "refused (mpk isolation)", out
    assert out["thread_fork"] == "REFUSED function 'hooker': starting a process " \
        "(os.fork) refused (mpk isolation)", out
    assert out["thread_function"] == "hooker", out
    for label, event in (("settrace", "sys.settrace"), ("setprofile", "sys.setprofile"),
                         ("monitoring", "sys.monitoring.register_callback")):
        assert out[label] == (f"REFUSED function 'hooker': installing a hook every thread "
                              f"runs ({event}) refused (mpk isolation)"), (label, out)
    # The all-threads setters swallow the refusal of each thread's install (CPython
    # reports it as unraisable): no thread got the hook, the Orchestrator's neither.
    assert "sys.setprofile) refused" in out["setprofile_all_threads"] or \
        out["setprofile_all_threads"] == "DONE None"
    assert out["main_hooks"] == "None None", out
    assert out["orchestrator_settrace"] == "DONE None"
    control = lines(run(THREADS_AND_HOOKS, "none"))
    assert control["main_hooks"] != "None None", control  # the hooks reached it
    assert control["monitoring"] == "DONE None", control


IN_FLIGHT = """
import gc
# What the Orchestrator holds between two functions: shared, in key 0.
in_flight = {"promoted": SECRET.decode(), "trail": []}  # a container: GC-tracked

def find():
    return next(o for o in gc.get_objects() if type(o) is dict and "promoted" in o)

def body():
    attempt("get_objects", lambda: find()["promoted"])
    attempt("call_shared", lambda: next(o for o in _faastlane.call_shared(gc.get_objects)
                                        if type(o) is dict and "promoted" in o)["promoted"])
    attempt("get_referrers", lambda: len(gc.get_referrers(in_flight)))
    attempt("collect", lambda: gc.collect(0) >= 0)

as_function("snoop", body)
attempt("orchestrator", lambda: find()["promoted"])
"""


def test_function_code_cannot_walk_the_object_graph() -> None:
    """Data in flight is shared (class 3): function code cannot list it through gc, nor
    allocate shared to run gc's walk (call_shared runs only the runtime's registered
    operations for sealed code); the Orchestrator can."""
    out = lines(run(IN_FLIGHT, "hardened"))
    for label, event in (("get_objects", "gc.get_objects"),
                         ("get_referrers", "gc.get_referrers")):
        assert out[label] == (f"REFUSED function 'snoop': walking the object graph ({event}) "
                              "refused (mpk isolation)"), (label, out)
    assert out["call_shared"].startswith("GUARDED function '") and \
        "may not call_shared(<built-in function get_objects>)" in out["call_shared"], out
    assert out["collect"] == "DONE True"
    assert out["orchestrator"] == "DONE TOP-SECRET-4242017-of-victim"
    control = lines(run(IN_FLIGHT, "none"))
    assert control["get_objects"] == "DONE TOP-SECRET-4242017-of-victim", control
