"""Allocation-heavy micro-benchmarks for private heaps, natively (no keys: everything
but the WRPKRU instruction is measured).

    python heap_bench.py [--inside] [--rounds N] [--repeat K]

prints one JSON line {benchmark: best ns per iteration}; a sample runs each loop K
times (default 1: on a noisy machine, K = 20-50 amortises timer and scheduling noise);
compare many processes per configuration (PRIVATE_HEAPS.md, session 13).  ``--inside``
runs every benchmark on a thread inside a ``_faastlane.Domain(private_heap=True)``; without it
the same thread runs outside domains (isolation off).  Run it with a stock 3.13 and
with the cpython-mpk runtime to compare the three configurations; the best of N rounds
is kept because the development machines are shared and loaded.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable

N = 20_000


def small_dicts() -> None:
    for i in range(N):
        {"a": i, "b": str(i)}


def small_lists() -> None:
    for i in range(N):
        [i, i, i, str(i)]


def str_concat() -> None:
    s = "x"
    for i in range(N):
        s = "prefix-" + str(i) + s[:20]


def list_append() -> None:
    out: list[int] = []
    for i in range(N):
        out.append(i)


def tuples_and_floats() -> None:
    for i in range(N):
        (i * 1.5, i + 0.5, (i, i))


def mid_bytes() -> None:
    for _ in range(N // 10):
        b"m" * 3000 + b"x"


def large_bytes() -> None:
    for _ in range(N // 200):
        bytes(300_000)


def cycles() -> None:
    for _ in range(N // 10):
        a: list[object] = []
        a.append(a)


# Each benchmark and the number of iterations its loop makes.
BENCHMARKS: list[tuple[Callable[[], None], int]] = [
    (small_dicts, N), (small_lists, N), (str_concat, N), (list_append, N),
    (tuples_and_floats, N), (mid_bytes, N // 10), (large_bytes, N // 200),
    (cycles, N // 10),
]


def measure(rounds: int, repeat: int) -> dict[str, float]:
    best: dict[str, float] = {}
    for _ in range(rounds):
        for bench, iterations in BENCHMARKS:
            start = time.perf_counter_ns()
            for _ in range(repeat):
                bench()
            elapsed = (time.perf_counter_ns() - start) / iterations / repeat
            best[bench.__name__] = min(best.get(bench.__name__, elapsed), elapsed)
    return best


def main(argv: list[str]) -> int:
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 15
    repeat = int(argv[argv.index("--repeat") + 1]) if "--repeat" in argv else 1
    result: dict[str, float] = {}
    if "--inside" in argv:
        import _faastlane

        domain = _faastlane.Domain(private_heap=True)
        box: list[str] = [""]

        def run() -> None:
            with domain:
                # Without keys nothing faults: this private string is read below.
                box[0] = json.dumps(measure(rounds, repeat))

        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
        result = json.loads(box[0])
    else:
        holder: list[dict[str, float]] = []
        thread = threading.Thread(target=lambda: holder.append(measure(rounds, repeat)))
        thread.start()
        thread.join()
        result = holder[0]
    print(json.dumps({k: round(v, 1) for k, v in result.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
