"""Process-wide caches that C extensions grow on whichever thread needs a new entry.

Grown on a function's thread inside its domain, such a cache's storage would be private
and the next function to use the library would fault reading it: the C twin of the
standard library caches private_heaps.py purges. They hold type information, not a
function's data, so the code that grows them allocates in the shared heap
(``_faastlane.share_allocations_of``), found by symbol when the library is loaded.
"""

from __future__ import annotations

import sys

from . import domains
from .elf_symbols import code_ranges

# Extension module -> the functions (name prefixes) that allocate its shared caches.
KNOWN_CACHES: dict[str, tuple[str, ...]] = {
    # numpy's ufunc dispatch and promotion caches: an identity hash of DType tuples
    # whose bucket table is reallocated (PyMem_Calloc) when it fills.
    "numpy._core._multiarray_umath": ("PyArrayIdentityHash_",),
}

_shared: set[str] = set()


def share_loaded() -> list[str]:
    """Register the cache-growing code of every known extension loaded so far (once
    each); returns a warning per extension whose code could not be found."""
    warnings = []
    for module_name, prefixes in KNOWN_CACHES.items():
        module = sys.modules.get(module_name)
        path = getattr(module, "__file__", None)
        if path is None or module_name in _shared:
            continue
        _shared.add(module_name)
        ranges = code_ranges(path, prefixes)
        if not ranges:
            warnings.append(f"{module_name}: no symbol for {', '.join(prefixes)} in {path}; "
                            "a function that grows its cache may fault the next user")
        for found in ranges:
            domains.native_module().share_allocations_of(found.start, found.end)
    return warnings
