"""The kinds of private objects the heap probes make, one per allocator size class
(shared by heap_probes.py, which runs on the runtime, and the tests, which do not)."""

KINDS = ["str", "bytes", "dict", "list", "mid_bytes", "large_bytes"]
