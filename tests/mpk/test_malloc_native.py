"""C malloc inside private heaps, natively (no keys here: the no-keys implementation
routes every allocation exactly as with keys).  numpy array data, Pillow image buffers
and malloc'ed C buffers made inside a domain lie in its slot; outside they do not; the
results are the same; freeing from outside works; churn stays bounded.  The faults
are in test_malloc_qemu.py."""

from __future__ import annotations

import os
import subprocess

import pytest
from malloc_checks import (
    check_bounded_cycles,
    check_c_allocations_placement,
    check_same_results,
    check_shared_runtime_structures,
    check_small_numpy_blocks,
    check_type_cache_names,
)
from probe_protocol import parse_results
from probe_runs import HERE, ProbeRun, run_probes, runtime_with_packages

MALLOC_PROBES = HERE / "malloc_probes.py"


@pytest.fixture(scope="module")
def native_malloc_probes(runtime: str) -> ProbeRun:
    python = runtime_with_packages(runtime)
    proc, seconds = run_probes([python, str(MALLOC_PROBES)], timeout=900)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"malloc probes failed natively:\n{output[-4000:]}"
    return ProbeRun(parse_results(proc.stdout), seconds, output)


def test_c_allocations_inside_a_private_heap_lie_in_its_slot(
    native_malloc_probes: ProbeRun,
) -> None:
    check_c_allocations_placement(
        native_malloc_probes["c_allocations_inside_a_private_heap_lie_in_its_slot"])


def test_numpy_and_pillow_give_the_same_results_inside_and_outside(
    native_malloc_probes: ProbeRun,
) -> None:
    check_same_results(
        native_malloc_probes["numpy_and_pillow_give_the_same_results_inside_and_outside"])


def test_small_numpy_blocks_never_serve_another_domain(native_malloc_probes: ProbeRun) -> None:
    check_small_numpy_blocks(native_malloc_probes[
        "small_numpy_blocks_freed_inside_never_serve_another_domain_or_the_orchestrator"])


def test_raw_memory_threads_and_libraries_stay_shared(native_malloc_probes: ProbeRun) -> None:
    check_shared_runtime_structures(native_malloc_probes[
        "raw_memory_threads_and_libraries_used_inside_a_domain_stay_shared"])


def test_ten_thousand_malloc_free_cycles_stay_bounded(native_malloc_probes: ProbeRun) -> None:
    check_bounded_cycles(
        native_malloc_probes["ten_thousand_malloc_free_cycles_inside_a_domain_stay_bounded"])


def test_c_buffers_freed_from_outside_go_back_to_their_heap(
    native_malloc_probes: ProbeRun,
) -> None:
    r = native_malloc_probes["c_buffers_freed_from_outside_go_back_to_their_heap"]
    assert r.exit_code == 0 and r.error is None, r.describe()
    assert r.notes["held_in_slot"] == [True, True]
    assert r.notes["before"] >= 5 and r.notes["after"] == 0, r.describe()


def test_names_built_inside_a_domain_are_not_kept_by_the_type_cache(
    native_malloc_probes: ProbeRun,
) -> None:
    check_type_cache_names(
        native_malloc_probes["names_built_inside_a_domain_are_not_kept_by_the_type_cache"])


@pytest.mark.parametrize(
    "setup",
    [["-X", "dev"], ["-X", "tracemalloc"]],
    ids=["debug_hooks", "tracemalloc"],
)
def test_private_heap_refused_when_the_raw_allocator_cannot_stay_shared(
    runtime: str, setup: list[str]
) -> None:
    """Debug hooks or tracemalloc on top of malloc() would make the raw domain follow
    the thread into its domain: private heaps fail closed, plain domains still work."""
    code = (
        "import _faastlane\n"
        "try:\n    _faastlane.Domain(private_heap=True)\n"
        "except _faastlane.DomainError as e:\n    print('refused:', e)\n"
        "d = _faastlane.Domain(); print(d.private_heap, len(_faastlane.live_domains()))\n"
    )
    proc = subprocess.run([runtime, *setup, "-c", code], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, FAASTLANE_MPK_MALLOC="on"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("refused: cannot give the domain a private heap: the raw "
                               "memory allocator is not CPython's default"), lines
    assert lines[1] == "False 1"


def test_tracemalloc_started_after_the_first_private_heap_keeps_working(runtime: str) -> None:
    code = (
        "import _faastlane, tracemalloc\n"
        "d = _faastlane.Domain(private_heap=True)\n"
        "tracemalloc.start()\n"
        "def body():\n    x = [bytes(100) for _ in range(100)]\n"
        "with d: body()\n"
        "s = tracemalloc.take_snapshot(); tracemalloc.stop(); print(len(s.traces) > 0)\n"
    )
    proc = subprocess.run([runtime, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, FAASTLANE_MPK_MALLOC="on"))
    assert proc.returncode == 0 and proc.stdout.strip() == "True", proc.stderr


def test_c_malloc_is_routed_only_on_request(runtime: str) -> None:
    """Without FAASTLANE_MPK_MALLOC=on, C malloc stays glibc's inside private heaps too
    (and the raw allocator is left alone: -X dev works)."""
    code = (
        "import ctypes, _faastlane\n"
        "m = ctypes.CDLL(None).malloc; m.restype = ctypes.c_void_p\n"
        "d = _faastlane.Domain(private_heap=True); out = []\n"
        "def body():\n    out.append(m(100)); out.append(m(1 << 20))\n"
        "with d: body()\n"
        "print([_faastlane.slot_of(p) for p in out], d.heap_stats()['malloc_blocks'])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "FAASTLANE_MPK_MALLOC"}
    for setup in ([], ["-X", "dev"]):
        proc = subprocess.run([runtime, *setup, "-c", code], capture_output=True, text=True,
                              timeout=120, env=env)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "[None, None] 0"
