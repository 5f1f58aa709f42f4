"""C malloc inside private heaps under real protection-key semantics: the malloc probe
table in ONE QEMU boot.  A numpy array's data, a Pillow image's pixels and malloc'ed C
buffers of a function are unreadable to another function's thread and to the
orchestrator: SIGSEGV, SEGV_PKUERR, si_pkey = the owner's key.  The controls (the same
checks as natively) pass with keys."""

from __future__ import annotations

import pytest
from heap_checks import assert_owner_key_fault
from malloc_checks import (
    check_bounded_cycles,
    check_c_allocations_placement,
    check_same_results,
    check_shared_runtime_structures,
    check_small_numpy_blocks,
    check_type_cache_names,
)
from malloc_probes_kinds import C_KINDS
from probe_runs import HERE, ProbeRun, run_probes_in_qemu, runtime_with_packages

MALLOC_PROBES = HERE / "malloc_probes.py"


@pytest.fixture(scope="module")
def qemu_malloc_probes(runtime: str) -> ProbeRun:
    """Every malloc probe, keys required, run once inside QEMU's emulated PKU CPU."""
    return run_probes_in_qemu(runtime_with_packages(runtime), MALLOC_PROBES)


@pytest.mark.parametrize("kind", C_KINDS)
def test_c_buffer_read_by_other_domain_thread_faults_with_owner_pkey(
    qemu_malloc_probes: ProbeRun, kind: str
) -> None:
    r = qemu_malloc_probes[f"private_{kind}_read_by_other_domain_thread_faults_with_owner_pkey"]
    assert r.notes["in_a_slot"] is True and r.notes["owner_reads"] == 1, r.describe()
    fault = assert_owner_key_fault(r)
    assert r.notes["a_address"] <= fault["addr"] < r.notes["a_address"] + 4096
    assert fault["thread_slot"] == r.notes["b_slot"] and fault["thread_key"] == r.notes["b_key"]
    assert r.notes["b_key"] != r.notes["a_key"]


def test_malloc_buffer_read_from_outside_domains_faults_with_owner_pkey(
    qemu_malloc_probes: ProbeRun,
) -> None:
    r = qemu_malloc_probes["malloc_buffer_read_from_outside_domains_faults_with_owner_pkey"]
    fault = assert_owner_key_fault(r)
    assert fault["thread_slot"] == -1 and fault["addr"] == r.notes["a_address"]


def test_c_allocations_lie_in_the_slot_with_keys(qemu_malloc_probes: ProbeRun) -> None:
    check_c_allocations_placement(
        qemu_malloc_probes["c_allocations_inside_a_private_heap_lie_in_its_slot"])


def test_numpy_and_pillow_results_with_keys(qemu_malloc_probes: ProbeRun) -> None:
    check_same_results(
        qemu_malloc_probes["numpy_and_pillow_give_the_same_results_inside_and_outside"])


def test_small_numpy_blocks_with_keys(qemu_malloc_probes: ProbeRun) -> None:
    check_small_numpy_blocks(qemu_malloc_probes[
        "small_numpy_blocks_freed_inside_never_serve_another_domain_or_the_orchestrator"])


def test_shared_runtime_structures_with_keys(qemu_malloc_probes: ProbeRun) -> None:
    check_shared_runtime_structures(qemu_malloc_probes[
        "raw_memory_threads_and_libraries_used_inside_a_domain_stay_shared"])


def test_bounded_cycles_with_keys(qemu_malloc_probes: ProbeRun) -> None:
    check_bounded_cycles(
        qemu_malloc_probes["ten_thousand_malloc_free_cycles_inside_a_domain_stay_bounded"])


def test_contextvar_set_inside_on_a_fresh_thread_escapes_through_the_thread_state(
    qemu_malloc_probes: ProbeRun,
) -> None:
    """Not a malloc path, found by these probes: a thread's context made inside its
    domain is freed by the thread's teardown outside it.  Made first, it is shared."""
    r = qemu_malloc_probes[
        "contextvar_set_inside_on_a_fresh_thread_escapes_through_the_thread_state"]
    assert r.notes["context_made_first_ok"] is True, r.describe()
    assert r.signal == 11 and "read" not in r.notes, r.describe()
    assert r.fault is not None and r.fault["code"] == 4, r.describe()
    assert r.fault["pkey"] == r.notes["a_key"] and r.fault["thread_slot"] == -1


def test_names_built_inside_a_domain_are_not_kept_by_the_type_cache(
    qemu_malloc_probes: ProbeRun,
) -> None:
    check_type_cache_names(
        qemu_malloc_probes["names_built_inside_a_domain_are_not_kept_by_the_type_cache"])
