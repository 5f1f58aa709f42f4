"""C-allocation micro-benchmarks for malloc interposition, natively (no keys: everything
but the WRPKRU instruction is measured).

    python malloc_bench.py [--inside] [--rounds N]   (default 200 rounds)

prints one JSON line {benchmark: best ns per iteration}.  ``--inside`` runs every
benchmark on a thread inside a ``_faastlane.Domain(private_heap=True)`` (C malloc goes
to the private heap); without it the same thread runs outside domains.  Run it with a
stock 3.13 (glibc malloc, numpy's own small-block cache) and with the cpython-mpk
runtime (interposed malloc; numpy's default handler taken over once a private heap
exists, which this script makes in both modes).  Needs numpy and gcc.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ["FAASTLANE_MPK_MALLOC"] = "on"  # route C malloc by domain (opt-in)
import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
# Short rounds, many of them: on a loaded shared machine the minimum of many short
# rounds is the figure least disturbed by other processes.
N = 2_000


def build_loop() -> ctypes.CDLL:
    tmp = tempfile.mkdtemp()
    lib = Path(tmp) / "malloc_loop.so"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", str(HERE / "malloc_loop.c"),
                    "-o", str(lib)], check=True)
    dll = ctypes.CDLL(str(lib))
    dll.malloc_free_loop.argtypes = [ctypes.c_long, ctypes.c_size_t]
    dll.malloc_batch.argtypes = [ctypes.c_long, ctypes.c_void_p]
    return dll


LOOP = build_loop()
BLOCKS = (ctypes.c_void_p * N)()


def c_malloc_free_64() -> None:
    LOOP.malloc_free_loop(N, 64)


def c_malloc_free_4k() -> None:
    LOOP.malloc_free_loop(N, 4096)


def c_malloc_batch_mixed() -> None:
    LOOP.malloc_batch(N, BLOCKS)


def np_small_arrays() -> None:
    for _ in range(N):
        np.empty(16)


def np_arith_1k() -> None:
    a = np.arange(1000.0)
    for _ in range(N // 10):
        (a + 1.0) * 2.0


def np_arrays_80k() -> None:
    for _ in range(N // 10):
        np.ones(10_000)


def np_zeros_8m() -> None:
    for _ in range(N // 1000):
        np.zeros(1 << 20)[::512] = 1.0  # one write per page: the pages are used


# (benchmark, operations per call): figures are ns per operation.
BENCHMARKS: list[tuple[Callable[[], None], int]] = [
    (c_malloc_free_64, N), (c_malloc_free_4k, N), (c_malloc_batch_mixed, N),
    (np_small_arrays, N), (np_arith_1k, N // 10), (np_arrays_80k, N // 10),
    (np_zeros_8m, N // 1000),
]


def measure(rounds: int) -> dict[str, float]:
    for bench, _ in BENCHMARKS:  # warm numpy's dispatch caches outside the timing
        bench()
    best: dict[str, float] = {}
    for _ in range(rounds):
        for bench, ops in BENCHMARKS:
            start = time.perf_counter_ns()
            bench()
            elapsed = (time.perf_counter_ns() - start) / ops
            best[bench.__name__] = min(best.get(bench.__name__, elapsed), elapsed)
    return best


def main(argv: list[str]) -> int:
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 200
    for bench, _ in BENCHMARKS:  # warm up in the shared heap (caches, imports)
        bench()
    domain = None
    try:
        import _faastlane

        domain = _faastlane.Domain(private_heap=True)
    except (ImportError, TypeError, RuntimeError):
        pass  # a stock interpreter (no private heaps): glibc and numpy's cache
    if "--inside" in argv and domain is None:
        raise SystemExit("--inside needs the cpython-mpk runtime")
    box: list[str] = [""]

    def run() -> None:
        if "--inside" in argv:
            with domain:  # type: ignore[union-attr]
                # Without keys nothing faults: this private string is read below.
                box[0] = json.dumps(measure(rounds))
        else:
            box[0] = json.dumps(measure(rounds))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    handler = np._core.multiarray.get_handler_name()
    result = {k: round(v, 1) for k, v in json.loads(box[0]).items()}
    print(json.dumps({"numpy_handler": handler, **result}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
