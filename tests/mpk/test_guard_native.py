"""The write guard (cpython-mpk patch 0014, ``mpk_guard.c``), natively.

Sealed function code may change its own objects, but not shared code -- a shared
module's functions, a class, a function, a closure's cell -- nor what the runtime froze
(sys.path, the runtime's state); it cannot allocate shared except through an operation
the runtime registered, and private code that starts running inside one allocates
privately again; walking frames back from its own code stops at the runtime's.  Each
door is tried by a thief run sealed (as the Orchestrator runs function code) and, as
the control, by the same code unsealed, where it works.  The guard is bookkeeping of
the slots, the same with or without protection keys, so these run on any host; the
same doors through whole workflows are tests/integration/test_guard_workflows.py.
"""

from __future__ import annotations

import subprocess
import textwrap

PRELUDE = """
import gc, json, sys, threading, types, _faastlane as f
mine = f.Domain(private_heap=True)
f.name_slot(mine.slot, "thief")
f.freeze(json.__dict__, "the namespace of module 'json'", code_only=True)
f.freeze(sys.path, "sys.path")
POLICY = {"refuse_ctypes": True}
f.freeze(POLICY, "the runtime's state")
def attempt(label, action):
    try:
        action()
    except f.SharedWriteError as exc:
        print(label, "REFUSED", exc, flush=True)
    except Exception as exc:
        print(label, "ERROR", type(exc).__name__, exc, flush=True)
    else:
        print(label, "DONE", flush=True)
def closure():
    secret_hook = [len]
    return lambda: secret_hook
held = closure()
"""

# Each way function code could plant code where another function runs it, or loosen
# the runtime's state, as (label, statement).
DOORS = {
    "module-function": "json.dumps = print",
    "module-del": "delattr(json, 'loads')",
    "namespace-item": "vars(json).__setitem__('loads', print)",
    "globals-of-function": "json.detect_encoding.__globals__.__setitem__('load', print)",
    "namespace-update": "vars(json).update(dumps=print)",
    "class-attribute": "setattr(json.JSONEncoder, 'default', print)",
    "class-via-type": "type.__setattr__(json.JSONDecoder, 'decode', print)",
    "class-bases": "setattr(json.JSONEncoder, '__bases__', (object,))",
    "instance-class": "setattr(json._default_encoder, '__class__', json.JSONDecoder)",
    "module-class": "setattr(json, '__class__', type('M', (type(json),), {}))",
    "function-code": "setattr(json.detect_encoding, '__code__', (lambda b: 0).__code__)",
    "function-defaults": "setattr(json.detect_encoding, '__defaults__', None)",
    "function-dict": "setattr(json.detect_encoding, 'hook', print)",
    "cell": "setattr(held.__closure__[0], 'cell_contents', [print])",
    "sys-path": "sys.path.insert(0, '/tmp/planted')",
    "sys-path-slice": "sys.path.__setitem__(slice(0, 0), ['/tmp/planted'])",
    "runtime-state": "POLICY.__setitem__('refuse_ctypes', False)",
    "runtime-state-clear": "POLICY.clear()",
}


def run(body: str, runtime: str) -> str:
    proc = subprocess.run([runtime, "-c", PRELUDE + textwrap.dedent(body)],
                          capture_output=True, text=True, timeout=120)
    # A live domain's private class faults the interpreter's own teardown under keys
    # (issue 17 note): every probe prints before it, and exits with os._exit.
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def attempts(indent: str) -> str:
    return "".join(f"{indent}attempt({label!r}, lambda: exec({code!r}))\n"
                   for label, code in DOORS.items())


def test_sealed_code_cannot_change_shared_code_or_frozen_state(runtime: str) -> None:
    out = run(f"""
def thief():
{attempts("    ")}
    json._lazy_flag = 1            # a library's flag: not code, stays writable
    print("flag", json._lazy_flag, flush=True)
mine.run_sealed(thief)
print("dumps intact", json.dumps({{"a": 1}}), json.detect_encoding.__code__.co_name, flush=True)
print("path intact", "/tmp/planted" not in sys.path, POLICY, flush=True)
import os; os._exit(0)
""", runtime)
    for label in DOORS:
        assert f"\n{label} REFUSED function 'thief' may not " in "\n" + out, out
    assert "shared code and the runtime's state are read-only to function code" in out
    assert "flag 1" in out
    assert 'dumps intact {"a": 1} detect_encoding' in out
    assert "path intact True {'refuse_ctypes': True}" in out


def test_the_same_doors_are_open_outside_sealed_code(runtime: str) -> None:
    """The control: unsealed (the Orchestrator, or isolation none) every door works, so
    the refusals above are the guard's."""
    out = run(f"""
{attempts("")}
print("dumps now", json.dumps, flush=True)
import os; os._exit(0)
""", runtime)
    for label in DOORS:
        assert f"{label} DONE" in out, out
    assert "dumps now <built-in function print>" in out


def test_function_code_cannot_make_shared_objects(runtime: str) -> None:
    """call_shared is open to sealed code only for registered operations; a registered
    operation that runs the function's own code runs it privately (the trip)."""
    out = run("""
def copy_list(items):
    return list(items)
f.register_broker(copy_list)
def thief():
    attempt("exec", lambda: f.call_shared(exec, "def planted(): pass", {}))
    attempt("compile", lambda: f.call_shared(compile, "1", "x", "eval"))
    attempt("FunctionType", lambda: f.call_shared(types.FunctionType,
                                                  (lambda: 0).__code__, {}))
    shared = f.call_shared(copy_list, (1, 2, 3))
    print("registered", f.slot_of(id(shared)), flush=True)
    def planted():
        return 0
    def private_items():
        yield planted
        yield types.FunctionType(planted.__code__, {})
    made = f.call_shared(copy_list, private_items())
    # The list was made before the generator ran (shared); what the generator made
    # after the trip -- the function objects -- is private.
    print("tripped", len(made), all(f.slot_of(id(x)) == mine.slot for x in made),
          flush=True)
mine.run_sealed(thief)
attempt("outside", lambda: f.call_shared(exec, "pass", {}))
import os; os._exit(0)
""", runtime)
    for label in ("exec", "compile", "FunctionType"):
        assert f"{label} REFUSED function 'thief' may not call_shared(" in out, out
    assert "registered None" in out
    assert "tripped 2 True" in out
    assert "outside DONE" in out
    out = run("""
def thief():
    attempt("register", lambda: f.register_broker(exec))
    attempt("freeze", lambda: f.freeze([]))
    attempt("name", lambda: f.name_slot(0, "victim"))
mine.run_sealed(thief)
import os; os._exit(0)
""", runtime)
    for label in ("register", "freeze", "name"):
        assert f"{label} ERROR PermissionError cannot " in out, out


def test_heapless_sealed_code_changes_what_it_makes_not_what_was_frozen(runtime: str
                                                                         ) -> None:
    """The library loader (a domain with no private heap) runs libraries' module
    bodies, those of the imports functions trigger too: everything it makes is
    shared, so it may change it -- a class, a function, a module of its own -- but
    not what the runtime froze before it ran: a loaded module's code, the classes it
    defines, the functions whose globals it is, the runtime's state. A broker (the
    runtime's own operation, unguarded), the control, changes anything."""
    out = run("""
import collections, json.encoder
# As guard.freeze_new_modules does for every module loaded: its classes and functions.
f.freeze(json.encoder.JSONEncoder, "class 'JSONEncoder'", code_only=True)
f.freeze(json.detect_encoding, "function 'detect_encoding'")
# As the runtime freezes sys.meta_path: libraries may extend it as they load (checked
# after), function code may not.
HOOKS = []
f.freeze(HOOKS, "sys.meta_path", code_only=True)
loader = f.Domain()
f.name_slot(loader.slot, "libraries of thief")
def library_body():
    class Made:
        pass
    def made():
        pass
    module = types.ModuleType("made")
    attempt("own-class", lambda: setattr(Made, "method", print))
    attempt("own-function", lambda: setattr(made, "__wrapped__", print))
    attempt("own-module", lambda: setattr(module, "hook", print))
    # Functions loaded code makes now are new: namedtuple sets its methods' __doc__.
    attempt("made-by-loaded-code", lambda: collections.namedtuple("P", "x"))
    attempt("extend-import-state", lambda: HOOKS.append(print))
    attempt("loaded-module", lambda: setattr(json, "dumps", print))
    attempt("loaded-class", lambda: setattr(json.encoder.JSONEncoder, "default", print))
    attempt("loaded-function", lambda: setattr(json.detect_encoding, "hook", print))
    attempt("runtime-state", lambda: POLICY.clear())
    attempt("sys-path", lambda: sys.path.insert(0, "/tmp/planted"))
    attempt("domain-api", lambda: f.live_domains())
    print("made shared", f.slot_of(id(Made)) is None, f.sealed() == loader.slot,
          flush=True)
loader.run_sealed(library_body)
def import_unguarded():
    attempt("unguarded-loaded", lambda: setattr(json, "loads", print))
f.register_broker(import_unguarded)
def imports():
    f.call_shared(import_unguarded)
    attempt("function-extends", lambda: HOOKS.append(print))
mine.run_sealed(imports)
print("dumps intact", json.dumps({"a": 1}), flush=True)
import os; os._exit(0)
""", runtime)
    for label in ("own-class", "own-function", "own-module", "made-by-loaded-code",
                  "extend-import-state", "unguarded-loaded"):
        assert f"\n{label} DONE" in "\n" + out, out
    for label, who in (("loaded-module", "libraries of thief"),
                       ("loaded-class", "libraries of thief"),
                       ("loaded-function", "libraries of thief"),
                       ("runtime-state", "libraries of thief"),
                       ("sys-path", "libraries of thief"),
                       ("function-extends", "thief")):
        assert f"\n{label} REFUSED function '{who}' may not " in "\n" + out, out
    assert "domain-api ERROR SealedError" in out
    assert "made shared True True" in out
    assert 'dumps intact {"a": 1}' in out


def test_function_code_uses_only_its_own_queues(runtime: str) -> None:
    """The runtime hands a function's input and result between threads through shared
    queue.SimpleQueue objects: once guard_queue_type() ran, sealed code with a private
    heap (a function, a thread it started) is refused get and put on a shared queue,
    by method, by the class's method and through the _nowait forms; its own queue
    works. The controls: the same calls outside sealed code, and in the library loader
    (heapless: libraries make and use shared queues as they load)."""
    out = run("""
import queue
RUNTIMES = queue.SimpleQueue()
RUNTIMES.put("in flight")
f.guard_queue_type(queue.SimpleQueue)
f.guard_queue_type(queue.SimpleQueue)  # twice: once in effect
def doors(prefix):
    attempt(prefix + "get", lambda: RUNTIMES.get(timeout=0.01))
    attempt(prefix + "get-nowait", lambda: RUNTIMES.get_nowait())
    attempt(prefix + "class-get", lambda: queue.SimpleQueue.get(RUNTIMES, False))
    attempt(prefix + "put", lambda: RUNTIMES.put("planted"))
    attempt(prefix + "put-nowait", lambda: RUNTIMES.put_nowait("planted"))
    attempt(prefix + "size", lambda: RUNTIMES.qsize())
def function_code():
    doors("sealed-")
    own = queue.SimpleQueue()
    attempt("own", lambda: (own.put(1), own.get()))
    done = []
    def thread():
        doors("thread-")
        done.append(True)
    t = threading.Thread(target=thread)
    t.start()
    t.join()
mine.run_sealed(function_code)
loader = f.Domain()
f.name_slot(loader.slot, "libraries of thief")
loader.run_sealed(lambda: doors("heapless-"))
doors("outside-")
import os; os._exit(0)
""", runtime)
    for prefix in ("sealed-", "thread-"):
        for door in ("get", "get-nowait", "class-get"):
            assert (f"\n{prefix}{door} REFUSED function 'thief' may not get from a shared "
                    "_queue.SimpleQueue") in "\n" + out, out
        for door in ("put", "put-nowait"):
            assert (f"\n{prefix}{door} REFUSED function 'thief' may not put into a "
                    "shared _queue.SimpleQueue") in "\n" + out, out
        assert f"\n{prefix}size DONE" in "\n" + out, out  # a count reads no item
    assert "\nown DONE" in "\n" + out, out
    for prefix in ("heapless-", "outside-"):
        for door in ("get", "get-nowait", "class-get", "put", "put-nowait", "size"):
            assert f"\n{prefix}{door} " in "\n" + out, out
            assert f"\n{prefix}{door} REFUSED" not in "\n" + out, out


def test_function_code_sees_no_frame_below_its_own(runtime: str) -> None:
    """Below a function's entry are the invoker's frames (its locals: data in flight).
    f_back and sys._getframe stop there; frames of shared code the function called, and
    its own under them, stay visible (logging's findCaller needs them)."""
    out = run("""
import logging
def invoker():
    in_flight = {"other": "secret of another function"}
    return mine.run_sealed(compile_and_run)
def compile_and_run():
    ns = {}
    exec("def entry():\\n    return walk()", {"walk": walk}, ns)
    return ns["entry"]()
def walk():
    seen, frame = [], sys._getframe(0)
    while frame is not None:
        seen.append(frame.f_code.co_name)
        frame = frame.f_back
    print("walk " + " ".join(seen), flush=True)  # no repr of a list: see below
    try:
        sys._getframe(len(seen))
    except ValueError as exc:
        print("getframe", exc, flush=True)
    print("logging", logging.root.findCaller()[2], flush=True)
# On a thread of its own, as the runtime runs each function: CPython keeps per-thread
# state (repr's recursion guard, in the thread state's dict) that a sealed call makes in
# the private heap, and a thread's teardown reads.
sealed = threading.Thread(target=invoker); sealed.start(); sealed.join()
walk()
import os; os._exit(0)
""", runtime)
    lines = out.splitlines()
    assert lines[0] == "walk walk entry", out
    assert "getframe call stack is not deep enough" in out
    assert out.count("logging walk") == 2, out
    # The control, unsealed: the whole stack.
    assert "walk walk <module>" in lines, out
    assert out.count("getframe call stack is not deep enough") == 2, out


def test_threads_a_function_starts_run_in_its_domain(runtime: str) -> None:
    """Born sealed *and* inside the creator's domain: what they make is private (so not
    shared code), the guard holds for them, and the domain counts them."""
    out = run("""
def born():
    made = [1, 2]
    print("born", f.current_domain() is mine, f.sealed() == mine.slot,
          f.slot_of(id(made)) == mine.slot, mine.entered, flush=True)
    attempt("thread-door", lambda: setattr(json, "dumps", print))
def thief():
    t = threading.Thread(target=born); t.start(); t.join()
mine.run_sealed(thief)
print("after", mine.entered, flush=True)
import os; os._exit(0)
""", runtime)
    assert "born True True True 2" in out, out
    assert "thread-door REFUSED function 'thief' may not change 'dumps'" in out
    assert "after 0" in out
