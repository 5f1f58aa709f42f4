"""The standard library's process-wide registries, made to allocate shared.

An ``isinstance`` check against an ABC caches a weak reference to the checked class in
the ABC; ``logging.getLogger`` registers the new logger in the manager's table; an
``enum.Flag`` caches every combination of its members it makes; ``copy`` and ``pickle``
store a class's ``__slotnames__`` in the class on first use; a module imported lazily
inside a function (Pillow's plugins, ``_strptime``) registers itself in shared tables
(it is loaded by the library loader's thread).
Made inside a domain, those objects would be private yet reachable from shared state --
escapes, and faults for the next function that walks the registry. What they hold is
type and configuration, not a function's data: they are made shared
(cpython-mpk/PRIVATE_HEAPS.md sections 5 and 8). ``weakref.finalize`` runs only shared
finalizers at exit.

Standard library only: this ships inside composed actions.
"""

from __future__ import annotations

import abc
import atexit
import copyreg
import enum
import logging
import sys
import weakref
from collections.abc import Callable
from typing import Any

from . import domains, guard, hardening, library_loader

# The top-level module names of the function running on the calling thread (imported
# inside its domain), or None.
OwnNames = Callable[[], "frozenset[str] | None"]

_installed = False


def install(own_names: OwnNames) -> None:
    """Wrap each registry (once per process)."""
    global _installed
    if _installed:
        return
    _installed = True
    bootstrap = sys.modules["importlib._bootstrap"]
    # Private, so not in the stubs.
    bootstrap._find_and_load = _find_and_load_shared(  # type: ignore[attr-defined]
        bootstrap._find_and_load, own_names)
    for name in ("__instancecheck__", "__subclasscheck__"):
        setattr(abc.ABCMeta, name, _shared_method(getattr(abc.ABCMeta, name)))
    logging.Manager.getLogger = _shared_method(logging.Manager.getLogger)  # type: ignore
    missing = enum.Flag._missing_.__func__  # type: ignore[attr-defined]
    enum.Flag._missing_ = classmethod(_shared_flag_missing(missing))  # type: ignore
    copyreg._slotnames = _shared_method(copyreg._slotnames)  # type: ignore[attr-defined]
    weakref.finalize._select_for_exit = classmethod(_shared_finalizers_for_exit)  # type: ignore
    # A finalizer registers the class's exit function with atexit on first use, which is
    # refused to function code (hardening.HOOK_EVENTS): registered here, outside them,
    # tempfile.TemporaryDirectory and every other finalizer a function makes still work.
    if not weakref.finalize._registered_with_atexit:  # type: ignore[attr-defined]
        atexit.register(weakref.finalize._exitfunc)  # type: ignore[attr-defined]
        weakref.finalize._registered_with_atexit = True  # type: ignore[attr-defined]


def _shared_finalizers_for_exit(cls: type) -> list[Any]:
    """``weakref.finalize``'s choice of what runs at interpreter exit, over its registry's
    shared entries only: the exiting thread is outside every domain and may not read a
    function's own finalizers (they do not run: the process is ending anyway)."""
    native = domains.native_module()
    due = [(f, info) for f, info in native.shared_items(cls._registry)  # type: ignore
           if info.atexit]
    due.sort(key=lambda item: item[1].index)
    return [f for f, _ in due]


def _find_and_load_shared(find_and_load: Callable[..., Any],
                          own_names: OwnNames) -> Callable[..., Any]:
    """The import system's loader, importing shared whatever is not the running
    function's own: a library imported lazily inside a function serves every function.
    It is loaded in the library loader by the loader thread (library_loader.py), not on
    the function's thread, whose PKRU would open the function's heap to its body."""
    native = domains.native_module()
    library_loader.serve_lazy_imports(find_and_load)

    def find_and_load_shared(name: str, import_: Any) -> Any:
        own = own_names()
        if native.current_domain() is None or own is None or name.partition(".")[0] in own:
            return find_and_load(name, import_)
        function = hardening.current_function() or "<a function>"
        return native.call_shared(library_loader.import_lazily, function, name, import_)

    return find_and_load_shared


def _shared_flag_missing(missing: Callable[[type, int], Any]) -> Callable[[type, int], Any]:
    """``Flag._missing_`` making, in the shared heap, the member for a combination of
    flags (``ssl.Options.OP_NO_SSLv2 | ...``) that it caches in the shared class --
    keyed by a shared copy of the value, which the caller may have made privately."""
    native = domains.native_module()

    @guard.broker
    def make(cls: type, value: int) -> Any:
        try:
            value = native.promote_json(value)  # an exact int: copied if private
        except TypeError:
            pass  # an int subclass (a member): the class's own object
        return missing(cls, value)

    def shared_missing(cls: type, value: int) -> Any:
        return native.call_shared(make, cls, value)

    return shared_missing


def _shared_method(method: Callable[..., Any]) -> Callable[..., Any]:
    native = domains.native_module()
    guard.broker(method)

    def shared(*args: Any) -> Any:
        return native.call_shared(method, *args)

    shared.__name__ = method.__name__
    shared.__doc__ = method.__doc__
    return shared
