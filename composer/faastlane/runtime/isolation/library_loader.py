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

A library a function imports lazily, while it runs (``importlib.import_module``,
Pillow's plugins, ``_strptime``), is loaded there too, by the runtime's *loader thread*:
the function's thread hands it the name and waits. Imported on the function's own
thread, the library's body would run with the function's PKRU, its data a frame away.

Standard library only: this ships inside composed actions.
"""

from __future__ import annotations

import ast
import importlib
import os
import pkgutil
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any

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
    guard.freeze_shared_state()  # the first function's libraries too find it frozen
    _run_in_loader(spec.name, _import_libraries, names)
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
# One import in the loader at a time: its name is the function it loads for.
_LOADING = threading.Lock()


def _run_in_loader(function: str, body: Callable[..., Any], *args: Any,
                   freeze: bool = False) -> Any:
    """``body(*args)`` sealed in the library loader, for ``function``'s libraries; then
    what decides later imports is checked (guard.check_import_state). ``freeze``: what
    it imported, even in part, is frozen now (a lazy import: the function has loaded)."""
    with _LOADING:
        loader = _library_loader(function)
        before = guard.import_state()
        try:
            return loader.run_sealed(body, *args)
        finally:
            if freeze:
                guard.freeze_new_modules()
            guard.check_import_state(before, function)


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


# ------------------------------------------------------------------ lazy imports

FindAndLoad = Callable[[str, Any], Any]  # importlib._bootstrap._find_and_load


class _Request:
    """A lazy import handed to the loader thread. Made by a runtime operation
    (``call_shared``) on the function's thread: shared, readable by the loader."""

    __slots__ = ("function", "name", "import_", "done", "module", "error")

    def __init__(self, function: str, name: str, import_: Any) -> None:
        self.function, self.name, self.import_ = function, name, import_
        self.done = threading.Lock()
        self.done.acquire()  # released by the loader thread once the import ended
        self.module: Any = None
        self.error: BaseException | None = None


class _LoaderThread:
    """The runtime's thread that imports what functions import lazily, one import at a
    time, in the library loader. Started outside every domain (a thread a sealed thread
    started would be born sealed in its domain); a forked child starts its own."""

    def __init__(self, find_and_load: FindAndLoad) -> None:
        self.find_and_load = find_and_load
        self.requests: queue.SimpleQueue[_Request] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, daemon=True,
                                       name="faastlane:library-loader")
        self.thread.start()

    def _serve(self) -> None:
        while True:
            request = self.requests.get()
            try:
                request.module, request.error = _run_in_loader(
                    request.function, self._import, request.name, request.import_,
                    freeze=True)
            except BaseException as exc:  # noqa: BLE001 - the waiting function's error
                request.error = exc
            finally:
                request.done.release()

    def _import(self, name: str, import_: Any) -> tuple[Any, BaseException | None]:
        try:
            return self.find_and_load(name, import_), None
        except BaseException as exc:  # noqa: BLE001 - re-raised on the function's thread
            return None, exc


_THREAD: list[_LoaderThread] = []
_FIND_AND_LOAD: list[FindAndLoad] = []


def serve_lazy_imports(find_and_load: FindAndLoad) -> None:
    """Have lazy imports of functions loaded by ``find_and_load`` on the loader thread
    (once per process, outside every domain; ``start_loader_thread`` starts it)."""
    if not _FIND_AND_LOAD:
        _FIND_AND_LOAD.append(find_and_load)
        os.register_at_fork(after_in_child=_THREAD.clear)
    start_loader_thread()


def start_loader_thread() -> None:
    """Start the loader thread if this process has none yet: call outside every domain,
    before a function's code runs (a forked child has lost its parent's thread)."""
    if not _THREAD and _FIND_AND_LOAD:
        _THREAD.append(_LoaderThread(_FIND_AND_LOAD[0]))


@guard.broker
def import_lazily(function: str, name: str, import_: Any) -> Any:
    """Import ``name`` for ``function`` on the loader thread and wait: a runtime
    operation a function's thread runs (``call_shared``), so that the request is shared.
    The module, or the import's exception, as ``find_and_load`` gives it."""
    if not _THREAD:
        raise ImportError(f"{name}: no library loader runs in this process", name=name)
    request = _Request(function, sys.intern(name), import_)
    _THREAD[0].requests.put(request)
    request.done.acquire()
    if request.error is not None:
        raise request.error
    return request.module
