"""Every function its own modules, as each Lambda function has its own task root.

Two functions that each ship a helper (``functions/a/utils.py``, ``functions/b/utils.py``,
each doing ``import utils``) would share one ``sys.modules["utils"]`` in one process: the
second would silently get the first one's. So the top-level modules found in a function's
own folder (``functions/NAME/``: its ``.py`` files, packages, extension modules) are
imported under a private package named after the function, ``faastlane_own_NAME``
(``faastlane_own_NAME.utils``), whose ``__path__`` is that folder.

Routing is by ``import`` statement (``builtins.__import__`` is wrapped once, only when
some function has such modules): a statement executed by the function's own code -- its
entry module or one of its own modules, recognised by the module name in the executing
frame's globals -- that names one of the function's own top-level modules gets the
function's copy; every other import (shared third-party packages, the standard library,
any import by code outside the function) is the interpreter's own. Cost: a Python-level
call and a dict lookup per executed ``import`` statement (two for a function's code), the
price of wrapping ``__import__`` at all (inside a function body the interpreter then also
builds the frame's locals); paid only once some function has its own modules (always
under mpk, which already wrapped it for module instances).

Under ``--isolation mpk`` the same wrapper also gives a function its own instances of
modules that keep a per-caller default (``isolation.module_instances``: boto3's
session): one wrapper, not two.

Known limits, documented in README.md: ``importlib.import_module("utils")``,
``__import__`` called with foreign globals, and imports made by C code bypass the
routing and find the folder on ``sys.path`` (each function's folder is still put there,
as Lambda puts its task root), i.e. whichever function's ``utils`` is found first; a
function's own module sees ``__name__ == "faastlane_own_NAME.utils"``. A single-file
function's own modules are the helpers beside it in ``functions/`` (``_helper.py``):
each single-file function gets its own copy of them too (under mpk: imported inside its
domain, sealed -- never on the Orchestrator's thread).
"""

from __future__ import annotations

import builtins
import importlib.machinery
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

PACKAGE_PREFIX = "faastlane_own_"
_SOURCE_SUFFIXES = (".py", *importlib.machinery.EXTENSION_SUFFIXES)

Importer = Callable[..., ModuleType]
# Called after every import the wrapper did not route (isolation mpk: module instances):
# (imported module, name, fromlist, level) -> the module to hand back.
AfterImport = Callable[[ModuleType, str, Any, int], ModuleType]


class Namespace:
    """One function's own modules: the package they are imported under, their names."""

    def __init__(self, package: str, folder: str, own: frozenset[str]) -> None:
        self.package = package
        self.folder = folder
        self.own = own
        # Made once, here (under mpk: outside every domain, in the shared heap).
        self.mapped = {name: f"{package}.{name}" for name in own}


def package_name(function: str) -> str:
    """The private package a function's own modules are imported under."""
    return PACKAGE_PREFIX + "".join(c if c.isalnum() else "_" for c in function)


def own_top_names(folder: str) -> frozenset[str]:
    """The top-level module names the files in ``folder`` can be imported under."""
    names = set()
    try:
        entries = os.listdir(folder)
    except OSError:
        return frozenset()
    for entry in entries:
        path = os.path.join(folder, entry)
        if os.path.isdir(path):
            if entry.isidentifier() and entry != "__pycache__":
                names.add(entry)
            continue
        for suffix in _SOURCE_SUFFIXES:
            if entry.endswith(suffix) and entry[:-len(suffix)].isidentifier():
                names.add(entry[:-len(suffix)])
    return frozenset(names)


class _PackageLoader:
    """Makes a function's private package: an empty package over its folder."""

    @staticmethod
    def create_module(spec: Any) -> None:
        return None

    @staticmethod
    def exec_module(module: ModuleType) -> None:
        return None


class _PackageFinder:
    """On ``sys.meta_path``: finds ``faastlane_own_NAME`` (its submodules are found by
    the ordinary path finder in the package's ``__path__``)."""

    def __init__(self) -> None:
        self.folders: dict[str, str] = {}

    def find_spec(self, fullname: str, path: Any = None,
                  target: Any = None) -> importlib.machinery.ModuleSpec | None:
        folder = self.folders.get(fullname)
        if folder is None:
            return None
        # The stub wants an importlib.abc.Loader; the import system needs only its methods.
        spec = importlib.machinery.ModuleSpec(fullname, _PackageLoader(),  # type: ignore[arg-type]
                                              is_package=True)
        spec.submodule_search_locations = [folder]
        return spec


class FunctionImporter:
    """``builtins.__import__`` that gives a function's code the function's own modules."""

    def __init__(self, original: Importer) -> None:
        self.original = original
        # A module name's first component -> the function it belongs to: its entry module
        # (loaded under a private name) and its private package.
        self.owners: dict[str, Namespace] = {}
        self.after: AfterImport | None = None

    def __call__(self, name: str, globals: Any = None, locals: Any = None,
                 fromlist: Any = (), level: int = 0) -> ModuleType:
        if level == 0 and globals is not None:
            caller = globals.get("__name__")
            namespace = self.owners.get(caller.partition(".")[0]) if \
                type(caller) is str else None
            if namespace is not None:
                top, dot, rest = name.partition(".")
                mapped = namespace.mapped.get(top)
                if mapped is not None:
                    module = self.original(mapped + dot + rest if dot else mapped,
                                           globals, locals, fromlist, 0)
                    # `import utils` and `import utils.sub` bind the top-level module;
                    # with a fromlist the named module itself was returned.
                    return module if fromlist else sys.modules[mapped]
        imported = self.original(name, globals, locals, fromlist, level)
        after = self.after
        return imported if after is None else after(imported, name, fromlist, level)


_finder = _PackageFinder()


def importer() -> FunctionImporter:
    """The wrapper of ``builtins.__import__``, installed on first use (once)."""
    current = builtins.__import__
    if isinstance(current, FunctionImporter):
        return current
    wrapper = FunctionImporter(current)
    builtins.__import__ = wrapper
    return wrapper


def register(function: str, folder: str, entry_module: str) -> Namespace | None:
    """Route the imports of ``function``'s code (its entry module is imported under
    ``entry_module``) to its own modules in ``folder``; None when it has none."""
    package = package_name(function)
    wrapper = builtins.__import__
    if isinstance(wrapper, FunctionImporter):
        known = wrapper.owners.get(package)
        if known is not None:
            wrapper.owners.setdefault(entry_module, known)
            return known
    own = own_top_names(folder)
    if not own:
        return None
    namespace = Namespace(package, folder, own)
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    _finder.folders[package] = folder
    wrapper = importer()
    wrapper.owners[package] = namespace
    wrapper.owners[entry_module] = namespace
    return namespace
