"""C malloc inside private heaps, natively (no keys here: the no-keys implementation
routes every allocation exactly as with keys).  numpy array data, Pillow image buffers
and malloc'ed C buffers made inside a domain lie in its slot; outside they do not; the
results are the same; freeing from outside works; churn stays bounded.  The faults
are in test_malloc_qemu.py."""

from __future__ import annotations

import pytest
from malloc_checks import (
    check_bounded_cycles,
    check_c_allocations_placement,
    check_same_results,
    check_shared_runtime_structures,
    check_small_numpy_blocks,
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
