"""The libraries a function imports, loaded before it with none of its rights.

Under ``--isolation mpk`` what a function's files import from outside them (numpy, the
app's requirements, the standard library) is imported first and stays shared: every
function that imports it runs it. Its module bodies are the function's code, not the
runtime's, so they run in the *library loader*: a domain with its own key and no private
heap, entered sealed (no domain API, threads born sealed, a PKRU that opens no function's
heap) and guarded -- with no private heap everything they make is shared, and what is
read-only to them is what the runtime froze (``guard.py``): the code of every module
loaded before. The hardening lets them load and use ctypes (``hardening.name_domain``
with ``libraries=True``), as scipy does while it loads.

Standard library only: this ships inside composed actions.
"""

from __future__ import annotations

import ast
import importlib
import os
import pkgutil
import sys

from ..engine import fault_reports
from ..engine.functions import FunctionSpec
from ..engine.own_modules import own_top_names, package_name
from . import domains, guard, hardening
from .source_nodes import source_nodes


def _own_files(root: str, spec: FunctionSpec) -> list[str]:
    """The function's own source files: its whole folder, or for a single-file function
    its module and the helper modules beside it (``functions/_helper.py``: its own copy,
    engine.own_modules)."""
    search = os.path.join(root, spec.search_path)
    own_dir = os.path.dirname(os.path.join(root, spec.module_file))
    if os.path.normpath(own_dir) == os.path.normpath(search):
        # Its module, the modules beside it and the packages there (its own copies).
        own = own_top_names(search)
        return [path for path in _python_files(search)
                if os.path.relpath(path, search).split(os.sep)[0].removesuffix(".py")
                in own]
    return _python_files(own_dir)


def _python_files(folder: str) -> list[str]:
    return sorted(os.path.join(d, f) for d, _, names in os.walk(folder)
                  for f in names if f.endswith(".py") and "__pycache__" not in d)


def own_names(root: str, spec: FunctionSpec) -> frozenset[str]:
    """Top-level module names the function's own files can be imported under."""
    search = os.path.normpath(os.path.join(root, spec.search_path))
    names = set()
    for path in _own_files(root, spec):
        relative = os.path.relpath(path, search).split(os.sep)
        names.add(relative[0] if len(relative) > 1 else os.path.splitext(relative[0])[0])
    # What engine.own_modules gives the function's code as its own.
    names |= own_top_names(os.path.join(root, spec.own_folder or spec.search_path))
    names.add(package_name(spec.name))  # engine.own_modules: its modules' package
    return frozenset(names)


def import_dependencies(root: str, spec: FunctionSpec) -> None:
    """Import, shared, every module the function's files import from outside them."""
    search = os.path.join(root, spec.search_path)
    if search not in sys.path:
        sys.path.insert(0, search)
    finder = pkgutil.get_importer(search)  # cached shared in sys.path_importer_cache
    if finder is not None:  # and its listing of the folder (a single file's helpers)
        finder.find_spec("__faastlane_warm__")
    if spec.own_folder is not None:
        # And those of its own packages' folders (engine.own_modules imports them).
        for folder, subfolders, _ in os.walk(os.path.join(root, spec.own_folder)):
            subfolders[:] = [d for d in subfolders if d != "__pycache__"]
            finder = pkgutil.get_importer(folder)
            if finder is not None:  # its listing of the folder, made shared
                finder.find_spec("__faastlane_warm__")
    own = own_names(root, spec)
    names = [name for name in sorted(_imported_names(_own_files(root, spec)))
             if name.split(".")[0] not in own]
    if not names:
        return
    loader = _library_loader(spec.name)
    guard.freeze_shared_state()  # the first function's libraries too find it frozen
    before = guard.import_state()
    loader.run_sealed(_import_libraries, names)
    guard.check_import_state(before, spec.name)
    # Their namespaces are frozen once the function has loaded (load): libraries
    # choose an implementation on first use and rebind it (urllib3's wait_for_socket),
    # and the function's set-up is often that first use.


def _library_loader(function: str) -> domains.ProtectionDomain:
    """The domain the libraries a function imports are loaded in, named for it.

    Their module bodies are the function's code, not the runtime's: they run sealed
    (no domain API, threads they start born sealed), under a PKRU that opens no
    function's heap, and guarded -- with no private heap everything they make is
    shared, so what is read-only to them is what the runtime froze: the code of every
    module loaded before (guard.py). One domain (one key) serves every function."""
    if not _LIBRARY_LOADER:
        _LIBRARY_LOADER.append(domains.ProtectionDomain("libraries"))
    loader = _LIBRARY_LOADER[0]
    label = f"{function} (importing its libraries)"
    fault_reports.announce(loader.slot, loader.key, label)
    guard.name_slot(loader.slot, label)
    hardening.name_domain(loader.slot, label, libraries=True)
    return loader


_LIBRARY_LOADER: list[domains.ProtectionDomain] = []


def _import_libraries(names: list[str]) -> None:
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the import inside the domain reports it
            pass


def _imported_names(files: list[str]) -> set[str]:
    names: set[str] = set()
    for node in source_nodes(files):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names if a.name != "*")
    return names
