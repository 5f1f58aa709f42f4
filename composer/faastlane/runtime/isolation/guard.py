"""Shared code is read-only to function code (cpython-mpk patch 0014, ``mpk_guard.c``).

Under ``--isolation mpk`` every function runs as a thread of one process, and the object
graph is shared: a function that could rebind ``json.dumps``, a global of this runtime or
an attribute of a shared class would have its code run by the next function's thread,
inside that function's domain. The patched CPython refuses, to a thread running sealed
function code, every store into a shared module, function, class or cell and into any
object frozen here, with ``_faastlane.SharedWriteError`` naming the function; and
function code cannot make shared objects at all except through the operations this
runtime registers (:func:`broker`), during which any private code that starts running
ends the shared allocation.

What is frozen (:func:`freeze_shared_state`, outside every domain, after each function
loads, and before a function's libraries load): the namespace of every shared module, the
classes (where they bind code) and functions it defines, ``sys.path`` and the import
hooks, and this runtime's own state -- the containers its modules hold (the hardening's
policy among them), the instances of its classes they hold, and what its closures keep. Per-thread
state (``threading.local``), threads and locks are not: the runtime writes them on the
function's own thread. ``sys.modules`` is not either: a function's own modules are
registered there from inside its domain; an entry function code replaces can only be one
of its own private objects (any other reader faults) or a module that is already shared.

Standard library only: this ships inside composed actions.
"""

from __future__ import annotations

import gc
import queue
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import FunctionType, ModuleType
from typing import Any, TypeVar

from ..engine.own_modules import PACKAGE_PREFIX
from . import domains

F = TypeVar("F", bound=Callable[..., Any])


class _SharedWriteError(RuntimeError):
    """Stands in for ``_faastlane.SharedWriteError`` on runtimes without the guard."""


try:
    import _faastlane

    SharedWriteError: type[Exception] = getattr(_faastlane, "SharedWriteError",
                                               _SharedWriteError)
except ImportError:
    SharedWriteError = _SharedWriteError

RUNTIME_PACKAGE = __name__.rpartition(".isolation.")[0]
# The import system's lists: a path entry or finder a function added would decide what
# every later import finds.
_IMPORT_STATE = ("path", "meta_path", "path_hooks")
# Written by the runtime on a function's own thread, or per thread by design.
_NEVER_FROZEN = (threading.local, threading.Thread, type(threading.Lock()),
                 type(threading.RLock()), threading.Condition, threading.Event)

# Namespaces whose code the standard library itself rebinds while any function calls it:
# ``warnings.catch_warnings`` swaps ``showwarning`` and ``_showwarnmsg_impl`` in and
# out (scikit-learn, numpy use it per call). What function code can bind there is its
# own private function (any other caller faults) or a callable that already exists.
UNFROZEN_NAMESPACES = frozenset({"warnings"})

_frozen_modules: set[int] = set()


def _native() -> ModuleType | None:
    try:
        native = domains.native_module()
    except domains.IsolationUnavailableError:
        return None
    return native if hasattr(native, "freeze") else None


def broker(function: F) -> F:
    """Register ``function`` as an operation sealed code may run through
    ``call_shared`` (a decorator; a no-op without the patched runtime). Only runtime
    functions whose work is copying or registering data belong here: a library's
    code runs in the library loader (library_loader.py), never brokered."""
    native = _native()
    if native is not None:
        native.register_broker(function)
    return function


def guard_channels() -> None:
    """From now on function code may get from or put into only its own
    ``queue.SimpleQueue`` objects (cpython-mpk/Modules/mpk_channels.c): the runtime's
    hand a function's input and result between threads, and one taken out of a
    shared queue would be another function's data in flight. Call outside domains,
    before any function's code runs."""
    native = _native()
    if native is not None:
        native.guard_queue_type(queue.SimpleQueue)


def name_slot(slot: int, function: str) -> None:
    """The name refusals give for code of ``slot`` (call outside domains)."""
    native = _native()
    if native is not None:
        native.name_slot(slot, sys.intern(function))


def freeze_shared_state() -> int:
    """Freeze what is shared and not yet frozen; returns how many objects are frozen."""
    native = _native()
    if native is None:
        return 0
    freeze_new_modules()
    for attribute in _IMPORT_STATE:
        # Open to libraries as they load (six appends its finder): check_import_state.
        native.freeze(getattr(sys, attribute), f"sys.{attribute}", code_only=True)
    # Called by every thread's collections, the Orchestrator's included.
    native.freeze(gc.callbacks, "gc.callbacks")
    seen: set[int] = set()
    for name, module in native.shared_items(sys.modules):
        if _ours_name(name):
            label = f"the runtime's state ({name})"
            for value in list(vars(module).values()):
                _freeze_global(native, value, label, seen)
    return int(native.frozen_count())


@dataclass(frozen=True)
class ImportState:
    """What decides what an import finds: the import system's lists, and the modules
    ``sys.modules`` holds (its shared entries: a function's own are skipped unread)."""

    lists: tuple[tuple[Any, ...], ...]
    modules: dict[str, Any]


def import_state() -> ImportState:
    """``sys.path``, ``sys.meta_path``, ``sys.path_hooks`` and ``sys.modules`` now."""
    native = _native()
    return ImportState(tuple(tuple(getattr(sys, attribute)) for attribute in _IMPORT_STATE),
                       dict(native.shared_items(sys.modules)) if native else {})


def check_import_state(before: ImportState, who: str) -> None:
    """After libraries loaded (outside sealed code): they may extend the import system
    -- six appends its finder to ``sys.meta_path``, every import adds to ``sys.modules``
    -- but what was there stays, first and in order: a finder put before it, or a module
    of theirs put in another's place, would decide what later imports find. Otherwise
    what they changed is put back and SharedWriteError names ``who`` (the function the
    libraries were loaded for)."""
    for attribute, old in zip(_IMPORT_STATE, before.lists, strict=True):
        now = getattr(sys, attribute)
        if len(now) >= len(old) and all(a is b for a, b in zip(now, old, strict=False)):
            continue
        moved = [entry for entry in now if not any(entry is o for o in old)][:1]
        now[:] = old
        raise SharedWriteError(
            f"function {who!r} may not change sys.{attribute} but by adding to its end "
            f"(a library it imports put {moved[0] if moved else 'nothing'!r} before, or "
            "removed, what was there): shared code and the runtime's state are read-only "
            "to function code")
    native = _native()
    if native is None:
        return
    now = dict(native.shared_items(sys.modules))
    changed = [name for name, module in before.modules.items() if now.get(name) is not module]
    if changed:
        for name in changed:
            sys.modules[name] = before.modules[name]
        raise SharedWriteError(
            f"function {who!r} may not replace or remove a module of sys.modules (a "
            f"library it imports changed {', '.join(map(repr, changed[:3]))}): shared "
            "code and the runtime's state are read-only to function code")


def freeze_new_modules() -> None:
    """Freeze the namespaces of shared modules not seen before: in full for this
    runtime's modules and ``sys``, elsewhere where they bind code (a module's flags and
    counters stay writable: libraries set them lazily from whatever thread calls them).
    """
    native = _native()
    if native is None:
        return
    # Entries holding a function's own (private) module are skipped unread.
    for name, module in list(native.shared_items(sys.modules)):
        namespace = getattr(module, "__dict__", None)
        if type(namespace) is dict and id(namespace) not in _frozen_modules:
            _make_lazy_exports(name, module, namespace)
    for name, module in native.shared_items(sys.modules):
        namespace = getattr(module, "__dict__", None)
        if type(namespace) is not dict or id(namespace) in _frozen_modules:
            continue
        if native.slot_of(id(namespace)) is not None:
            continue  # a function's own module, in its heap: its own to change
        # A function's package of own modules: they register there from its domain.
        if name.startswith(PACKAGE_PREFIX) or name in UNFROZEN_NAMESPACES:
            continue
        # A module whose body is still running (it imported the one that just loaded):
        # its own code, frozen once it has loaded.
        if getattr(namespace.get("__spec__"), "_initializing", False):
            continue
        _frozen_modules.add(id(namespace))
        whole = name == "sys" or _ours_name(name)
        native.freeze(namespace, f"the namespace of module {name!r}", code_only=not whole)
        _freeze_code(native, name, namespace)


def _make_lazy_exports(name: str, module: ModuleType, namespace: dict[str, Any]) -> None:
    """A standard-library module that makes an export on its first read (a PEP 562
    ``__getattr__`` storing into its globals: ``concurrent.futures``' executors) makes
    it now, outside every domain, before its namespace is frozen: a function's first
    read would otherwise be a store into shared code, refused. The standard library's
    only: this runs its code with the runtime's rights."""
    if name.split(".", 1)[0] not in sys.stdlib_module_names or "__getattr__" not in namespace:
        return
    exported = namespace.get("__all__")
    if not isinstance(exported, (list, tuple)):
        return
    for export in exported:
        if isinstance(export, str) and export not in namespace:
            try:
                getattr(module, export)
            except Exception:  # noqa: BLE001, S112 - left lazy: a read raises as before
                continue


def freeze_namespace(module: ModuleType) -> None:
    """Freeze a shared module's namespace in full, now: no store by function code (nor
    by libraries as they load), not only where it binds code. For modules whose globals
    are state the runtime installed (stdlib_caches.py's per-function caches): rebound to
    a dict function code chose, the next function's entries would land there."""
    native = _native()
    if native is None:
        return
    namespace = vars(module)
    _frozen_modules.add(id(namespace))
    native.freeze(namespace, f"the namespace of module {module.__name__!r}")
    _freeze_code(native, module.__name__, namespace)


def _freeze_code(native: ModuleType, name: str, namespace: dict[str, Any]) -> None:
    """The classes and functions a loaded module defines (and its classes' methods):
    code that makes shared objects -- a library's module body, loaded for a function --
    may change what it makes, never code loaded before it. A class is frozen where it
    binds code (its flags and counters stay writable), a function in full. To function
    code every shared class and function is read-only there already."""
    for value in list(namespace.values()):
        # type() and the class's own __dict__ only: a module global may be a lazy
        # proxy whose attribute lookups import or compute things.
        if native.slot_of(id(value)) is not None:
            continue
        if type(value) is FunctionType and value.__module__ == name:
            native.freeze(value, f"function {value.__qualname__!r} of module {name!r}")
        elif issubclass(type(value), type) and value.__dict__.get("__module__") == name:
            label = f"class {value.__qualname__!r} of module {name!r}"
            native.freeze(value, label, code_only=True)
            for member in list(value.__dict__.values()):
                if type(member) in (classmethod, staticmethod):
                    member = member.__func__
                if type(member) is FunctionType and native.slot_of(id(member)) is None:
                    native.freeze(member, f"a method of {label}")


def freeze(objects: Iterable[Any], label: str) -> None:
    """Freeze particular shared objects (a function's records, once it has loaded)."""
    native = _native()
    if native is None:
        return
    seen: set[int] = set()
    for value in objects:
        if _is_container(value):
            _freeze_container(native, value, label, seen)
        else:
            _freeze_instance(native, value, label, seen, _INSTANCE_DEPTH)


_INSTANCE_DEPTH = 2


def _ours(value: Any) -> bool:
    """An object of a class this runtime defines (not a thread-local, lock or thread)."""
    return _ours_name(getattr(type(value), "__module__", None)) and \
        not isinstance(value, _NEVER_FROZEN) and not isinstance(value, type)


def _is_container(value: Any) -> bool:
    return type(value) in (dict, list, set)


def _freeze_global(native: ModuleType, value: Any, label: str, seen: set[int]) -> None:
    """A global of one of the runtime's modules: its containers, the instances of its
    classes, what its closures keep, its classes' own tables. Not what those hold
    beyond that: a runtime list of library caches (re's) holds the libraries' state,
    which functions write as they call the libraries."""
    if _is_container(value):
        _freeze_container(native, value, label, seen)
    elif type(value) is FunctionType and _ours_name(value.__module__):
        for cell in value.__closure__ or ():
            try:
                contents = cell.cell_contents
            except ValueError:
                continue  # an empty cell
            if _is_container(contents):
                _freeze_container(native, contents, label, seen)
            elif _ours(contents):
                _freeze_instance(native, contents, label, seen, _INSTANCE_DEPTH)
    elif isinstance(value, type) and _ours_name(value.__module__):
        for item in list(vars(value).values()):
            if _is_container(item):
                _freeze_container(native, item, label, seen)
    elif _ours(value):
        _freeze_instance(native, value, label, seen, _INSTANCE_DEPTH)


def _ours_name(module: str | None) -> bool:
    """Whether ``module`` names this runtime's package or one of its modules."""
    return isinstance(module, str) and (module == RUNTIME_PACKAGE or
                                        module.startswith(RUNTIME_PACKAGE + "."))


def _freeze_container(native: ModuleType, value: Any, label: str, seen: set[int]) -> None:
    if id(value) in seen or native.slot_of(id(value)) is not None:
        return
    seen.add(id(value))
    native.freeze(value, label)
    for item in list(value.values() if type(value) is dict else value):
        if _ours(item):
            _freeze_instance(native, item, label, seen, _INSTANCE_DEPTH)


def _freeze_instance(native: ModuleType, value: Any, label: str, seen: set[int],
                     depth: int) -> None:
    """An instance of a runtime class: its attributes, and the containers and runtime
    instances they are (the hardening's policy and its verdicts)."""
    if depth <= 0 or id(value) in seen or native.slot_of(id(value)) is not None:
        return
    seen.add(id(value))
    native.freeze(value, label)
    namespace = getattr(value, "__dict__", None)
    if type(namespace) is not dict:
        return
    native.freeze(namespace, label)
    for item in list(namespace.values()):
        if _is_container(item) and id(item) not in seen and \
                native.slot_of(id(item)) is None:
            seen.add(id(item))
            native.freeze(item, label)
        elif _ours(item):
            _freeze_instance(native, item, label, seen, depth - 1)
