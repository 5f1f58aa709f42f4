"""Private-heap probes: Python objects a function thread allocates inside its domain.

Run like probes.py (same runner, same FAASTLANE-PROBE lines):
``python heap_probes.py [--require-keys] [NAME...]``.  Each probe runs in a forked child
whose SIGSEGV goes to ``_faastlane``'s fault reporter; the tests in
test_private_heaps*.py decide.

Rule inside a domain with a private heap: no object made there may outlive the exit
gate in shared hands (the promotion of results is the exit gate's job, not the
probes').  So the probes pass facts out through ``Box``, a ctypes buffer made in
shared memory, and keep private objects alive on purpose with an extra reference
taken inside the domain (``keep``), never from shared state.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import threading
import time
from collections.abc import Callable

import _faastlane
from heap_kinds import KINDS
from probes import Note, Probe, in_thread, peek, run_probe

Box = ctypes.c_uint64 * 16

_incref = ctypes.pythonapi.Py_IncRef
_incref.argtypes = [ctypes.py_object]
_incref.restype = None
_incref(None)  # warm ctypes' converters in the shared heap
peek(id(Box), 8)


def keep(obj: object) -> None:
    """An extra reference, so ``obj`` outlives the frame that made it (a deliberate
    leak: nothing shared ever points at it)."""
    _incref(obj)


# Every size class a function allocates in: obmalloc's small pools, the heap's
# large-block classes (> 512 bytes) and its page extents (> 256 KiB).
FACTORIES: dict[str, Callable[[], object]] = {
    "str": lambda: "secret-str-" + "s" * 40 + str(12345),
    # Built at run time: a constant expression would be folded into a shared
    # code constant.
    "bytes": lambda: b"secret-bytes-" + str(12345).encode() * 40,
    "dict": lambda: {"k" + str(i): "v" + str(i) for i in range(12)},
    "list": lambda: [str(i) + "-item" for i in range(300)],
    "mid_bytes": lambda: b"m" * 5000,
    "large_bytes": lambda: b"L" * (2 << 20),
}
assert list(FACTORIES) == KINDS


def make_private(domain: _faastlane.Domain, kind: str, box: Box) -> None:
    """Inside ``domain``: make a ``kind`` object, keep it, put its address, the size
    to read and its slot in ``box``."""

    def body() -> None:
        obj = FACTORIES[kind]()
        keep(obj)
        box[0] = id(obj)
        box[1] = min(sys.getsizeof(obj), 4096)
        slot = _faastlane.slot_of(id(obj))
        box[2] = slot + 1 if slot is not None else 0
        if isinstance(obj, list):  # where the item storage lives (slot + 1)
            items = ctypes.c_void_p.from_address(id(obj) + 24).value or 0
            items_slot = _faastlane.slot_of(items)
            box[3] = items_slot + 1 if items_slot is not None else 0

    with domain:
        body()


def heap_domain(note: Note, label: str) -> _faastlane.Domain:
    domain = _faastlane.Domain(private_heap=True)
    note(f"{label}_key", domain.key)
    note(f"{label}_slot", domain.slot)
    return domain


# ---------------------------------------------------------------------------
# Faults: another domain's thread, or a thread outside domains, reads a private object


def _read_by_other_domain(kind: str) -> Probe:
    def probe(note: Note) -> None:
        a = heap_domain(note, "a")
        b = heap_domain(note, "b")
        box = Box()
        make_private(a, kind, box)
        note("a_address", int(box[0]))
        note("in_a_slot", int(box[2]) - 1 == a.slot)

        def reader() -> None:
            with b:
                note("about_to_read", True)
                peek(int(box[0]), int(box[1]))
                note("read", True)

        in_thread(reader)

    probe.__name__ = f"private_{kind}_read_by_other_domain_thread_faults_with_owner_pkey"
    return probe


def private_str_read_from_outside_domains_faults_with_owner_pkey(note: Note) -> None:
    a = heap_domain(note, "a")
    box = Box()
    make_private(a, "str", box)
    note("a_address", int(box[0]))
    note("about_to_read", True)
    peek(int(box[0]), int(box[1]))
    note("read", True)


def private_list_items_read_from_outside_domains_faults_with_owner_pkey(note: Note) -> None:
    """The list's item array (grown by list_resize) lies in the owner's heap too."""
    a = heap_domain(note, "a")
    box = Box()
    make_private(a, "list", box)
    items = ctypes.c_void_p.from_address
    note("items_slot_is_a", int(box[3]) - 1 == a.slot)
    with a:
        box[4] = items(int(box[0]) + 24).value or 0
    note("items_address", int(box[4]))
    note("about_to_read", True)
    peek(int(box[4]), 64)
    note("read", True)


# ---------------------------------------------------------------------------
# Controls


def function_thread_reads_back_its_own_private_objects(note: Note) -> None:
    a = heap_domain(note, "a")
    boxes = {kind: Box() for kind in FACTORIES}
    for kind, box in boxes.items():
        make_private(a, kind, box)
    results = Box()

    def body() -> None:
        for i, kind in enumerate(FACTORIES):
            obj = ctypes.cast(int(boxes[kind][0]), ctypes.py_object).value
            results[i] = 1 if obj == FACTORIES[kind]() else 0

    in_thread(lambda: _inside(a, body))
    note("equal", {k: int(results[i]) for i, k in enumerate(FACTORIES)})
    note("in_slot", {k: int(b[2]) - 1 == a.slot for k, b in boxes.items()})


def _inside(domain: _faastlane.Domain, body: Callable[[], None]) -> None:
    with domain:
        body()


def function_threads_read_shared_input_and_shared_objects_stay_shared(note: Note) -> None:
    shared = "shared-input-" + "i" * 100
    shared_big = b"S" * (1 << 20)
    a = heap_domain(note, "a")
    b = heap_domain(note, "b")
    out = Box()

    def body(i: int) -> None:
        out[i] = 1 if (shared.endswith("i" * 100) and shared_big[-1] == ord("S")) else 0

    in_thread(lambda: _inside(a, lambda: body(0)))
    in_thread(lambda: _inside(b, lambda: body(1)))
    note("read", [int(out[0]), int(out[1])])
    note("shared_slot", [_faastlane.slot_of(id(shared)), _faastlane.slot_of(id(shared_big))])


def shared_list_grown_inside_a_domain_keeps_its_storage_shared(note: Note) -> None:
    """Realloc keeps a block in its owner's heap: appending to a shared list from a
    function thread leaves the list readable by everybody."""
    shared: list[int] = [-1]  # has item storage: realloc keeps it in its owner's heap
    a = heap_domain(note, "a")

    def body() -> None:
        for i in range(1000):
            shared.append(i % 256)  # small ints are immortal and shared

    in_thread(lambda: _inside(a, body))
    items = ctypes.c_void_p.from_address(id(shared) + 24).value or 0
    note("items_slot", _faastlane.slot_of(items))
    note("sum", sum(shared) + 1)


def shared_containers_grown_inside_a_domain_stay_readable_outside(note: Note) -> None:
    """Empty shared containers grown by a function thread: their new storage (dict
    keys, list items, set table, deque blocks, bytearray buffer) goes to the
    container's heap, so the orchestrator still reads them after the exit gate."""
    import collections

    names = [f"name{i}" for i in range(64)]  # shared strings
    shared_list: list[str] = []
    shared_dict: dict[str, int] = {}
    shared_set: set[str] = set()
    shared_deque: collections.deque[int] = collections.deque()
    shared_bytes = bytearray()
    module_globals: dict[str, object] = {"__name__": "shared_module"}
    a = heap_domain(note, "a")

    def body() -> None:
        for i, name in enumerate(names):
            shared_list.append(name)
            shared_dict[name] = i
            shared_set.add(name)
            shared_deque.append(i)
            shared_bytes.append(i)
            module_globals[name] = i

    in_thread(lambda: _inside(a, body))
    note("about_to_read", True)
    note("list", sum(len(x) for x in shared_list))
    note("dict", sum(shared_dict.values()) + sum(map(len, shared_dict)))
    note("set", sum(len(x) for x in shared_set))
    note("deque", sum(shared_deque))
    note("bytearray", sum(shared_bytes))
    note("globals", sum(v for v in module_globals.values() if isinstance(v, int)))
    items = ctypes.c_void_p.from_address(id(shared_list) + 24).value or 0
    note("list_items_slot", _faastlane.slot_of(items))


def names_interned_inside_a_domain_are_shared_copies(note: Note) -> None:
    """Interning is a shared-heap section: a name built inside a domain and interned
    (setattr, sys.intern) enters the shared interned dict as a shared copy."""

    class Shared:
        pass

    target = Shared()
    a = heap_domain(note, "a")
    box = Box()

    def body() -> None:
        name = "attr_" + str(12345)
        box[0] = 1 if _faastlane.slot_of(id(name)) == a.slot else 0
        setattr(target, name, 7)
        interned = sys.intern("other_" + str(678))
        box[1] = 1 if _faastlane.slot_of(id(interned)) is None else 0

    in_thread(lambda: _inside(a, body))
    note("built_inside", int(box[0]))
    note("interned_shared", int(box[1]))
    note("about_to_read", True)
    note("lookup", sys.intern("other_" + str(678)) == "other_678")
    note("attr", getattr(target, "attr_" + str(12345)))
    note("attr_key_slot", [_faastlane.slot_of(id(k)) for k in vars(target)])


def _shared_function(x):  # type: ignore[no-untyped-def]  # no annotations: on purpose
    return x + 1


def _annotated(x: int) -> int:
    return x


class _NoAnnotations:
    pass


class _NoSubclasses:
    pass


def _type_slot(cls: type, index: int) -> int:
    """Word ``index`` of a PyTypeObject (3.13 layout: tp_base 32, tp_bases 42, tp_mro 43,
    tp_subclasses 45)."""
    return ctypes.c_void_p.from_address(id(cls) + 8 * index).value or 0


def state_made_on_first_use_lives_with_its_owner(note: Note) -> None:
    """What an object makes for itself on first use (patches 0008, 0010) -- a shared
    function's ``__dict__`` and ``__annotations__``, a class's and a module's
    ``__annotations__``, a code object's ``co_varnames``/``co_code`` caches, a class's
    table of subclasses -- is made where the object lives: made first by a function
    thread (inspect.signature reads them; botocore subclasses BaseClient for every
    client), it stays shared and usable by everyone after the exit gate; a function's
    own function keeps its dict private."""
    import types

    module = types.ModuleType("shared_module")
    code = _shared_function.__code__
    a = heap_domain(note, "a")
    box = Box()

    def body() -> None:
        made = [_shared_function.__dict__, _shared_function.__annotations__,
                _annotated.__annotations__, _NoAnnotations.__annotations__,
                module.__annotations__, code.co_varnames, code.co_code]
        for i, obj in enumerate(made):
            box[i] = 0 if _faastlane.slot_of(id(obj)) is None else 1

        def own() -> None:
            pass

        own_dict = own.__dict__
        keep(own)
        box[8] = 1 if _faastlane.slot_of(id(own_dict)) == a.slot else 0
        keep(type("Sub", (_NoSubclasses,), {}))

    assert (_type_slot(_NoSubclasses, 32), _type_slot(_NoSubclasses, 42),
            _type_slot(_NoSubclasses, 43)) == (id(object), id(_NoSubclasses.__bases__),
                                               id(_NoSubclasses.__mro__))
    in_thread(lambda: _inside(a, body))
    note("subclass_table_slot", _faastlane.slot_of(_type_slot(_NoSubclasses, 45)))
    note("private", [int(box[i]) for i in range(7)])
    note("own_dict_private", int(box[8]))
    note("about_to_read", True)
    note("read", [len(_shared_function.__dict__), len(_shared_function.__annotations__),
                  len(_annotated.__annotations__), len(_NoAnnotations.__annotations__),
                  len(module.__annotations__), len(code.co_varnames), len(code.co_code) > 0])
    note("subclassed_outside", type("Outside", (_NoSubclasses,), {}).__name__)


def fork_leaves_a_domain_threads_state_alone(note: Note) -> None:
    """A thread that used a shared ``threading.local`` inside its domain (botocore does)
    holds the function's objects in its thread state: the local's per-thread dict. When
    another thread forks, the child deletes every other thread's state (patch 0011): it
    must not clear that one -- clearing reads the function's heap, a fault under keys.
    The child exits cleanly and runs no finalizer of the function's objects."""
    local = threading.local()
    a = heap_domain(note, "a")
    read_fd, write_fd = os.pipe()
    parked, release = threading.Event(), threading.Event()

    class Finalized:
        def __del__(self) -> None:
            os.write(write_fd, b"cleared")

    def body() -> None:
        local.value = Finalized()

    def serve() -> None:  # a warm worker: served its function, now parked
        _inside(a, body)
        parked.set()
        release.wait()

    threading.Thread(target=serve, daemon=True).start()
    parked.wait()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    os.close(write_fd)
    note("child_status", status)
    note("finalized_in_child", os.read(read_fd, 64).decode())


def two_domains_live_at_once_interleave_without_faults(note: Note) -> None:
    a = heap_domain(note, "a")
    b = heap_domain(note, "b")
    out = Box()
    go = threading.Barrier(2)

    def worker(domain: _faastlane.Domain, index: int) -> None:
        go.wait()
        with domain:
            _churn(out, index)

    threads = [threading.Thread(target=worker, args=(d, i)) for i, d in enumerate((a, b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    note("ok", [int(out[0]), int(out[1])])
    note("switches", int(out[2]) + int(out[3]))


def _churn(out: Box, index: int) -> None:
    total = 0
    for round_ in range(40):
        data = {str(i): [str(i)] * 3 for i in range(200)}
        blob = bytes(range(256)) * 40
        total += len(data) + len(blob)
        if round_ % 5 == 0:
            time.sleep(0.001)  # let the other domain's thread run
            out[2 + index] += 1
    out[index] = 1 if total == 40 * (200 + 256 * 40) else 0


def cycles_made_inside_a_domain_are_collected_inside_it(note: Note) -> None:
    # What the runner left uncollected before it forked this probe is not the domain's.
    note("collected_before", gc.collect())
    a = heap_domain(note, "a")
    out = Box()

    def body() -> None:
        for _ in range(500):
            x: list[object] = []
            x.append(x)
            y = {"self": None}
            y["self"] = y
        out[0] = gc.collect()

    in_thread(lambda: _inside(a, body))
    note("collected_inside", int(out[0]))
    note("collected_outside", gc.collect())
    note("heap", a.heap_stats())


def fifty_sequential_private_heaps_recycle_keys(note: Note) -> None:
    keys = set()
    ok = 0
    for _ in range(50):
        d = _faastlane.Domain(private_heap=True)
        keys.add(d.key)
        box = Box()
        make_private(d, "large_bytes", box)
        make_private(d, "dict", box)

        def check(box: Box = box) -> None:
            box[5] = 1 if ctypes.cast(int(box[0]), ctypes.py_object).value["k3"] == "v3" else 0

        in_thread(lambda d=d, check=check: _inside(d, check))  # type: ignore[misc]
        ok += int(box[5])
        d.destroy()
    note("ok", ok)
    note("keys", sorted(k for k in keys if k is not None))
    note("live", _faastlane.counters()["live"])


def private_object_escaped_into_shared_list_faults_on_read_with_owner_pkey(note: Note) -> None:
    """An escape: a function leaves a private object in shared state.  Until the exit
    gate detects escapes (PRIVATE_HEAPS.md, section 5), the orchestrator touching it
    dies of the owner's key -- it never reads the private bytes."""
    shared: list[object] = [None]
    a = heap_domain(note, "a")

    def body() -> None:
        shared[0] = "private-" + str(10**6)

    in_thread(lambda: _inside(a, body))
    # The item's address, read from the list's (shared) item array: even a
    # reference count update of the private object would fault.
    items = ctypes.c_void_p.from_address(id(shared) + 24).value or 0
    note("a_address", ctypes.c_void_p.from_address(items).value)
    note("about_to_read", True)
    note("read", str(shared[0]))


def _warm_function(a: _faastlane.Domain, box: Box) -> None:
    """One invocation of a function with a lazily filled module-level cache: its
    namespace (kept alive inside the domain, found through box[0]) holds a "model"
    loaded on the first call only; box[1] counts loads, box[2] the calls served."""

    def invoke() -> None:
        if box[0] == 0:
            namespace: dict[str, object] = {}
            keep(namespace)
            box[0] = id(namespace)
        namespace = ctypes.cast(int(box[0]), ctypes.py_object).value
        if "model" not in namespace:
            namespace["model"] = {"weights": [float(i) / 7 for i in range(5000)]}
            box[1] += 1
        model = namespace["model"]
        box[2] += 1 if len(model["weights"]) == 5000 else 0  # type: ignore[index]
        box[3] = id(model)

    in_thread(lambda: _inside(a, invoke))


def warm_cache_is_reused_across_invocations_and_unreadable_to_others(note: Note) -> None:
    a = heap_domain(note, "a")
    b = heap_domain(note, "b")
    box = Box()
    for _ in range(3):
        _warm_function(a, box)
    note("loads", int(box[1]))
    note("calls", int(box[2]))
    note("a_address", int(box[3]))
    note("in_a_slot", _faastlane.slot_of(int(box[3])) == a.slot)

    def other_function() -> None:
        with b:
            note("about_to_read", True)
            peek(int(box[3]), 16)
            note("read", True)

    in_thread(other_function)


def destroyed_private_heap_address_faults_without_key(note: Note) -> None:
    a = heap_domain(note, "a")
    box = Box()
    make_private(a, "str", box)
    a.destroy()
    note("a_address", int(box[0]))
    note("about_to_read", True)
    peek(int(box[0]), 8)
    note("read", True)


# ---------------------------------------------------------------------------
# The hand-off domain (_faastlane.set_handoff): data in flight between functions


def _handoff_value(note: Note, box: Box) -> _faastlane.Domain:
    """The hand-off domain, made so, and a value built in its heap (its address, the
    address of a leaf, and the leaf's size in ``box``)."""
    h = heap_domain(note, "a")  # the owner whose key a fault must carry
    _faastlane.set_handoff(h)
    with h:
        value = _faastlane.deep_copy_json({"secret": "in-flight-" + str(10**9)})
        keep(value)
        box[0] = id(value["secret"])
        box[1] = sys.getsizeof(value["secret"])
        box[2] = id(value)
    note("leaf_in_handoff", _faastlane.slot_of(int(box[0])) == h.slot)
    return h


def handoff_data_read_by_a_function_domain_faults_with_handoff_pkey(note: Note) -> None:
    box = Box()
    _handoff_value(note, box)
    b = heap_domain(note, "b")

    def reader() -> None:
        with b:  # a function's rights: key 0 and its own key
            note("about_to_read", True)
            peek(int(box[0]), int(box[1]))
            note("read", True)

    in_thread(reader)


def handoff_data_read_by_a_thread_a_function_started_faults(note: Note) -> None:
    """The thread outlives its function's invocation (run_sealed returned) and leaves
    the domain with key 0 only, never the runtime's outside value."""
    box = Box()
    _handoff_value(note, box)
    b = heap_domain(note, "b")
    flags = Box()  # [0]: the function returned; [1]: the thief read (no shared lock
    # either side may wait on: a waiter made by the thief would be private to it)

    def thief() -> None:
        while not flags[0]:
            time.sleep(0.01)
        note("about_to_read", True)
        peek(int(box[0]), int(box[1]))
        note("read", True)
        flags[1] = 1

    # Made outside, started by the function: what start() makes is the function's
    # (so the probe polls a shared flag rather than joining it).
    thread = threading.Thread(target=thief, daemon=True)
    b.run_sealed(thread.start)
    note("function_returned", True)
    flags[0] = 1
    deadline = time.monotonic() + 10
    while not flags[1] and time.monotonic() < deadline:
        time.sleep(0.01)


def handoff_data_is_read_by_runtime_threads_and_crosses_an_entry_gate_as_a_copy(
        note: Note) -> None:
    """The controls: the runtime's threads outside every domain hold the hand-off key
    (the main thread; a thread started after, also once a signal handler restored its
    PKRU); a function gets its input as its own copy, made in its heap."""
    import signal

    box = Box()
    h = _handoff_value(note, box)
    note("main_read", peek(int(box[0]), int(box[1])) != b"")
    signal.signal(signal.SIGUSR1, lambda *_: None)
    out = Box()

    def runtime_thread() -> None:
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
        out[0] = 1 if peek(int(box[0]), int(box[1])) else 0

    in_thread(runtime_thread)
    note("thread_read", int(out[0]))
    value = ctypes.cast(int(box[2]), ctypes.py_object).value
    b = heap_domain(note, "b")

    def function(event: dict[str, str]) -> None:
        out[1] = 1 if event["secret"] == "in-flight-" + str(10**9) else 0
        out[2] = 1 if _faastlane.slot_of(id(event["secret"])) == b.slot else 0
        out[3] = 1 if _faastlane.slot_of(id(event)) == b.slot else 0
        event["secret"] = "changed"

    b.run_sealed_on(value, function)
    note("copy", [int(out[1]), int(out[2]), int(out[3])])
    note("original_kept", value["secret"] == "in-flight-" + str(10**9))
    note("handoff_slot", h.slot)


COMMON: list[Probe] = [
    function_thread_reads_back_its_own_private_objects,
    function_threads_read_shared_input_and_shared_objects_stay_shared,
    shared_list_grown_inside_a_domain_keeps_its_storage_shared,
    shared_containers_grown_inside_a_domain_stay_readable_outside,
    names_interned_inside_a_domain_are_shared_copies,
    two_domains_live_at_once_interleave_without_faults,
    cycles_made_inside_a_domain_are_collected_inside_it,
    fifty_sequential_private_heaps_recycle_keys,
    state_made_on_first_use_lives_with_its_owner,
    fork_leaves_a_domain_threads_state_alone,
]

WITH_KEYS: list[Probe] = [
    *(_read_by_other_domain(kind) for kind in FACTORIES),
    private_str_read_from_outside_domains_faults_with_owner_pkey,
    private_list_items_read_from_outside_domains_faults_with_owner_pkey,
    private_object_escaped_into_shared_list_faults_on_read_with_owner_pkey,
    warm_cache_is_reused_across_invocations_and_unreadable_to_others,
    destroyed_private_heap_address_faults_without_key,
    handoff_data_read_by_a_function_domain_faults_with_handoff_pkey,
    handoff_data_read_by_a_thread_a_function_started_faults,
    handoff_data_is_read_by_runtime_threads_and_crosses_an_entry_gate_as_a_copy,
]


def main(argv: list[str]) -> int:
    """Run the selected probes (all that apply by default), one line each."""
    require_keys = "--require-keys" in argv
    names = [a for a in argv if not a.startswith("--")]
    if require_keys and not _faastlane.available():
        print(f"heap probes: keys required: {_faastlane.unavailable_reason()}", flush=True)
        return 2
    table = COMMON + (WITH_KEYS if _faastlane.available() else [])
    if names:
        table = [p for p in COMMON + WITH_KEYS if p.__name__ in names]
    for probe in table:
        print(run_probe(probe).to_line(), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
