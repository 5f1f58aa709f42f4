"""The standard library's process-wide caches, kept per function (``mpk_caches.c``).

``re``'s pattern caches, ``struct``'s format cache, every ``functools.lru_cache`` and
``linecache``'s lines are one per process. Filled by a function inside its domain, an
entry is private; another function running at the same time (threads of one process,
``--threads-only``) that hits it faults, and purging a function's entries at its exit
cannot help while it still runs. So from the first private heap on, function code uses
its own copy of each such cache, made in its heap on first use and kept warm for its
later invocations; code outside every private heap (the Orchestrator, the library
loader) keeps using the shared one, and function code never writes it.

Standard library only: this ships inside composed actions.
"""

from __future__ import annotations

import functools
import importlib

from . import domains, guard

# Module -> its cache dicts, looked up as module globals at each use: each becomes a
# _faastlane.PerFunctionDict forwarding to the caller's own copy.
PER_FUNCTION_DICTS: dict[str, tuple[str, ...]] = {
    "re": ("_cache", "_cache2"),
    "linecache": ("cache", "_interactive_cache"),
    "_strptime": ("_regex_cache",),
}

# The dicts code outside every private heap uses, by (module, name).
_shared: dict[tuple[str, str], dict[object, object]] = {}


def install() -> None:
    """Redirect the caches, once, outside every domain and before any function loads."""
    if _shared:
        return
    native = domains.native_module()
    native.caches_per_function(functools._lru_cache_wrapper,
                               importlib.import_module("_struct"))
    for module_name, names in PER_FUNCTION_DICTS.items():
        module = importlib.import_module(module_name)
        for name in names:
            shared = getattr(module, name)
            _shared[module_name, name] = shared
            setattr(module, name, native.PerFunctionDict(shared))
        guard.freeze_namespace(module)  # the caches stay where they are


def shared_dicts() -> list[dict[object, object]]:
    """The shared dicts behind the per-function ones (empty before install())."""
    return list(_shared.values())

