"""Private heaps natively (no keys on this host: the no-keys implementation routes
every allocation exactly as with keys, without protection): placement, controls,
collection, recycling.  The faults themselves are in test_private_heaps_qemu.py."""

from __future__ import annotations

import subprocess

import pytest
from heap_checks import (
    check_fork_leaves_domain_thread_state,
    check_names_interned_inside,
    check_shared_containers_grown_inside,
    check_state_made_on_first_use,
)
from heap_kinds import KINDS
from probe_protocol import parse_results
from probe_runs import HERE, ProbeRun, run_probes


@pytest.fixture(scope="module")
def native_heap_probes(runtime: str) -> ProbeRun:
    proc, seconds = run_probes([runtime, str(HERE / "heap_probes.py")], timeout=600)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"heap probes failed natively:\n{output[-4000:]}"
    return ProbeRun(parse_results(proc.stdout), seconds, output)


def test_every_object_a_function_makes_lies_in_its_slot(native_heap_probes: ProbeRun) -> None:
    r = native_heap_probes["function_thread_reads_back_its_own_private_objects"]
    assert r.exit_code == 0 and r.error is None, r.describe()
    assert r.notes["in_slot"] == {kind: True for kind in KINDS}
    assert r.notes["equal"] == {kind: 1 for kind in KINDS}


def test_shared_objects_stay_shared(native_heap_probes: ProbeRun) -> None:
    r = native_heap_probes["function_threads_read_shared_input_and_shared_objects_stay_shared"]
    assert r.exit_code == 0 and r.notes["read"] == [1, 1], r.describe()
    assert r.notes["shared_slot"] == [None, None]
    r = native_heap_probes["shared_list_grown_inside_a_domain_keeps_its_storage_shared"]
    assert r.exit_code == 0 and r.notes["items_slot"] is None, r.describe()


def test_interleaved_domains_cycles_and_recycling(native_heap_probes: ProbeRun) -> None:
    r = native_heap_probes["two_domains_live_at_once_interleave_without_faults"]
    assert r.exit_code == 0 and r.notes["ok"] == [1, 1], r.describe()
    r = native_heap_probes["cycles_made_inside_a_domain_are_collected_inside_it"]
    assert r.exit_code == 0 and r.notes["collected_inside"] == 998, r.describe()
    r = native_heap_probes["fifty_sequential_private_heaps_recycle_keys"]
    assert r.exit_code == 0 and r.notes["ok"] == 50 and r.notes["live"] == 0, r.describe()


def _run(runtime: str, code: str) -> str:
    proc = subprocess.run([runtime, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_private_heap_flag_and_stats(runtime: str) -> None:
    code = (
        "import _faastlane as f\n"
        "plain = f.Domain(); heap = f.Domain(private_heap=True)\n"
        "print(plain.private_heap, heap.private_heap, plain.heap_stats())\n"
        "def body():\n    x = bytes(1 << 20)\n"
        "with heap: body()\n"
        "s = heap.heap_stats(); print(s['large_blocks'], s['huge_extents_free'] >= 1)\n"
        "heap.destroy(); print(heap.private_heap, heap.heap_stats())\n"
    )
    assert _run(runtime, code).splitlines() == ["False True None", "0 True", "False None"]


def test_objects_made_outside_domains_never_land_in_a_slot(runtime: str) -> None:
    """With isolation off (no thread inside a domain) allocation is stock CPython's,
    even while private heaps exist."""
    code = (
        "import _faastlane as f, gc\n"
        "d = f.Domain(private_heap=True)\n"
        "objs = [str(i) * 50 for i in range(2000)] + [bytes(70000), bytes(600), {1: 2}]\n"
        "gc.collect()\n"
        "print(sum(f.slot_of(id(o)) is not None for o in objs + gc.get_objects()))\n"
    )
    assert _run(runtime, code) == "0"


def test_shared_containers_grown_inside_a_domain_stay_readable_outside(
    native_heap_probes: ProbeRun,
) -> None:
    r = native_heap_probes["shared_containers_grown_inside_a_domain_stay_readable_outside"]
    check_shared_containers_grown_inside(r)


def test_names_interned_inside_a_domain_are_shared_copies(native_heap_probes: ProbeRun) -> None:
    r = native_heap_probes["names_interned_inside_a_domain_are_shared_copies"]
    check_names_interned_inside(r)


def test_protection_domain_wrapper_gives_a_private_heap(runtime: str) -> None:
    repo = HERE.parents[1]
    code = (
        f"import sys; sys.path.insert(0, {str(repo / 'composer')!r})\n"
        "from faastlane.runtime.isolation import domains\n"
        "d = domains.ProtectionDomain('f', private_heap=True)\n"
        "plain = domains.ProtectionDomain('g')\n"
        "print(d.private_heap, plain.private_heap, d.heap_stats()['arenas'])\n"
        "d.destroy(); plain.destroy()\n"
    )
    assert _run(runtime, code) == "True False 0"


def test_state_made_on_first_use_lives_with_its_owner(native_heap_probes: ProbeRun) -> None:
    check_state_made_on_first_use(native_heap_probes["state_made_on_first_use_lives_with_its_owner"])


def test_fork_leaves_a_domain_threads_state_alone(native_heap_probes: ProbeRun) -> None:
    check_fork_leaves_domain_thread_state(native_heap_probes["fork_leaves_a_domain_threads_state_alone"])
