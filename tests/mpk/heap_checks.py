"""Checks of heap probes whose outcome is the same natively and under QEMU."""

from __future__ import annotations

from probe_protocol import SEGV_PKUERR, SIGSEGV, ProbeResult


def assert_owner_key_fault(r: ProbeResult) -> dict[str, int]:
    """The child died reading, of a protection-key fault on the owner's key."""
    assert r.signal == SIGSEGV, r.describe()
    assert r.notes.get("about_to_read") is True and "read" not in r.notes, r.describe()
    assert r.fault is not None and r.fault["code"] == SEGV_PKUERR, r.describe()
    assert r.fault["pkey"] == r.notes["a_key"], r.describe()
    assert r.fault["owner_slot"] == r.notes["a_slot"], r.describe()
    return r.fault


def check_shared_containers_grown_inside(r: ProbeResult) -> None:
    """Shared containers grown inside a domain keep their storage shared and readable."""
    assert r.exit_code == 0 and r.error is None, r.describe()
    lengths = sum(len(f"name{i}") for i in range(64))
    total = sum(range(64))
    assert (r.notes["list"], r.notes["dict"], r.notes["set"]) == (lengths, total + lengths, lengths)
    assert (r.notes["deque"], r.notes["bytearray"], r.notes["globals"]) == (total, total, total)
    assert r.notes["list_items_slot"] is None


def check_names_interned_inside(r: ProbeResult) -> None:
    """Names interned inside a domain are shared copies, usable from outside."""
    assert r.exit_code == 0 and r.error is None, r.describe()
    assert (r.notes["built_inside"], r.notes["interned_shared"]) == (1, 1)
    assert (r.notes["lookup"], r.notes["attr"]) == (True, 7)
    assert r.notes["attr_key_slot"] == [None]


def check_state_made_on_first_use(r: ProbeResult) -> None:
    """Per-object state made on first use inside a domain lives with its owner."""
    assert r.exit_code == 0 and r.error is None, r.describe()
    assert r.notes["private"] == [0] * 7 and r.notes["own_dict_private"] == 1
    assert r.notes["read"] == [0, 0, 2, 0, 0, 1, True]
    assert r.notes["subclass_table_slot"] is None
    assert r.notes["subclassed_outside"] == "Outside"


def check_fork_leaves_domain_thread_state(r: ProbeResult) -> None:
    """A forked child does not clear a domain thread's state: exits 0, no finalizer."""
    assert r.exit_code == 0 and r.error is None, r.describe()
    assert r.notes["child_status"] == 0 and r.notes["finalized_in_child"] == ""
