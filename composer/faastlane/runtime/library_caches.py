"""Process-wide library state that functions would otherwise create inside their domains.

Made on a function's thread inside its domain, such state is private, and the next
function that uses the library faults reading it. It holds types and configuration, not
a function's data, so it is made shared -- the C twin of the standard library caches
private_heaps.py purges:

- caches that C extensions grow on whichever thread needs a new entry: the code that
  grows them allocates in the shared heap (``_faastlane.share_allocations_of``), found by
  symbol when the library is loaded;
- state that Python libraries create on first use: warmed outside every domain when the
  functions load (boto3's default session and the service models it loads).
"""

from __future__ import annotations

import ast
import sys

from . import domains
from .elf_symbols import code_ranges
from .source_nodes import source_nodes

# Extension module -> the functions (name prefixes) that allocate its shared caches.
KNOWN_CACHES: dict[str, tuple[str, ...]] = {
    # numpy's ufunc dispatch and promotion caches: an identity hash of DType tuples
    # whose bucket table is reallocated (PyMem_Calloc) when it fills.
    "numpy._core._multiarray_umath": ("PyArrayIdentityHash_",),
}

# Module -> its module-level memo dicts: a function's entries are purged at each of its
# exits (private_heaps._purge_caches), like re's cache.
MEMO_DICTS: dict[str, tuple[str, ...]] = {
    # xform_name: CamelCase -> snake_case names (API operations, endpoint functions).
    "botocore": ("_xform_cache",),
}

_shared: set[str] = set()


def memo_dicts() -> list[dict[object, object]]:
    """The memo dicts of the known libraries loaded so far."""
    found = []
    for module_name, names in MEMO_DICTS.items():
        module = sys.modules.get(module_name)
        for name in names:
            memo = getattr(module, name, None)
            if type(memo) is dict:
                found.append(memo)
    return found


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


def warm(sources: list[str]) -> None:
    """Create, outside every domain, the library state the functions' module set-up and
    calls would otherwise create privately (``sources``: their files)."""
    boto3 = sys.modules.get("boto3")
    if boto3 is not None:
        _warm_boto3(boto3, _aws_services(sources))


def _warm_boto3(boto3: object, services: set[str]) -> None:
    """boto3's default session is made by the first ``boto3.client()``; its event
    handlers, credentials and botocore's loader cache (service models, endpoints) are
    shared by every client made from it. Made here, from the same environment."""
    if getattr(boto3, "DEFAULT_SESSION", None) is None:
        boto3.setup_default_session()  # type: ignore[attr-defined]
    session = boto3.DEFAULT_SESSION  # type: ignore[attr-defined]
    for service in sorted(services):
        try:
            session.client(service)
        except Exception:  # noqa: BLE001 - the function's own call reports the problem
            pass


def _aws_services(sources: list[str]) -> set[str]:
    """Service names the sources pass to ``client("...")`` or ``resource("...")``."""
    return {node.args[0].value for node in source_nodes(sources)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("client", "resource") and node.args
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)}
