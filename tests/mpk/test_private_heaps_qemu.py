"""Private heaps under real protection-key semantics: the heap probe table in ONE QEMU
boot.  Objects of every size a function thread allocates inside its domain are
unreadable to any other thread: the reader dies of SIGSEGV, SEGV_PKUERR, si_pkey =
the owner's key.  The controls show the same threads working normally.
"""

from __future__ import annotations

import pytest
from heap_checks import (
    assert_owner_key_fault,
    check_fork_leaves_domain_thread_state,
    check_names_interned_inside,
    check_shared_containers_grown_inside,
    check_state_made_on_first_use,
)
from heap_kinds import KINDS
from probe_protocol import SEGV_ACCERR, SIGSEGV
from probe_runs import HERE, ProbeRun, run_probes_in_qemu

HEAP_PROBES = HERE / "heap_probes.py"


@pytest.fixture(scope="module")
def qemu_heap_probes(runtime: str) -> ProbeRun:
    """Every heap probe, keys required, run once inside QEMU's emulated PKU CPU."""
    return run_probes_in_qemu(runtime, HEAP_PROBES)


@pytest.mark.parametrize("kind", KINDS)
def test_private_object_read_by_other_domain_thread_faults_with_owner_pkey(
    qemu_heap_probes: ProbeRun, kind: str
) -> None:
    r = qemu_heap_probes[f"private_{kind}_read_by_other_domain_thread_faults_with_owner_pkey"]
    fault = assert_owner_key_fault(r)
    assert r.notes["in_a_slot"] is True, r.describe()
    assert r.notes["a_address"] <= fault["addr"] < r.notes["a_address"] + 4096
    assert fault["thread_slot"] == r.notes["b_slot"] and fault["thread_key"] == r.notes["b_key"]
    assert r.notes["b_key"] != r.notes["a_key"]


def test_private_str_read_from_outside_domains_faults_with_owner_pkey(
    qemu_heap_probes: ProbeRun,
) -> None:
    r = qemu_heap_probes["private_str_read_from_outside_domains_faults_with_owner_pkey"]
    fault = assert_owner_key_fault(r)
    assert fault["thread_slot"] == -1
    assert fault["addr"] == r.notes["a_address"]


def test_private_list_item_storage_faults_with_owner_pkey(qemu_heap_probes: ProbeRun) -> None:
    r = qemu_heap_probes["private_list_items_read_from_outside_domains_faults_with_owner_pkey"]
    assert r.notes["items_slot_is_a"] is True, r.describe()
    fault = assert_owner_key_fault(r)
    assert fault["addr"] == r.notes["items_address"]


def test_escaped_private_object_faults_on_read_with_owner_pkey(
    qemu_heap_probes: ProbeRun,
) -> None:
    r = qemu_heap_probes["private_object_escaped_into_shared_list_faults_on_read_with_owner_pkey"]
    fault = assert_owner_key_fault(r)
    assert fault["thread_slot"] == -1
    assert r.notes["a_address"] <= fault["addr"] < r.notes["a_address"] + 64


def test_warm_cache_is_reused_across_invocations_and_unreadable_to_others(
    qemu_heap_probes: ProbeRun,
) -> None:
    r = qemu_heap_probes["warm_cache_is_reused_across_invocations_and_unreadable_to_others"]
    assert (r.notes["loads"], r.notes["calls"]) == (1, 3), r.describe()
    assert r.notes["in_a_slot"] is True
    fault = assert_owner_key_fault(r)
    assert fault["addr"] == r.notes["a_address"] and fault["thread_key"] == r.notes["b_key"]


def test_destroyed_private_heap_faults_without_key(qemu_heap_probes: ProbeRun) -> None:
    r = qemu_heap_probes["destroyed_private_heap_address_faults_without_key"]
    assert r.signal == SIGSEGV, r.describe()
    assert r.fault is not None and r.fault["code"] == SEGV_ACCERR, r.describe()
    assert r.fault["addr"] == r.notes["a_address"] and "read" not in r.notes


def test_function_thread_reads_back_its_own_private_objects(qemu_heap_probes: ProbeRun) -> None:
    r = qemu_heap_probes["function_thread_reads_back_its_own_private_objects"]
    assert r.exit_code == 0 and r.error is None, r.describe()
    assert r.notes["equal"] == {kind: 1 for kind in KINDS}
    assert r.notes["in_slot"] == {kind: True for kind in KINDS}


def test_controls_pass_with_keys(qemu_heap_probes: ProbeRun) -> None:
    r = qemu_heap_probes["function_threads_read_shared_input_and_shared_objects_stay_shared"]
    assert r.exit_code == 0 and r.notes["read"] == [1, 1], r.describe()
    assert r.notes["shared_slot"] == [None, None]
    r = qemu_heap_probes["shared_list_grown_inside_a_domain_keeps_its_storage_shared"]
    assert r.exit_code == 0 and r.notes["items_slot"] is None, r.describe()
    assert r.notes["sum"] == sum(i % 256 for i in range(1000))
    r = qemu_heap_probes["two_domains_live_at_once_interleave_without_faults"]
    assert r.exit_code == 0 and r.notes["ok"] == [1, 1], r.describe()
    assert r.notes["switches"] >= 2


def test_cycles_collected_inside_domain_without_faults(qemu_heap_probes: ProbeRun) -> None:
    r = qemu_heap_probes["cycles_made_inside_a_domain_are_collected_inside_it"]
    assert r.exit_code == 0 and r.error is None, r.describe()
    assert r.notes["collected_inside"] == 998  # 500 list + 500 dict cycles; the last of each alive
    assert r.notes["collected_outside"] == 0


def test_fifty_sequential_private_heaps_recycle_keys(qemu_heap_probes: ProbeRun) -> None:
    r = qemu_heap_probes["fifty_sequential_private_heaps_recycle_keys"]
    assert r.exit_code == 0 and r.error is None, r.describe()
    assert r.notes["ok"] == 50 and r.notes["live"] == 0
    assert r.notes["keys"] and set(r.notes["keys"]) <= set(range(1, 16))


def test_shared_containers_grown_inside_a_domain_stay_readable_outside(
    qemu_heap_probes: ProbeRun,
) -> None:
    r = qemu_heap_probes["shared_containers_grown_inside_a_domain_stay_readable_outside"]
    check_shared_containers_grown_inside(r)


def test_names_interned_inside_a_domain_are_shared_copies(qemu_heap_probes: ProbeRun) -> None:
    r = qemu_heap_probes["names_interned_inside_a_domain_are_shared_copies"]
    check_names_interned_inside(r)


def test_state_made_on_first_use_lives_with_its_owner(qemu_heap_probes: ProbeRun) -> None:
    check_state_made_on_first_use(qemu_heap_probes["state_made_on_first_use_lives_with_its_owner"])


def test_fork_leaves_a_domain_threads_state_alone(qemu_heap_probes: ProbeRun) -> None:
    check_fork_leaves_domain_thread_state(qemu_heap_probes["fork_leaves_a_domain_threads_state_alone"])


def test_handoff_data_read_by_a_function_domain_faults_with_the_handoff_key(
    qemu_heap_probes: ProbeRun,
) -> None:
    """Data in flight (the hand-off domain's heap) is out of a function's reach: its
    domain grants key 0 and its own key only."""
    r = qemu_heap_probes["handoff_data_read_by_a_function_domain_faults_with_handoff_pkey"]
    assert r.notes["leaf_in_handoff"] is True, r.describe()
    fault = assert_owner_key_fault(r)  # owner "a": the hand-off domain
    assert fault["thread_slot"] == r.notes["b_slot"], r.describe()


def test_handoff_data_read_by_a_thread_a_function_started_faults(
    qemu_heap_probes: ProbeRun,
) -> None:
    """A thread function code started, still running after the function returned,
    never holds the runtime's outside value."""
    r = qemu_heap_probes["handoff_data_read_by_a_thread_a_function_started_faults"]
    assert r.notes["function_returned"] is True, r.describe()
    fault = assert_owner_key_fault(r)
    assert fault["thread_slot"] == r.notes["b_slot"], r.describe()


def test_runtime_threads_read_handoff_data_and_a_function_gets_its_own_copy(
    qemu_heap_probes: ProbeRun,
) -> None:
    """The controls of the two above: the runtime's threads outside every domain read
    the hand-off heap (also after a signal handler restored a new thread's PKRU), and
    Domain.run_sealed_on hands the function a deep copy made in its own heap."""
    r = qemu_heap_probes[
        "handoff_data_is_read_by_runtime_threads_and_crosses_an_entry_gate_as_a_copy"]
    assert r.exit_code == 0 and r.fault is None, r.describe()
    assert r.notes["main_read"] is True and r.notes["thread_read"] == 1, r.describe()
    assert r.notes["copy"] == [1, 1, 1] and r.notes["original_kept"] is True, r.describe()
