"""The seal, natively (no keys: the same bookkeeping, no PKRU writes).

``Domain.run_sealed`` is how the Orchestrator runs function code: inside it, and in
every thread started from it, the domain API that changes PKRU or reveals other
domains is refused (``SealedError``); outside it the same calls work (the controls).
What leaves a sealed call must be shared.  Under real keys the attack itself is
test_attacks_qemu.py's ``domain_api`` rows.
"""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

COMPOSER = Path(__file__).resolve().parents[2] / "composer"
PRELUDE = f"""
import _thread, sys, threading, _faastlane as f
sys.path.insert(0, {str(COMPOSER)!r})
def attempt(label, action):
    try:
        result = action()
    except f.SealedError as exc:
        print(label, "SEALED", exc)
    except Exception as exc:
        print(label, "ERROR", type(exc).__name__, exc)
    else:
        print(label, "DONE", result)
mine, other = f.Domain(private_heap=True), f.Domain()
# As the runtime does: the operations sealed code may run through call_shared.
f.register_broker(list)
"""
# Every call the seal refuses, as (label, expression).
REFUSED = {
    "exit": "mine.exit()",
    "enter-other": "other.enter()",
    "destroy-other": "other.destroy()",
    "create": "f.Domain()",
    "alloc": "other.alloc(64)",
    "restore": "f.restore_thread_pkru()",
    "live": "f.live_domains()",
    "owner": "f.owner_of(other.base)",
    "reporter": "f.install_fault_reporter(2)",
    "nested": "mine.run_sealed(int)",
}


def run(body: str, runtime: str) -> str:
    proc = subprocess.run([runtime, "-c", PRELUDE + textwrap.dedent(body)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def attempts(prefix: str, indent: str) -> str:
    return "".join(f"{indent}attempt('{prefix}{label}', lambda: {code})\n"
                   for label, code in REFUSED.items())


def test_sealed_code_cannot_use_the_domain_api(runtime: str) -> None:
    out = run(f"""
def body():
    print("sealed", f.sealed() == mine.slot, f.current_domain() is mine)
    print("shared", f.slot_of(id(f.call_shared(list, (1, 2)))) is None)
{attempts("", "    ")}
mine.run_sealed(body)
print("after", f.sealed(), f.current_domain())
with other:  # the control: unsealed, the gates work
    print("control-enter", f.current_domain() is other)
print("control-live", len(f.live_domains()))
""", runtime)
    assert "sealed True True" in out and "shared True" in out
    for label in REFUSED:
        assert f"\n{label} SEALED cannot " in out, out
        assert "this thread runs sealed function code (domain slot " in out
    assert "after None None" in out
    assert "control-enter True" in out and "control-live 2" in out


def test_threads_started_sealed_are_sealed_for_life(runtime: str) -> None:
    """Started by threading, by _thread, and from a born-sealed thread: all sealed to
    the creator's domain and inside it (mpk_thread.c); a thread started after the call
    is neither (the control)."""
    out = run("""
done = _thread.allocate_lock()
def born(tag):
    print(tag, f.sealed() == mine.slot, f.current_domain() is mine)
    attempt(tag + "-enter", lambda: other.enter())
    if tag == "threading":
        grandchild = threading.Thread(target=born, args=("grandchild",))
        grandchild.start(); grandchild.join()
def body():
    t = threading.Thread(target=born, args=("threading",))
    t.start(); t.join()
    done.acquire()
    _thread.start_new_thread(lambda: (born("thread"), done.release()), ())
    done.acquire(); done.release()
mine.run_sealed(body)
def control():
    print("control", f.sealed())
    attempt("control-enter", lambda: other.enter() and other.exit())
t = threading.Thread(target=control); t.start(); t.join()
""", runtime)
    for tag in ("threading", "grandchild", "thread"):
        assert f"{tag} True True" in out, out
        assert f"{tag}-enter SEALED cannot enter: this thread runs sealed" in out
    assert "control None" in out and "control-enter DONE None" in out


def test_what_leaves_a_sealed_call_is_shared(runtime: str) -> None:
    """A private result is refused; a private exception is replaced by a shared copy
    of its text, and no exception keeps a traceback or context made inside."""
    out = run("""
class Custom(Exception):
    pass
def private_list():
    return [1, 2, 3]
def builtin_error():
    try:
        {}["missing"]
    except KeyError:
        raise ValueError("bad " + "input")
def custom_error():
    raise Custom("from " + "inside")
def shared_result():
    return f.call_shared(list, (1, 2, 3))
for call in (private_list, builtin_error, custom_error):
    try:
        mine.run_sealed(call)
    except BaseException as exc:
        print(call.__name__, type(exc).__name__, exc, f.slot_of(id(exc)),
              exc.__traceback__ is None or exc.__traceback__.tb_next is None,
              exc.__context__)
result = mine.run_sealed(shared_result)
print("shared", result, f.slot_of(id(result)))
""", runtime)
    assert "private_list DomainError a sealed call returned a private list object" in out
    assert "builtin_error ValueError bad input None True None" in out, out
    assert "custom_error DomainError Custom: from inside None True None" in out, out
    assert "shared [1, 2, 3] None" in out


def test_a_born_sealed_thread_is_function_code_for_the_hardening(runtime: str) -> None:
    """The hardening's hook asks the C state: a thread the function started, with no
    scope marker and in no domain, is still that function."""
    out = run("""
from faastlane.runtime.isolation import hardening
hardening.install(hardening.Policy(None))
def born():
    print("born", hardening.current_function())
    attempt("mem", lambda: open("/proc/self/mem", "rb"))
def body():
    with hardening.function_scope("fn"):
        t = threading.Thread(target=born); t.start(); t.join()
mine.run_sealed(body)
print("outside", hardening.current_function())
""", runtime)
    assert "born fn" in out
    assert "mem ERROR IsolationViolation function 'fn': opening /proc/self/mem" in out
    assert "outside None" in out


def test_a_thread_native_code_starts_while_sealed_is_born_sealed(runtime: str) -> None:
    """pthread_create called by native code (here libc's, looked up by a shared object
    as any C extension would) is the runtime's: the thread is sealed.  The control: the
    same call outside the sealed call."""
    out = run("""
import ctypes
libc = ctypes.CDLL(None)
START = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
def start(arg):
    print("native-thread", arg, f.sealed() == mine.slot, f.sealed())
    return None
routine = START(start)
def native_thread(tag):
    handle = ctypes.c_ulong()
    assert libc.pthread_create(ctypes.byref(handle), None, routine, tag) == 0
    assert libc.pthread_join(handle, None) == 0
mine.run_sealed(native_thread, 1)
native_thread(2)
""", runtime)
    assert "native-thread 1 True " in out, out
    assert "native-thread 2 False None" in out, out
