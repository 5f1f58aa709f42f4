"""C-malloc probes: memory C extensions obtain with malloc inside a private heap.

Run like heap_probes.py (same runner, same FAASTLANE-PROBE lines), by an interpreter of
the cpython-mpk runtime that has numpy and Pillow (the runtime's test venv):
``python malloc_probes.py [--require-keys] [NAME...]``.

numpy array data, Pillow image buffers and buffers a C library mallocs (here libc's
``malloc`` through ctypes) made by a thread inside a domain with a private heap must lie
in the domain's slot -- unreadable to any other domain's thread with keys -- and
everything else must stay shared: the raw domain, glibc's and the loader's own
allocations, small numpy blocks once freed.

Everything a probe calls inside a domain is warmed up at import, outside domains
(ctypes function objects, numpy's ufunc dispatch caches, Pillow's plugins): a library
cache first filled inside a domain would hold private objects (an escape, PRIVATE_HEAPS.md
section 5), which is not what these probes test.
"""

from __future__ import annotations

import os

# OpenBLAS's worker threads are started at import, outside every domain: with keys they
# could not read a function's matrices.  One thread (the caller) is what mpk mode runs
# (PRIVATE_HEAPS.md, "C malloc").
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"
# C malloc is routed by domain only on request (PRIVATE_HEAPS.md section 7).
os.environ["FAASTLANE_MPK_MALLOC"] = "on"

import contextvars  # noqa: E402
import ctypes  # noqa: E402
import hashlib  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import _faastlane  # noqa: E402
import numpy as np  # noqa: E402
from heap_probes import Box, heap_domain, keep  # noqa: E402
from malloc_probes_kinds import C_KINDS  # noqa: E402
from PIL import Image, ImageDraw, ImageFilter  # noqa: E402
from probes import Note, Probe, in_thread, peek, run_probe  # noqa: E402

c_void_p, c_size_t, c_int = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int

# The process's malloc (the runtime's own definitions: CDLL(None) resolves like any
# shared object does), not libc.so's private entry points.
LIBC = ctypes.CDLL(None)


def _c(lib: ctypes.CDLL, name: str, restype: object, *argtypes: object) -> ctypes._CFuncPtr:
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


malloc = _c(LIBC, "malloc", c_void_p, c_size_t)
calloc = _c(LIBC, "calloc", c_void_p, c_size_t, c_size_t)
realloc = _c(LIBC, "realloc", c_void_p, c_void_p, c_size_t)
reallocarray = _c(LIBC, "reallocarray", c_void_p, c_void_p, c_size_t, c_size_t)
free = _c(LIBC, "free", None, c_void_p)
posix_memalign = _c(LIBC, "posix_memalign", c_int, ctypes.POINTER(c_void_p), c_size_t, c_size_t)
aligned_alloc = _c(LIBC, "aligned_alloc", c_void_p, c_size_t, c_size_t)
memalign = _c(LIBC, "memalign", c_void_p, c_size_t, c_size_t)
valloc = _c(LIBC, "valloc", c_void_p, c_size_t)
usable_size = _c(LIBC, "malloc_usable_size", c_size_t, c_void_p)
strdup = _c(LIBC, "strdup", c_void_p, ctypes.c_char_p)
raw_malloc = _c(ctypes.pythonapi, "PyMem_RawMalloc", c_void_p, c_size_t)
raw_free = _c(ctypes.pythonapi, "PyMem_RawFree", None, c_void_p)
capsule_pointer = _c(ctypes.pythonapi, "PyCapsule_GetPointer", c_void_p, ctypes.py_object,
                     ctypes.c_char_p)
OUT = c_void_p()

# numpy's ndarray struct: PyObject_HEAD, data, nd, dimensions (the dims/strides block).
DIMS_OFFSET = 32


def _inside(domain: _faastlane.Domain, body: Callable[[], None]) -> None:
    """Run ``body`` inside ``domain`` on this thread, whose context is made first, in
    the shared heap: a ContextVar set inside (numpy's errstate in linalg) would
    otherwise create the thread's context in the private heap, and the thread's
    teardown outside the domain would free it (see
    contextvar_set_inside_on_a_fresh_thread_escapes_through_the_thread_state)."""
    contextvars.copy_context()
    with domain:
        body()


def slot(address: int | None) -> int | None:
    return _faastlane.slot_of(address) if address else None


def data_of(arr: np.ndarray) -> int:
    return int(arr.__array_interface__["data"][0])


def dims_of(arr: np.ndarray) -> int:
    return int(c_void_p.from_address(id(arr) + DIMS_OFFSET).value or 0)


def pillow_pixels(im: Image.Image) -> tuple[int, int]:
    """(address of Pillow's Imaging struct, address of its first pixel line).

    Layout of ImagingMemoryInstance (Pillow 11+): mode, type, depth, bands, xsize,
    ysize (ints), palette, image8, image32, image (pointers); checked against the size.
    """
    struct = int(capsule_pointer(im.getim(), b"Pillow Imaging"))
    xsize, ysize = (ctypes.c_int.from_address(struct + off).value for off in (16, 20))
    assert (xsize, ysize) == im.size, f"unknown Pillow Imaging layout {(xsize, ysize)}"
    lines = int(c_void_p.from_address(struct + 48).value or 0)
    return struct, int(c_void_p.from_address(lines).value or 0)


# ---------------------------------------------------------------------------
# Work a function does with numpy and Pillow (warmed up at import)


def workload() -> bytes:
    """numpy (BLAS, LAPACK, sort, FFT, random) and Pillow (draw, resize, blur) results,
    hashed: equal wherever they are computed."""
    h = hashlib.sha256()
    rng = np.random.default_rng(7)
    a = rng.random((96, 96))
    b = a @ a.T + np.eye(96) * 96
    h.update(np.round(np.linalg.inv(b), 10).tobytes())
    h.update(np.sort(rng.integers(0, 1000, 5000)).tobytes())
    h.update(np.round(np.abs(np.fft.rfft(rng.random(4096))), 8).tobytes())
    h.update((np.arange(3000, dtype=np.float32) * 0.5).astype(np.float64).sum().tobytes())
    im = Image.new("RGB", (211, 157), (10, 20, 30))
    draw = ImageDraw.Draw(im)
    for i in range(12):
        draw.rectangle((i * 9, i * 5, i * 9 + 40, i * 5 + 30), fill=(i * 20, 255 - i * 7, 90))
    draw.ellipse((50, 40, 180, 140), outline=(250, 250, 0), width=3)
    out = im.resize((97, 61), Image.Resampling.BICUBIC).filter(ImageFilter.GaussianBlur(2))
    h.update(out.tobytes())
    h.update(im.convert("L").rotate(17, expand=True).tobytes())
    return h.digest()


def _c_allocations() -> dict[str, int]:
    """One of each C allocation call; addresses (to be freed by _free_all)."""
    made: dict[str, int] = {}
    made["malloc"] = malloc(100)
    made["malloc_huge"] = malloc(3 << 20)
    made["calloc"] = calloc(10, 100)
    p = malloc(40)
    ctypes.memmove(p, b"keep-me-when-grown", 18)
    made["realloc"] = realloc(p, 10000)
    made["reallocarray"] = reallocarray(None, 100, 30)
    assert posix_memalign(ctypes.byref(OUT), 64, 1000) == 0
    made["posix_memalign"] = int(OUT.value or 0)
    made["aligned_alloc"] = aligned_alloc(4096, 5000)
    made["memalign"] = memalign(256, 300)
    made["valloc"] = valloc(100)
    return made


def _check_c_allocations(made: dict[str, int]) -> dict[str, bool]:
    return {
        "calloc_zeroed": ctypes.string_at(made["calloc"], 1000) == bytes(1000),
        "realloc_kept": ctypes.string_at(made["realloc"], 18) == b"keep-me-when-grown",
        "posix_memalign_aligned": made["posix_memalign"] % 64 == 0,
        "aligned_alloc_aligned": made["aligned_alloc"] % 4096 == 0,
        "memalign_aligned": made["memalign"] % 256 == 0,
        "valloc_aligned": made["valloc"] % 4096 == 0,
        "usable": usable_size(made["malloc"]) >= 100
        and usable_size(made["malloc_huge"]) >= 3 << 20
        and usable_size(made["aligned_alloc"]) >= 5000,
    }


def _free_all(made: dict[str, int]) -> None:
    for address in made.values():
        free(address)


def _warm_up() -> None:
    workload()
    _free_all(_c_allocations())
    free(strdup(b"warm"))
    raw_free(raw_malloc(10))
    arr = np.arange(10.0)
    data_of(arr), dims_of(arr), np.zeros(1000).sum(), np.ones(50000).sum()
    pillow_pixels(Image.new("L", (30, 20), 0x5A))
    _faastlane.slot_of(0)
    threading.Thread(target=lambda: None).start()


_warm_up()


# ---------------------------------------------------------------------------
# Placement (with or without keys)


def c_allocations_inside_a_private_heap_lie_in_its_slot(note: Note) -> None:
    a = heap_domain(note, "a")
    inside: dict[str, int] = {}
    box = (ctypes.c_uint64 * 32)()

    def body() -> None:
        small, mid, large = np.arange(10.0), np.arange(1000.0), np.arange(300_000.0)
        zeros = np.zeros(200_000)
        im = Image.new("L", (300, 200), 0x5A)
        struct, line = pillow_pixels(im)
        resized = im.resize((150, 100))
        made = _c_allocations()
        checks = _check_c_allocations(made)
        text = strdup(b"via-libc")
        raw = raw_malloc(100)
        for i, (name, address) in enumerate([
            ("numpy_small", data_of(small)), ("numpy_mid", data_of(mid)),
            ("numpy_large", data_of(large)), ("numpy_zeros", data_of(zeros)),
            ("pillow_struct", struct), ("pillow_pixels", line),
            ("pillow_resized", pillow_pixels(resized)[1]),
            *made.items(),
            ("numpy_dims", dims_of(large)), ("raw", raw), ("strdup", text),
        ]):
            box[i] = address
            inside[name] = i
        box[31] = int(all(checks.values())) + 2 * int(not zeros.any())
        box[30] = int(line != 0 and ctypes.string_at(line, 300) == b"\x5a" * 300)
        _free_all(made)
        free(text)
        raw_free(raw)

    in_thread(lambda: _inside(a, body))
    note("slots", {name: slot(int(box[i])) for name, i in inside.items()})
    note("checks", int(box[31]))
    note("pixels", int(box[30]))
    note("a_stats", a.heap_stats())

    # The same calls outside every domain, while the private heap exists.
    made = _c_allocations()
    im = Image.new("L", (300, 200), 0x5A)
    outside = {
        "numpy_large": data_of(np.arange(300_000.0)),
        "pillow_pixels": pillow_pixels(im)[1],
        **made,
    }
    note("outside_slots", {name: slot(address) for name, address in outside.items()})
    note("outside_checks", int(all(_check_c_allocations(made).values())))
    _free_all(made)


def numpy_and_pillow_give_the_same_results_inside_and_outside(note: Note) -> None:
    reference = workload()
    a = heap_domain(note, "a")
    b = heap_domain(note, "b")
    digests = [ctypes.create_string_buffer(32) for _ in range(3)]

    def run(index: int) -> None:
        ctypes.memmove(digests[index], workload(), 32)

    in_thread(lambda: _inside(a, lambda: run(0)))
    in_thread(lambda: _inside(b, lambda: run(1)))
    in_thread(lambda: _inside(a, lambda: run(2)))  # the next invocation of A
    note("equal", [d.raw == reference for d in digests])
    note("malloc_blocks", [a.heap_stats()["malloc_blocks"], b.heap_stats()["malloc_blocks"]])


def small_numpy_blocks_freed_inside_never_serve_another_domain_or_the_orchestrator(
    note: Note,
) -> None:
    """numpy caches freed data blocks below 1024 bytes process-wide: the runtime takes
    numpy's default handler over (mpk_numpy.c), so a block of A's slot is never handed to
    B or to the orchestrator."""
    a = heap_domain(note, "a")
    b = heap_domain(note, "b")
    note("handler", np._core.multiarray.get_handler_name())
    sizes = list(range(1, 128, 3))
    found = Box()

    def churn(index: int, owner: int) -> None:
        hits = 0
        for n in sizes:
            for _ in range(8):  # more than numpy's 7 cached blocks per size
                arr = np.empty(n, dtype=np.float64)
                arr[:] = 1.5
                hits += int(slot(data_of(arr)) not in (None, owner))
                del arr
        found[index] = hits

    in_thread(lambda: _inside(a, lambda: churn(0, a.slot)))
    in_thread(lambda: _inside(b, lambda: churn(1, b.slot)))
    outside = [slot(data_of(np.full(n, 2.5))) for n in sizes for _ in range(8)]
    note("foreign_in_b", int(found[1]))
    note("outside_in_slots", sum(s is not None for s in outside))


# ---------------------------------------------------------------------------
# What stays shared: raw domain, threads, the loader, glibc


def raw_memory_threads_and_libraries_used_inside_a_domain_stay_shared(note: Note) -> None:
    a = heap_domain(note, "a")
    box = Box()

    def body() -> None:
        raw = raw_malloc(4096)
        box[0] = raw
        raw_free(raw)
        # A thread the function starts and joins: its thread state, handle and TLS
        # are the runtime's and glibc's (shared); its own allocations are not inside
        # any heap (it never crossed an entry gate).
        worker_out: list[int] = []
        worker = threading.Thread(target=lambda: worker_out.append(sum(range(1000))))
        worker.start()
        worker.join()
        box[1] = worker_out[0]
        # dlopen inside a domain: the link map and the library's TLS are the loader's.
        lib = ctypes.CDLL("libdl.so.2")
        box[2] = 1 if lib._handle else 0
        box[3] = int(time.mktime(time.localtime(86400 * 365)))

    in_thread(lambda: _inside(a, body))
    note("raw_slot", slot(int(box[0])))
    note("worker", int(box[1]))
    note("dlopen", int(box[2]))
    # Outside, after the domain was used: the loader walks its link maps (one was made
    # inside), threads start, time conversions use the tz data.
    note("about_to_read", True)
    note("dlopen_outside", bool(ctypes.CDLL("libutil.so.1")._handle)
         and bool(ctypes.CDLL("libdl.so.2")._handle))
    worker = threading.Thread(target=lambda: None)
    worker.start()
    worker.join()
    note("mktime_same", int(time.mktime(time.localtime(86400 * 365))) == int(box[3]))
    note("current_frames", len(sys._current_frames()) >= 1)


# ---------------------------------------------------------------------------
# Freeing and reuse (no keys: with keys a thread outside the domain cannot even read
# a private block's header, by design)


def c_buffers_freed_from_outside_go_back_to_their_heap(note: Note) -> None:
    a = heap_domain(note, "a")
    holder: list[object] = [None, None]
    box = Box()

    def body() -> None:
        box[0] = malloc(5000)
        box[1] = malloc(1 << 20)
        box[2] = aligned_alloc(4096, 10000)
        holder[0] = np.ones(50_000)  # its buffer is in A's heap (the list is shared)
        holder[1] = Image.new("RGB", (256, 256), (1, 2, 3))

    in_thread(lambda: _inside(a, body))
    note("before", a.heap_stats()["malloc_blocks"])
    note("held_in_slot", [slot(data_of(holder[0])) == a.slot,  # type: ignore[arg-type]
                          slot(pillow_pixels(holder[1])[1]) == a.slot])  # type: ignore[arg-type]
    for i in range(3):
        free(int(box[i]))
    holder[0] = holder[1] = None
    note("after", a.heap_stats()["malloc_blocks"])


def ten_thousand_malloc_free_cycles_inside_a_domain_stay_bounded(note: Note) -> None:
    a = heap_domain(note, "a")
    committed = Box()
    sizes = [24, 700, 5000, 70_000, 300_000, 2 << 20]

    def cycles(count: int) -> None:
        for i in range(count):
            size = sizes[i % len(sizes)]
            p = malloc(size)
            ctypes.memset(p, 0x42, min(size, 64))
            q = realloc(p, size * 2)
            free(q)
            if i % 10 == 0:
                arr = np.empty(size // 8 + 1)
                arr[:8] = 3.0
                del arr
        committed[0] = a.committed

    in_thread(lambda: _inside(a, lambda: cycles(1000)))
    after_1k = int(committed[0])
    in_thread(lambda: _inside(a, lambda: cycles(10_000)))
    note("committed_after_1k", after_1k)
    note("committed_after_11k", int(committed[0]))
    note("stats", a.heap_stats())


# ---------------------------------------------------------------------------
# Faults (keys): another domain's thread, or a thread outside domains, reads a C buffer


def _make_c_private(kind: str, box: Box) -> None:
    """Inside the domain: make a ``kind`` buffer with known bytes, keep it alive, put its
    data address and a readable size in ``box``."""
    if kind == "numpy_small":
        arr = np.arange(10.0) * 7.5
        keep(arr)
        box[0], box[1] = data_of(arr), 80
    elif kind == "numpy_large":
        arr = np.arange(400_000.0) * 7.5
        keep(arr)
        box[0], box[1] = data_of(arr), 4096
    elif kind == "pillow":
        im = Image.new("L", (300, 200), 0x5A)
        keep(im)
        box[0], box[1] = pillow_pixels(im)[1], 300
    elif kind == "malloc":
        p = malloc(256)
        ctypes.memmove(p, b"secret-malloc-buffer", 20)
        box[0], box[1] = p, 20
    elif kind == "malloc_huge":
        p = malloc(2 << 20)
        ctypes.memmove(p, b"secret-huge-buffer", 18)
        box[0], box[1] = p, 18
    else:
        raise ValueError(kind)




def _read_by_other_domain(kind: str) -> Probe:
    def probe(note: Note) -> None:
        a = heap_domain(note, "a")
        b = heap_domain(note, "b")
        box = Box()
        in_thread(lambda: _inside(a, lambda: _make_c_private(kind, box)))
        note("a_address", int(box[0]))
        note("in_a_slot", slot(int(box[0])) == a.slot)

        def own() -> None:  # control: another thread of A reads it back
            box[5] = int(len(peek(int(box[0]), int(box[1]))) == int(box[1]))

        in_thread(lambda: _inside(a, own))
        note("owner_reads", int(box[5]))

        def reader() -> None:
            with b:
                note("about_to_read", True)
                peek(int(box[0]), int(box[1]))
                note("read", True)

        in_thread(reader)

    probe.__name__ = f"private_{kind}_read_by_other_domain_thread_faults_with_owner_pkey"
    return probe


def malloc_buffer_read_from_outside_domains_faults_with_owner_pkey(note: Note) -> None:
    a = heap_domain(note, "a")
    box = Box()
    in_thread(lambda: _inside(a, lambda: _make_c_private("malloc", box)))
    note("a_address", int(box[0]))
    note("about_to_read", True)
    peek(int(box[0]), int(box[1]))
    note("read", True)


class _Shared:
    attr = 7


def names_built_inside_a_domain_are_not_kept_by_the_type_cache(note: Note) -> None:
    """The type attribute cache holds a reference to each entry's name: a name built
    inside a domain (getattr with a run-time string, PyObject_GetAttrString in C) must
    not be kept alive by it (patch 0006) -- the next lookup replacing the entry, from
    any thread, would decref it.  Found by the numpy probe above under QEMU."""
    a = heap_domain(note, "a")
    box = Box()

    def body() -> None:
        name = "at" + "tr"[:2]  # built at run time: private, not interned
        before = sys.getrefcount(name)
        box[0] = getattr(_Shared, name) + getattr(_Shared(), name)
        box[1] = sys.getrefcount(name) - before
        box[2] = 1 if slot(id(name)) == a.slot else 0

    in_thread(lambda: _inside(a, body))
    note("value", int(box[0]))
    note("refs_kept", int(box[1]))
    note("name_private", int(box[2]))


def contextvar_set_inside_on_a_fresh_thread_escapes_through_the_thread_state(
    note: Note,
) -> None:
    """A thread's context is made by its first ContextVar.set: inside a domain it is a
    private object held by the (shared) thread state, and the thread's teardown, outside
    the domain, frees it -- a fault on the owner's key.  A context made first, outside
    (contextvars.copy_context()), is shared; a set undone before the exit gate (numpy's
    errstate, decimal.localcontext) then leaves it clean.  A set left in place (the
    first decimal.getcontext() of a thread) would leave a private value in it either
    way: the thread's context must then be reset at the exit gate."""
    a = heap_domain(note, "a")
    var: contextvars.ContextVar[int] = contextvars.ContextVar("var", default=0)

    def balanced() -> None:
        token = var.set(1)
        var.reset(token)

    def made_first() -> None:
        contextvars.copy_context()
        with a:
            balanced()  # its frame, and the private Token, end inside

    in_thread(made_first)
    note("context_made_first_ok", True)

    def fresh() -> None:
        with a:
            var.set(2)
        note("a_address", 0)
        note("about_to_read", True)  # the thread's teardown is the "read"

    in_thread(fresh)
    note("read", True)


COMMON: list[Probe] = [
    c_allocations_inside_a_private_heap_lie_in_its_slot,
    numpy_and_pillow_give_the_same_results_inside_and_outside,
    small_numpy_blocks_freed_inside_never_serve_another_domain_or_the_orchestrator,
    raw_memory_threads_and_libraries_used_inside_a_domain_stay_shared,
    ten_thousand_malloc_free_cycles_inside_a_domain_stay_bounded,
    names_built_inside_a_domain_are_not_kept_by_the_type_cache,
]

WITHOUT_KEYS: list[Probe] = [
    c_buffers_freed_from_outside_go_back_to_their_heap,
]

WITH_KEYS: list[Probe] = [
    *(_read_by_other_domain(kind) for kind in C_KINDS),
    malloc_buffer_read_from_outside_domains_faults_with_owner_pkey,
    contextvar_set_inside_on_a_fresh_thread_escapes_through_the_thread_state,
]


def main(argv: list[str]) -> int:
    """Run the selected probes (all that apply by default), one line each."""
    require_keys = "--require-keys" in argv
    names = [a for a in argv if not a.startswith("--")]
    if require_keys and not _faastlane.available():
        print(f"malloc probes: keys required: {_faastlane.unavailable_reason()}", flush=True)
        return 2
    table = COMMON + (WITH_KEYS if _faastlane.available() else WITHOUT_KEYS)
    if names:
        every: list[Callable[..., None]] = COMMON + WITHOUT_KEYS + WITH_KEYS
        table = [p for p in every if p.__name__ in names]
    for probe in table:
        print(run_probe(probe).to_line(), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
