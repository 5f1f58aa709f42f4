"""The kinds of C buffers the malloc probes make (shared by malloc_probes.py, which runs
on the runtime with numpy and Pillow, and the tests, which need neither)."""

C_KINDS = ["numpy_small", "numpy_large", "pillow", "malloc", "malloc_huge"]
