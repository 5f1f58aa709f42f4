"""Checks of C-malloc probes (malloc_probes.py) whose outcome is the same natively and
under QEMU."""

from __future__ import annotations

from probe_protocol import ProbeResult

# What a function allocates through C inside its private heap: all of it in the slot.
PRIVATE = [
    "numpy_small", "numpy_mid", "numpy_large", "numpy_zeros",
    "pillow_struct", "pillow_pixels", "pillow_resized",
    "malloc", "malloc_huge", "calloc", "realloc", "reallocarray",
    "posix_memalign", "aligned_alloc", "memalign", "valloc",
]
# What stays shared: the raw domain (numpy's dims/strides block comes from it) and what
# glibc allocates on its caller's behalf.
SHARED = ["numpy_dims", "raw", "strdup"]


def check_c_allocations_placement(r: ProbeResult) -> None:
    assert r.exit_code == 0 and r.error is None, r.describe()
    a_slot = r.notes["a_slot"]
    assert {k: r.notes["slots"][k] for k in PRIVATE} == dict.fromkeys(PRIVATE, a_slot)
    assert {k: r.notes["slots"][k] for k in SHARED} == dict.fromkeys(SHARED, None)
    # calloc zeroed, realloc kept the bytes, alignments honoured, usable sizes; the
    # zeros array reads as zeros; Pillow's pixels hold the fill value.
    assert (r.notes["checks"], r.notes["pixels"]) == (3, 1), r.describe()
    assert set(r.notes["outside_slots"].values()) == {None}, r.describe()
    assert r.notes["outside_checks"] == 1


def check_same_results(r: ProbeResult) -> None:
    assert r.exit_code == 0 and r.error is None, r.describe()
    assert r.notes["equal"] == [True, True, True], r.describe()


def check_small_numpy_blocks(r: ProbeResult) -> None:
    assert r.exit_code == 0 and r.error is None, r.describe()
    assert r.notes["handler"] == "faastlane_domain_allocator"
    assert (r.notes["foreign_in_b"], r.notes["outside_in_slots"]) == (0, 0), r.describe()


def check_shared_runtime_structures(r: ProbeResult) -> None:
    assert r.exit_code == 0 and r.error is None, r.describe()
    assert r.notes["raw_slot"] is None
    assert (r.notes["worker"], r.notes["dlopen"]) == (sum(range(1000)), 1)
    assert r.notes["dlopen_outside"] is True and r.notes["mktime_same"] is True
    assert r.notes["current_frames"] is True


def check_bounded_cycles(r: ProbeResult) -> None:
    assert r.exit_code == 0 and r.error is None, r.describe()
    # 10,000 more cycles after the first 1,000 commit no more slot memory.
    assert r.notes["committed_after_11k"] == r.notes["committed_after_1k"], r.describe()
    assert r.notes["stats"]["malloc_blocks"] == 0, r.describe()


def check_type_cache_names(r: ProbeResult) -> None:
    assert r.exit_code == 0 and r.error is None, r.describe()
    assert (r.notes["value"], r.notes["name_private"]) == (14, 1), r.describe()
    assert r.notes["refs_kept"] == 0, r.describe()
