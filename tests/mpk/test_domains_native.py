"""``_faastlane`` on this host, natively: detection, bookkeeping, gate misuse, scrubbing.

The development and CI CPUs have no ``pku``: the module must say so (never executing
RDPKRU/WRPKRU, which would be SIGILL) and run its no-keys implementation, whose
bookkeeping is the same as with keys.  Where the host does have keys the detection
tests expect that instead (decided from /proc/cpuinfo, not from the module).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from pkru_spec import CHECKED_PROLOGUE, JNE_REL8, RET, WRPKRU, is_checked_gate
from probe_protocol import SEGV_ACCERR, SIGSEGV
from probe_runs import ProbeRun


def host_has_pku() -> bool:
    """The kernel's view of the CPU, independent of the module under test."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return "pku" in line.split(":", 1)[1].split()
    return False


def test_import_and_detection_never_raise_sigill(runtime: str) -> None:
    code = (
        "import _faastlane as f; print(f.available(), f.implementation(), hasattr(f, 'read_pkru'))"
    )
    proc = subprocess.run([runtime, "-c", code], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, FAASTLANE_MPK="auto"))  # the host's own
    assert proc.returncode == 0, proc.stderr  # -4 would be SIGILL
    expected = "True keys True" if host_has_pku() else "False no-keys False"
    assert proc.stdout.split() == expected.split()


def test_unavailable_reason_names_what_is_missing(native_probes: ProbeRun) -> None:
    notes = native_probes["detection_reports_availability_and_reason"].notes
    if host_has_pku():
        assert notes["available"] is True and notes["reason"] is None
        return
    assert notes["available"] is False
    assert notes["implementation"] == "no-keys"
    assert notes["has_read_pkru"] is False
    assert notes["restore_thread_pkru"] is None  # and no SIGILL getting there
    assert "protection keys" in notes["reason"] and "pku" in notes["reason"]


def test_keys_off_setting_selects_no_keys_implementation(native_probes: ProbeRun) -> None:
    r = native_probes["keys_off_setting_selects_no_keys_implementation"]
    assert r.exit_code == 0, r.describe()
    assert r.notes["available"] is False
    assert r.notes["reason"] == "protection keys disabled by FAASTLANE_MPK=off"
    assert r.notes["key"] is None and r.notes["has_read_pkru"] is False


def test_domain_thread_reads_and_writes_its_own_buffer(native_probes: ProbeRun) -> None:
    r = native_probes["domain_thread_reads_and_writes_its_own_buffer"]
    assert r.exit_code == 0, r.describe()
    assert r.notes["read"] == "secret-of-domain-A"
    assert r.notes["reread"] == "rewritten"


def test_alloc_returns_zeroed_memory_inside_the_domain_slot(native_probes: ProbeRun) -> None:
    r = native_probes["alloc_returns_zeroed_memory_inside_the_domain_slot"]
    assert r.exit_code == 0, r.describe()
    n = r.notes
    first, second, big = n["addresses"]
    assert n["base"] <= first < second < big < n["base"] + n["size"]
    assert n["size"] == 4 << 30
    assert first + 100 <= second and second % 4096 == 0 and second + 5000 <= big
    assert n["used"] == big + (3 << 20) - n["base"]
    assert n["used"] <= n["committed"] < n["used"] + (64 << 10)
    assert len(set(n["slot_of"])) == 1 and n["slot_of"][0] is not None
    assert n["owner_is_domain"] == [True, True, True]
    assert n["slot_of_shared"] is None
    assert n["zero"] is True
    assert (n["bad_size_error"], n["bad_align_error"], n["too_big_error"]) == (
        "ValueError",
        "ValueError",
        "MemoryError",
    )


def test_current_domain_follows_the_gates_per_thread(native_probes: ProbeRun) -> None:
    r = native_probes["current_domain_follows_the_gates_per_thread"]
    assert r.exit_code == 0, r.describe()
    assert all(r.notes.values()), r.describe()
    assert len(r.notes) == 8


def test_gate_misuse_raises_and_leaves_domain_usable(native_probes: ProbeRun) -> None:
    r = native_probes["gate_misuse_raises_and_leaves_domain_usable"]
    assert r.exit_code == 0, r.describe()
    n = r.notes
    gate_errors = [
        "exit_not_entered",
        "nested_enter_same",
        "nested_enter_other",
        "exit_other_domain",
        "destroy_while_inside",
        "exit_twice",
        "enter_destroyed",
    ]
    assert {k: n[k] for k in gate_errors} == dict.fromkeys(gate_errors, "GateError")
    assert n["destroy_destroyed"] == "DomainError"
    assert n["alloc_destroyed"] == "DomainError"
    assert n["current_after_misuse"] is True
    assert n["usable_after_misuse"] == "ok"
    # Every refusal is counted; the successful gates too (one enter + one with).
    assert n["counters"]["misuse"] == 9
    assert (n["counters"]["enters"], n["counters"]["exits"]) == (2, 2)
    assert n["gate_error_is_domain_error"] and n["limit_error_is_domain_error"]


def test_exit_from_a_thread_that_did_not_enter_raises(native_probes: ProbeRun) -> None:
    r = native_probes["exit_from_a_thread_that_did_not_enter_raises"]
    assert r.exit_code == 0, r.describe()
    assert r.notes == {"other_thread_exit": "GateError", "entered_after": 1, "entered_end": 0}


def test_destroy_refused_while_another_thread_is_inside(native_probes: ProbeRun) -> None:
    r = native_probes["destroy_refused_while_another_thread_is_inside"]
    assert r.exit_code == 0, r.describe()
    assert r.notes == {
        "entered": 1,
        "destroy_while_inside": "GateError",
        "destroy_after_exit": None,
        "alive": False,
    }


def test_more_than_fifteen_live_domains_each_keep_their_memory(native_probes: ProbeRun) -> None:
    # Without keys nothing parks (no key to give up); the bookkeeping is the same.
    r = native_probes["more_than_fifteen_live_domains_park_idle_ones"]
    assert r.exit_code == 0, r.describe()
    assert r.notes["slots"] == 20 and r.notes["readback_ok"] == 20
    assert r.notes["keys_at_creation"] == [None] * 20
    counters = r.notes["counters"]
    assert (counters["live"], counters["parked"], counters["parkings"]) == (20, 0, 0)
    # One domain per address slot: the 65th is refused until one is destroyed.
    assert r.notes["past_every_slot"] == "DomainLimitError"
    assert r.notes["after_destroy"] is True


def test_two_hundred_domains_created_and_destroyed_in_sequence(native_probes: ProbeRun) -> None:
    r = native_probes["two_hundred_domains_created_and_destroyed_in_sequence_recycle_keys"]
    assert r.exit_code == 0, r.describe()
    assert r.notes["readback_ok"] == 200
    c = r.notes["counters"]
    assert (c["created"], c["destroyed"], c["live"], c["peak_live"]) == (200, 200, 0, 1)
    assert c["keys_allocated"] == c["keys_freed"]


def test_destroyed_domain_slot_faults_on_access(native_probes: ProbeRun) -> None:
    r = native_probes["destroyed_domain_slot_faults_on_access"]
    assert r.signal == SIGSEGV, r.describe()
    assert "read" not in r.notes
    assert r.fault is not None
    assert r.fault["code"] == SEGV_ACCERR  # PROT_NONE, key 0: not a key fault
    assert r.fault["addr"] == r.notes["a_address"]
    assert r.fault["owner_slot"] == r.notes["a_slot"] and r.fault["owner_key"] == -1


def test_recycled_slot_reads_zero_not_previous_secret(native_probes: ProbeRun) -> None:
    r = native_probes["recycled_slot_and_key_read_zero_not_previous_secret"]
    assert r.exit_code == 0, r.describe()
    assert r.notes["same_slot"] and r.notes["same_address"]
    assert r.notes["content"] == "00" * len(b"secret-of-domain-A")


def test_forked_child_can_destroy_domain_entered_by_another_thread(native_probes: ProbeRun) -> None:
    r = native_probes["forked_child_can_destroy_domain_entered_by_another_thread"]
    assert r.exit_code == 0, r.describe()
    assert r.notes == {"child_destroy_status": 0, "parent_still_entered": 1}


def test_destroyed_domain_objects_are_released(native_probes: ProbeRun) -> None:
    """The module keeps a live domain alive, and lets go of it at destroy()."""
    r = native_probes["destroyed_domain_objects_are_released"]
    assert r.exit_code == 0, r.describe()
    assert r.notes == {"references_dropped_by_destroy": 1, "live_domains": 0}


def test_counters_count_every_gate_crossing(native_probes: ProbeRun) -> None:
    r = native_probes["counters_count_every_gate_crossing"]
    assert r.exit_code == 0, r.describe()
    assert (r.notes["domain_enters"], r.notes["domain_exits"]) == (1000, 1000)
    delta = r.notes["delta"]
    assert (delta["enters"], delta["exits"], delta["created"], delta["destroyed"]) == (
        1000,
        1000,
        1,
        1,
    )
    assert delta["misuse"] == 0


def test_gate_code_is_one_checked_wrpkru_sequence(native_probes: ProbeRun) -> None:
    """The compiled gate is exactly ERIM's checked sequence, with one WRPKRU."""
    notes = native_probes["gate_code_is_one_checked_wrpkru_sequence"].notes
    code = bytes.fromhex(notes["gate_code"])
    assert is_checked_gate(code), code.hex()
    assert code.count(WRPKRU) == 1


def test_flipping_any_gate_byte_breaks_the_checked_gate_rule() -> None:
    """The rule above is not vacuous: any one-bit change of a good gate violates it."""
    n = len(CHECKED_PROLOGUE)
    good = CHECKED_PROLOGUE + bytes([JNE_REL8, (-(n + 2)) & 0xFF, RET])
    assert is_checked_gate(good)
    for i in range(len(good)):
        bad = bytearray(good)
        bad[i] ^= 0x01
        assert not is_checked_gate(bytes(bad)), f"flipped byte {i} still accepted"
