"""Isolation under real protection-key semantics: the probe table run in ONE QEMU boot.

QEMU's software CPU (``-accel tcg -cpu max``) emulates PKU faithfully, so these tests
see what a PKU machine would: every denied access ends the probe's child with SIGSEGV,
``si_code == SEGV_PKUERR`` and ``si_pkey`` the owner's key, reported by the kernel.
When QEMU cannot be set up the fixture fails loudly; nothing here is skipped.
"""

from __future__ import annotations

from pkru_spec import access_disabled, is_checked_gate, pkru_allowing
from probe_protocol import SEGV_ACCERR, SEGV_PKUERR, SIGSEGV, ProbeResult
from probe_runs import QEMU_TIMEOUT_S, ProbeRun

SECRET = "secret-of-domain-A"


def assert_key_fault(r: ProbeResult, owner_key: int, stage: str) -> dict[str, int]:
    """The child died of a protection-key fault on ``owner_key`` right at ``stage``;
    returns the fault reporter's fields."""
    assert r.signal == SIGSEGV, r.describe()
    assert r.notes.get(stage) is True, r.describe()
    assert r.fault is not None, r.describe()
    assert r.fault["code"] == SEGV_PKUERR, r.describe()
    assert r.fault["pkey"] == owner_key, r.describe()
    return r.fault


def test_keys_are_available_in_the_guest(qemu_probes: ProbeRun) -> None:
    notes = qemu_probes["detection_reports_availability_and_reason"].notes
    assert notes == {
        "available": True,
        "reason": None,
        "implementation": "keys",
        "has_read_pkru": True,
        "restore_thread_pkru": pkru_allowing(),  # outside domains: key 0 only
    }


def test_read_by_thread_in_other_domain_faults_with_owner_pkey(qemu_probes: ProbeRun) -> None:
    r = qemu_probes["read_by_thread_in_other_domain_faults_with_owner_pkey"]
    fault = assert_key_fault(r, r.notes["a_key"], "about_to_read")
    assert "read" not in r.notes
    assert fault["addr"] == r.notes["a_address"]
    assert fault["thread_key"] == r.notes["b_key"] != r.notes["a_key"]


def test_write_by_thread_in_other_domain_faults_with_owner_pkey(qemu_probes: ProbeRun) -> None:
    r = qemu_probes["write_by_thread_in_other_domain_faults_with_owner_pkey"]
    fault = assert_key_fault(r, r.notes["a_key"], "about_to_write")
    assert "wrote" not in r.notes
    assert r.notes["a_address"] <= fault["addr"] < r.notes["a_address"] + 4096
    assert fault["thread_key"] == r.notes["b_key"]


def test_read_from_outside_every_domain_faults_with_owner_pkey(qemu_probes: ProbeRun) -> None:
    r = qemu_probes["read_from_outside_every_domain_faults_with_owner_pkey"]
    fault = assert_key_fault(r, r.notes["a_key"], "about_to_read")
    assert fault["thread_slot"] == -1


def test_thread_started_outside_domains_cannot_read_domain_memory(qemu_probes: ProbeRun) -> None:
    r = qemu_probes["thread_started_outside_domains_cannot_read_domain_memory"]
    assert_key_fault(r, r.notes["a_key"], "about_to_read")


def test_domain_thread_reads_and_writes_its_own_buffer(qemu_probes: ProbeRun) -> None:
    r = qemu_probes["domain_thread_reads_and_writes_its_own_buffer"]
    assert r.exit_code == 0, r.describe()
    assert (r.notes["read"], r.notes["reread"]) == (SECRET, "rewritten")
    assert r.notes["a_key"] in range(1, 16)


def test_threads_in_two_domains_both_read_shared_memory(qemu_probes: ProbeRun) -> None:
    r = qemu_probes["threads_in_two_domains_both_read_shared_memory"]
    assert r.exit_code == 0, r.describe()
    assert r.notes == {"a": "shared-input", "a_own": "a", "b": "shared-input", "b_own": "b"}


def test_pkru_inside_domain_grants_key_zero_and_own_key_only(qemu_probes: ProbeRun) -> None:
    r = qemu_probes["pkru_inside_domain_grants_key_zero_and_own_key_only"]
    assert r.exit_code == 0, r.describe()
    a, b = r.notes["a_key"], r.notes["b_key"]
    assert r.notes["in_a"] == pkru_allowing(a) == r.notes["a_pkru"]
    assert r.notes["in_b"] == pkru_allowing(b)
    assert r.notes["after_a"] == r.notes["after_b"] == pkru_allowing()
    # A thread that never crossed a gate reaches neither domain either.
    assert access_disabled(r.notes["fresh_thread"], a)
    assert access_disabled(r.notes["fresh_thread"], b)


def test_destroyed_domain_slot_faults_without_key(qemu_probes: ProbeRun) -> None:
    r = qemu_probes["destroyed_domain_slot_faults_on_access"]
    assert r.signal == SIGSEGV, r.describe()
    assert r.fault is not None and r.fault["code"] == SEGV_ACCERR, r.describe()
    assert r.fault["addr"] == r.notes["a_address"]
    assert "read" not in r.notes


def test_recycled_slot_and_key_read_zero_not_previous_secret(qemu_probes: ProbeRun) -> None:
    r = qemu_probes["recycled_slot_and_key_read_zero_not_previous_secret"]
    assert r.exit_code == 0, r.describe()
    assert r.notes["same_slot"] and r.notes["same_address"]
    assert r.notes["again_key"] == r.notes["a_key"]  # the very key came back
    assert r.notes["content"] == "00" * len(SECRET)


def test_exited_thread_keeps_no_access_to_recycled_key(qemu_probes: ProbeRun) -> None:
    r = qemu_probes["exited_thread_keeps_no_access_to_recycled_key"]
    assert r.notes["second_key"] == r.notes["first_key"], r.describe()
    assert_key_fault(r, r.notes["second_key"], "about_to_read")


def test_thread_started_inside_domain_inherits_access_until_restored(
    qemu_probes: ProbeRun,
) -> None:
    """The kernel copies PKRU into new threads: a thread started inside a domain can
    read it without being counted in it (a known hazard, see MODULE.md) until it
    restores its own, shared-only PKRU."""
    r = qemu_probes["thread_started_inside_domain_inherits_access_until_restored"]
    assert r.notes["inherited_read"] == SECRET, r.describe()
    assert r.notes["current_domain_is_none"] is True
    assert r.notes["restored"] == pkru_allowing()
    assert_key_fault(r, r.notes["a_key"], "about_to_read")
    assert "read" not in r.notes


def test_two_hundred_domains_created_and_destroyed_recycle_keys(qemu_probes: ProbeRun) -> None:
    r = qemu_probes["two_hundred_domains_created_and_destroyed_in_sequence_recycle_keys"]
    assert r.exit_code == 0, r.describe()
    assert r.notes["readback_ok"] == 200
    assert set(r.notes["keys"]) <= set(range(1, 16)) and r.notes["keys"]
    c = r.notes["counters"]
    assert (c["keys_allocated"], c["keys_freed"], c["live"]) == (200, 200, 0)


def test_more_than_fifteen_live_domains_park_idle_keys(qemu_probes: ProbeRun) -> None:
    r = qemu_probes["more_than_fifteen_live_domains_park_idle_ones"]
    assert r.exit_code == 0, r.describe()
    created = r.notes["keys_at_creation"]
    # Fifteen keys, one each; the other five start parked (no key, no pages yet).
    assert sorted(created[:15]) == list(range(1, 16)) and created[15:] == [None] * 5
    # Each of the twenty, entered twice, found its own marker: a parked domain's pages
    # were retagged with a key again on entry, its contents intact.
    assert r.notes["readback_ok"] == 20
    assert all(1 <= key <= 15 for key in r.notes["keys_while_inside"])
    counters = r.notes["counters"]
    assert counters["live"] == 20 and counters["parkings"] >= 20 and counters["parked"] >= 6
    assert r.notes["past_every_slot"] == "DomainLimitError"
    assert r.notes["after_destroy"] is True


def test_a_parked_domains_memory_faults_for_the_thread_holding_its_old_key(
        qemu_probes: ProbeRun) -> None:
    r = qemu_probes["parked_domain_memory_faults_for_every_thread"]
    # The sixteenth domain's entry parked A (idle longest): A's key became the parking
    # key, which no PKRU value grants, so A's pages fault even for the thread inside
    # the sixteenth domain.
    assert r.notes["a_key_now"] is None
    fault = assert_key_fault(r, r.notes["a_key"], "about_to_read")
    assert "read" not in r.notes
    assert fault["thread_key"] == r.notes["holder_key"] != r.notes["a_key"]
    assert r.notes["counters"]["parkings"] >= 2


def test_fault_reporter_restores_thread_pkru_on_signal_path(qemu_probes: ProbeRun) -> None:
    r = qemu_probes["fault_reporter_restores_thread_pkru_on_signal_path"]
    fault = assert_key_fault(r, r.notes["b_key"], "about_to_read")
    a = r.notes["a_key"]
    # The handler starts with the kernel's default PKRU: no access to the domain ...
    assert access_disabled(fault["pkru_at_entry"], a)
    # ... and the restore gives the interrupted thread's domain back.
    assert fault["pkru_restored"] == pkru_allowing(a) == r.notes["a_pkru"]
    assert fault["thread_key"] == a


def test_gate_misuse_raises_with_keys(qemu_probes: ProbeRun) -> None:
    r = qemu_probes["gate_misuse_raises_and_leaves_domain_usable"]
    assert r.exit_code == 0, r.describe()
    assert r.notes["usable_after_misuse"] == "ok"
    assert r.notes["enter_destroyed"] == r.notes["exit_not_entered"] == "GateError"
    assert r.notes["nested_enter_other"] == "GateError"
    assert r.notes["counters"]["misuse"] == 9


def test_every_common_probe_passes_with_keys(qemu_probes: ProbeRun) -> None:
    """The bookkeeping probes end as they do natively (the native tests check details)."""
    for name in [
        "keys_off_setting_selects_no_keys_implementation",
        "alloc_returns_zeroed_memory_inside_the_domain_slot",
        "current_domain_follows_the_gates_per_thread",
        "exit_from_a_thread_that_did_not_enter_raises",
        "destroy_refused_while_another_thread_is_inside",
        "forked_child_can_destroy_domain_entered_by_another_thread",
        "counters_count_every_gate_crossing",
    ]:
        r = qemu_probes[name]
        assert r.exit_code == 0 and r.error is None, r.describe()
    code = bytes.fromhex(qemu_probes["gate_code_is_one_checked_wrpkru_sequence"].notes["gate_code"])
    assert is_checked_gate(code)


def test_qemu_run_fits_its_time_budget(qemu_probes: ProbeRun) -> None:
    print(f"\nQEMU boot + {len(qemu_probes.results)} probes: {qemu_probes.seconds:.1f} s")
    assert qemu_probes.seconds < QEMU_TIMEOUT_S
