"""What the write guard (patch 0014) and the frame check (0015) cost on the paths they
sit on: Python calls (every frame start checks whether a runtime operation is under
way), generator resumption, dict/list/set stores and attribute stores.

    python guard_bench.py [--sealed] [--rounds N]

prints one JSON line {benchmark: best ns per iteration}. ``--sealed`` runs every
benchmark as sealed function code (``Domain.run_sealed``, a private heap: the guarded
path, on the function's own objects, as function code runs); without it the same code
runs outside domains, where each check is one thread-local load. Run it with the
runtime before the guard and with this one to compare; the best of N rounds is kept
because the development machines are shared.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable

N = 50_000


def calls() -> None:
    def f(x: int) -> int:
        return x
    for i in range(N):
        f(i)


def generator() -> None:
    def gen() -> object:
        yield from range(N)
    for _ in gen():
        pass


def dict_stores() -> None:
    d: dict[int, int] = {}
    for i in range(N):
        d[i & 1023] = i


def list_appends() -> None:
    items: list[int] = []
    for i in range(N):
        items.append(i)


def set_adds() -> None:
    seen: set[int] = set()
    for i in range(N):
        seen.add(i & 1023)


def attribute_stores() -> None:
    class Box:
        pass
    box = Box()
    for i in range(N):
        box.value = i


BENCHMARKS: dict[str, Callable[[], None]] = {
    "calls": calls, "generator": generator, "dict_stores": dict_stores,
    "list_appends": list_appends, "set_adds": set_adds,
    "attribute_stores": attribute_stores,
}


def best_ns(run: Callable[[], None], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter_ns()
        run()
        best = min(best, time.perf_counter_ns() - start)
    return best / N


def main(argv: list[str]) -> int:
    sealed = "--sealed" in argv
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 15
    results: dict[str, float] = {}
    if sealed:
        import _faastlane
        domain = _faastlane.Domain(private_heap=True)
        for name, bench in BENCHMARKS.items():
            # Measured inside; only a float (shared: made by the caller) leaves.
            times: list[float] = []
            for _ in range(rounds):
                start = time.perf_counter_ns()
                domain.run_sealed(bench)
                times.append(time.perf_counter_ns() - start)
            results[name] = round(min(times) / N, 2)
    else:
        results = {name: round(best_ns(bench, rounds), 2) for name, bench in BENCHMARKS.items()}
    print(json.dumps(results))
    sys.stdout.flush()
    import os
    os._exit(0)  # a live domain's private objects must not meet the interpreter's teardown


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
