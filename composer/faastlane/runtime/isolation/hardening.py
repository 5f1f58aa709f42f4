"""Run-time hardening of ``mpk`` isolation: what function code may not do in-process.

The Orchestrator calls :func:`activate` (``libraries_ffi=True``) once, in ``mpk`` mode,
before any function code runs (function modules' bodies included), and wraps every
function call in :func:`function_scope`, inside ``Domain.run_sealed``. Protection keys
stop loads and stores; this covers what goes around them, with ``sys.addaudithook``
(CPython raises an audit event before each of these actions, and a hook that raises
stops it):

- **native code loaded after start-up** -- ``ctypes.CDLL`` (event ``ctypes.dlopen``) and
  extension modules (event ``import`` with the file about to be ``dlopen``-ed) -- is
  inspected first with :mod:`pkru_scan`, and refused when it holds a WRPKRU outside the
  runtime's gate or an XRSTOR, unless the action's ``inspection.json`` waived that file
  (with the same SHA-256);
- **memory files** that ignore PKRU: ``/proc/<pid>/mem`` (any spelling, symlinks
  resolved), ``/proc/<pid>/task/<tid>/mem``, ``/dev/mem``, ``/dev/kmem``, ``/proc/kcore``;
- **modules that call arbitrary native addresses** (``ctypes``/``_ctypes``, cffi's
  backend, CPython's test modules): with ``refuse_ffi`` (the default of
  :func:`activate`) they cannot be imported at all once activated, by anybody, and
  :func:`activate` checks that none is loaded: once ``_ctypes`` is in the process,
  ``CFUNCTYPE(...)(address)()`` calls any address *without any audit event*
  (``object.__subclasses__()`` finds its types even if no module refers to them);
- with ``libraries_ffi`` (the Orchestrator's policy in ``mpk`` mode): libraries
  imported outside functions -- by the Orchestrator, or in the library loader, whose
  slot is named with ``libraries=True`` (:func:`name_domain`) -- may load and use ctypes
  (scipy imports it unconditionally), but
  function code may neither import an FFI module nor use ctypes at all: every
  ``ctypes.*`` audit event raised inside a function is refused -- and cpython-mpk's
  patch 0009 makes every foreign call (``ctypes.call_function``) and every memory
  access through a ctypes object (``ctypes.cdata/access``) raise one;
- inside a function, when ctypes is allowed (``refuse_ffi=False``, trusted code):
  lookups of the libc wrappers that write PKRU or read memory past it (``pkey_set``,
  ``syscall``, ...).

Then :mod:`seccomp_filter` refuses the system calls that see through keys
(``process_vm_readv``, ``ptrace``, ...) and lets the key calls (``pkey_alloc``,
``pkey_free``, ``pkey_mprotect``) through only from the runtime's own ``syscall``
instruction.

A thread runs "function code" while it is inside :func:`function_scope`, inside a
protection domain, or sealed (``Domain.run_sealed``, or a thread started from sealed
code): the last two are the C module's per-thread state, which Python code cannot
rewrite.
Each refusal is an :class:`IsolationViolation` naming the function (or the
Orchestrator). The hook keeps its policy in a closure, not in module globals, and a
policy once installed cannot be replaced: function code could otherwise loosen it.
Audit hooks are no sandbox on their own (PEP 578); docs/security.md says what stays
open. Standard library only: this ships inside actions.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import pathlib
import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from . import seccomp_filter
from .pkru_scan import ELF_MAGIC, NotAnELF, scan_elf

# Files through which the kernel reads or reveals memory past protection keys: a
# process's memory (``mem``), its page table (``pagemap``: physical frames), the files
# behind its mappings (``map_files``), physical memory and the kernel's.
_MEMORY_FILES = re.compile(
    r"^/(proc/(\d+|self|thread-self)(/task/\d+)?/(mem|pagemap|map_files(/.*)?)"
    r"|dev/(k?mem|port)|proc/(kcore|kpagecount|kpageflags|kpagecgroup)"
    r"|sys/kernel/mm/page_idle/bitmap)$")
# Final path components that name such a file (a map_files entry is an address range):
# function code may not open a path ending in one, whatever directory it resolves
# against -- a ``dir_fd`` the audit event does not carry, a directory another thread
# swaps in between the check and the open.
_MEMORY_NAMES = frozenset({"mem", "pagemap", "map_files", "kmem", "kcore", "kpagecount",
                           "kpageflags", "kpagecgroup"})
_MAP_FILES_ENTRY = re.compile(r"^[0-9a-f]+-[0-9a-f]+$")
# Where a symlink made by function code may not point: a link there, swapped into a
# path between the check and the open, would lead an innocent name to a memory file.
_KERNEL_TREES = ("/proc", "/dev", "/sys")
# Audit events that start a process. A child outside the hook and the seal could read
# this process's memory (/proc/PPID/mem ignores keys): refused to function code.
PROCESS_EVENTS = frozenset({"os.fork", "os.forkpty", "os.exec", "os.posix_spawn",
                            "os.spawn", "os.system", "os.startfile", "subprocess.Popen",
                            "_posixsubprocess.fork_exec", "pty.spawn"})
# Audit events that list or walk objects of the whole process: the data in flight
# between functions (promoted results, inputs) is in the shared heap, and so is the
# hardening's own state. Refused to function code.
GC_EVENTS = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents",
                       "sys._current_frames", "sys._current_exceptions"})
# Audit events that install code every thread (or this one, after the function
# returns) runs: a trace or profile function, a sys.monitoring callback, an audit hook,
# a callback run at exit or around a fork (the last three on whichever thread exits or
# forks: the Orchestrator's). Run on the Orchestrator's or another function's thread,
# it would act with their rights. (CPython drops an audit hook this refuses without
# telling its caller; the others raise.)
HOOK_EVENTS = frozenset({"sys.settrace", "sys.setprofile",
                         "sys.monitoring.register_callback", "sys.addaudithook",
                         "atexit.register", "atexit.unregister",
                         "os.register_at_fork"})
# Of those, what the libraries a function imports may do as they load: logging, Pillow,
# multiprocessing and concurrent.futures register exit and fork callbacks in their module
# bodies (docs/security.md, "What is not stopped").
LIBRARY_HOOK_EVENTS = frozenset({"atexit.register", "atexit.unregister",
                                 "os.register_at_fork"})
# libc entry points that write PKRU or copy memory past it.
REFUSED_SYMBOLS = frozenset({"pkey_set", "pkey_get", "pkey_mprotect", "pkey_alloc",
                             "pkey_free", "process_vm_readv", "process_vm_writev",
                             "ptrace", "syscall"})
# Extension modules (and ctypes' package) through which Python code calls any native
# address or reads any memory: ctypes, cffi, CPython's test and example modules.
FFI_MODULES = frozenset({
    "ctypes", "_ctypes", "_ctypes_test", "_cffi_backend", "_testcapi",
    "_testinternalcapi", "_testlimitedcapi", "_testbuffer", "_testmultiphase",
    "_testsinglephase", "_testexternalinspection", "_testclinic", "_testclinic_limited",
    "_testimportmultiple", "_xxtestfuzz", "xxsubtype", "xxlimited", "xxlimited_35"})
_ORCHESTRATOR = "the Orchestrator"
INSPECTION_RECORD = "inspection.json"  # written into every action by compose


class IsolationViolation(RuntimeError):
    """Function code tried something that would defeat its isolation."""

    def __init__(self, function: str | None, what: str) -> None:
        who = f"function {function!r}" if function else _ORCHESTRATOR
        super().__init__(f"{who}: {what} refused (mpk isolation)")
        self.function = function


class NativeCallRefused(IsolationViolation, ImportError):
    """Importing a module that calls arbitrary native addresses; an ImportError too, so
    that libraries with a fallback (``try: import ctypes except ImportError``) work."""


class HardeningError(RuntimeError):
    """The hardening cannot be switched on as asked; ``mpk`` must not run without it."""


@dataclass
class Policy:
    """What the hook enforces; built once, by :func:`activate` (or a test)."""

    gate: bytes | None  # the runtime's gate (``_faastlane.gate_code()``)
    # Real paths the action's inspection waived -> the SHA-256 reviewed (None: any).
    waived: Mapping[str, str | None] = field(default_factory=dict)
    refuse_ctypes: bool = False  # every ctypes audit event inside a function
    refuse_ffi: bool = False  # importing FFI_MODULES, anywhere
    refuse_ffi_in_functions: bool = False  # importing FFI_MODULES, inside a function
    _verdicts: dict[tuple[int, int, int, int], str | None] = field(default_factory=dict)

    def native_finding(self, path: str, cache: bool = True) -> str | None:
        """Why ``path`` may not be loaded, or None; cached per file identity unless
        ``cache`` is False (inside a domain: what is made there must not be kept in
        shared state)."""
        real = os.path.realpath(path)
        try:
            info = os.stat(real)
        except OSError as exc:
            return f"cannot inspect {path}: {exc.strerror}"
        key = (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size)
        if key in self._verdicts:
            return self._verdicts[key]
        verdict = _inspect(real, self.gate, self.waived)
        if cache:
            self._verdicts[key] = verdict
        return verdict


def _inspect(path: str, gate: bytes | None, waived: Mapping[str, str | None]) -> str | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        return f"cannot inspect {path}: {exc.strerror}"
    if path in waived and waived[path] in (None, hashlib.sha256(data).hexdigest()):
        return None
    if data[:4] != ELF_MAGIC:
        return None  # a linker script or the like: dlopen fails on it by itself
    try:
        found = [(r, o) for r, o in scan_elf(data, gate) if not o.sanctioned]
    except (NotAnELF, ValueError, IndexError) as exc:  # struct.error is a ValueError
        return f"{path} is not an ELF file the inspector can read ({exc})"
    if not found:
        return None
    code_range, occurrence = found[0]
    more = f" and {len(found) - 1} more" if len(found) > 1 else ""
    return (f"loading {path}: {occurrence.kind} at offset "
            f"{code_range.file_offset + occurrence.start:#x}{more} (run `faastlane "
            f"inspect {path}`)")


_MARK = "_faastlane_function"  # attribute of the running Thread: its function's name
_SLOTS = 64  # _faastlane.SLOT_COUNT, spelled out: this module imports without it


# Slots whose code is the runtime's own (the hand-off domain, handoff.py): their threads
# are judged as threads outside every domain.
_RUNTIME_SLOTS: set[int] = set()


def _scopes() -> tuple[Callable[[], str | None], Callable[[str], Any],
                       Callable[[Callable[[], int | None]], None],
                       Callable[[int, str | None, bool], None], Callable[[], bool]]:
    """The per-thread function markers, reachable only through the functions returned
    (no module global holds them).

    Nothing made inside a domain may be kept in shared state (it would escape the
    private heap): the marker is a shared name set on the shared Thread object, and
    domains are known by slot (a small, immortal int)."""
    # slot -> the function seen running inside it. Every slot is a key from the start,
    # so inside a domain only values (shared names) are replaced and no key table is
    # ever allocated there (an empty dict's first table landed in the private heap
    # before cpython-mpk patch 0008).
    domain_names: dict[int, str | None] = dict.fromkeys(range(_SLOTS))
    # Slots whose code is the libraries a function imports (library_loader.py).
    library_slots: set[int] = set()
    runtime_slots = _RUNTIME_SLOTS
    current_slot: list[Callable[[], int | None]] = []
    current_thread = threading.current_thread

    def current() -> str | None:
        name: str | None = getattr(current_thread(), _MARK, None)
        if name is None and current_slot:
            slot = current_slot[0]()
            # Inside a domain: function code, whatever Python says.
            if slot is not None and slot not in runtime_slots:
                name = domain_names.get(slot) or "<a function>"
        return name

    @contextmanager
    def scope(name: str) -> Iterator[None]:
        thread = current_thread()
        outer = getattr(thread, _MARK, None)
        setattr(thread, _MARK, name)
        if current_slot:
            slot = current_slot[0]()
            # Named at load, outside (name_domain): inside, the table is read-only
            # (guard.py) and this store is made only by a domain not named yet.
            if slot is not None and domain_names.get(slot) != name:
                domain_names[slot] = name
        try:
            yield
        finally:
            setattr(thread, _MARK, outer)

    def follow_domains(slot_of_thread: Callable[[], int | None]) -> None:
        if not current_slot:
            current_slot.append(slot_of_thread)

    def name(slot: int, function: str | None, libraries: bool) -> None:
        domain_names[slot] = function
        (library_slots.add if libraries else library_slots.discard)(slot)
        (runtime_slots.discard if function else runtime_slots.add)(slot)

    def in_libraries() -> bool:
        if not current_slot or getattr(current_thread(), _MARK, None) is not None:
            return False
        slot = current_slot[0]()
        return slot is not None and slot in library_slots

    return current, scope, follow_domains, name, in_libraries


(_current_function, _function_scope, _follow_domains, _name_domain,
 _in_libraries) = _scopes()
_slot_reader: list[Callable[[], int | None]] = []


def _in_domain() -> bool:
    if not _slot_reader:
        return False
    slot = _slot_reader[0]()
    return slot is not None and slot not in _RUNTIME_SLOTS


def current_function() -> str | None:
    """The function the calling thread is running, if any: the innermost
    :func:`function_scope`, else the function seen in the domain the thread is in."""
    return _current_function()


def name_domain(slot: int, function: str, libraries: bool = False) -> None:
    """Name the function whose code runs in domain ``slot`` (outside domains, before it
    runs): :func:`current_function` answers it for code inside. ``libraries``: the
    code there is the module bodies of the libraries a function imports, which may load
    ctypes (scipy imports it unconditionally) and use it as code outside functions may;
    the rest of the policy (processes, memory files, the object graph, hooks) is a
    function's."""
    _name_domain(slot, function, libraries)


def name_runtime_domain(slot: int) -> None:
    """Domain ``slot`` runs the runtime's own code (the hand-off domain): the policy
    treats its threads as it treats threads outside every domain."""
    _name_domain(slot, None, False)


def function_scope(name: str) -> Any:
    """Context manager marking the calling thread as running function ``name``.

    The invoker wraps each call of a function (and the import of its module) in it,
    inside the function's sealed domain: ``domain.run_sealed(body)`` where ``body``
    does ``with function_scope(name): ...``. Scopes nest; leaving one restores the
    outer name.
    """
    return _function_scope(name)


class _Unreadable(Exception):
    """An audit event's path argument the hook cannot read without running its code."""


_PATHLIB_TYPES = frozenset({pathlib.PurePath, pathlib.PurePosixPath,
                            pathlib.PureWindowsPath, pathlib.Path, pathlib.PosixPath,
                            pathlib.WindowsPath})  # their __fspath__ returns a cached str


def _path_of(argument: Any, function: str | None = None,
             pathlib_types: frozenset[type] = _PATHLIB_TYPES) -> str | None:
    """The path an audit event names, as exact str, without running code of the
    argument's (a str or bytes subclass's methods, a PathLike's ``__fspath__`` could
    answer the hook differently from the call it precedes, and run inside the hook).
    For function code, a path-like other than pathlib's own classes raises
    :class:`_Unreadable`; for the Orchestrator it is asked (trusted)."""
    if isinstance(argument, str):
        return str.__getitem__(argument, slice(None))  # exact copy, no method called
    if isinstance(argument, (bytes, bytearray)):
        return os.fsdecode(bytes(memoryview(argument)))
    if isinstance(argument, os.PathLike):
        if function is not None and type(argument) not in pathlib_types:
            raise _Unreadable(type(argument).__qualname__)
        try:
            return _path_of(os.fspath(argument))
        except TypeError:
            return None
    return None


def _directory_bases() -> list[str]:
    """Every directory a relative path could be resolved against right now: the working
    directory and what each open file descriptor names (``dir_fd`` is not in the audit
    event; the descriptor must be open while the call runs, so it is among these)."""
    bases = [os.getcwd()]
    try:
        descriptors = os.listdir("/proc/self/fd")
    except OSError:
        return bases
    for entry in descriptors:
        try:
            target = os.readlink(f"/proc/self/fd/{entry}")
        except OSError:
            continue
        if target.startswith("/"):
            bases.append(target)
    return bases


def _memory_file(path: str, function: str | None) -> bool:
    """Whether opening ``path`` could reach a memory file (:data:`_MEMORY_FILES`).

    Resolved as given (symlinks too), and, relative, against every base a ``dir_fd``
    could name. For function code also by its last component alone: a check and the
    open it precedes are not atomic (the GIL is released around the open), so another
    thread can swap a directory or a descriptor in between; the name cannot change."""
    realpath, matches = os.path.realpath, _MEMORY_FILES.match
    if matches(realpath(path)):
        return True
    if function is not None:
        last = os.path.basename(os.path.normpath(path))
        if last in _MEMORY_NAMES or _MAP_FILES_ENTRY.match(last):
            return True
    if os.path.isabs(path):
        return False
    return any(matches(realpath(os.path.join(base, path))) for base in _directory_bases())


def _into_kernel_tree(target: str, link: str | None) -> bool:
    """Whether a symlink to ``target`` (made at ``link``) leads into /proc, /dev or /sys,
    as written or as resolved now, or names a memory file."""
    if not os.path.isabs(target) and ".." in target.split("/"):
        return True  # relative upwards: where it lands depends on where the link is moved
    spelled = os.path.normpath(target if os.path.isabs(target) or link is None
                               else os.path.join(os.path.dirname(link), target))
    resolved = os.path.realpath(spelled)
    for candidate in (spelled, resolved):
        if any(candidate == tree or candidate.startswith(tree + "/")
               for tree in _KERNEL_TREES):
            return True
    last = os.path.basename(spelled)
    return last in _MEMORY_NAMES or bool(_MAP_FILES_ENTRY.match(last))


def _make_hook(policy: Policy, owns: Callable[[int], bool] = lambda address: False
               ) -> Callable[[str, tuple[Any, ...]], None]:
    """The audit hook, bound to ``policy`` (and what it calls) by closure."""
    current, in_domain, in_libraries = _current_function, _in_domain, _in_libraries
    memory_file, into_kernel_tree = _memory_file, _into_kernel_tree
    ctypes_event, frame, trusted = _ctypes_event, sys._getframe, _is_trusted_code
    process_events, hook_events, gc_events = PROCESS_EVENTS, HOOK_EVENTS, GC_EVENTS
    library_hook_events = LIBRARY_HOOK_EVENTS

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            function = current()
            try:
                path = _path_of(args[0], function) if args else None
            except _Unreadable as exc:
                raise IsolationViolation(function, f"opening a path given as a {exc} "
                                                   "(str, bytes or pathlib only)") from None
            if path is not None and memory_file(path, function):
                raise IsolationViolation(function, f"opening {path}")
        elif event in gc_events:
            function = current()
            if function is not None:
                raise IsolationViolation(function, f"walking the object graph ({event})")
        elif event in process_events:
            function = current()
            if function is not None:
                raise IsolationViolation(function, f"starting a process ({event})")
        elif event in hook_events:
            function = current()
            if function is not None and not (event in library_hook_events and
                                             in_libraries()):
                raise IsolationViolation(function, f"installing a hook every thread "
                                                   f"runs ({event})")
        elif event == "os.symlink" and args:
            function = current()
            if function is not None:
                try:
                    target = _path_of(args[0], function)
                    link = _path_of(args[1], function) if len(args) > 1 else None
                except _Unreadable as exc:
                    raise IsolationViolation(function, f"a symlink given as a {exc}") \
                        from None
                if target is None or into_kernel_tree(target, link):
                    raise IsolationViolation(function, f"a symlink to {target}")
        elif event == "import" and _is_ffi(args[0] if args else None) and (
                policy.refuse_ffi or (policy.refuse_ffi_in_functions and current() and
                                      not in_libraries())):
            raise NativeCallRefused(current(), f"importing {args[0]} (it calls any "
                                               "native address)")
        elif event == "import" and len(args) > 1 and args[1]:
            path = _path_of(args[1])
            if path and not path.endswith((".py", ".pyc")):
                why = policy.native_finding(path, cache=not in_domain())
                if why:
                    raise IsolationViolation(current(), why)
        elif event.startswith("ctypes."):
            ctypes_event(policy, current(), event, args, not in_domain(), frame(1).f_code,
                         trusted, owns, in_libraries)

    return hook


def _is_ffi(name: object) -> bool:
    return isinstance(name, str) and (name in FFI_MODULES or name.startswith("ctypes."))


def _ffi_types_alive() -> list[str]:
    """Types of FFI modules still alive in the process (after a collection)."""
    gc.collect()
    return sorted({f"{t.__module__}.{t.__qualname__}" for t in object.__subclasses__()
                   if _is_ffi(getattr(t, "__module__", None))})


def _drop_ffi_modules() -> None:
    """Forget the FFI modules the hardening itself used (seccomp_filter imports ctypes
    to install the filter): with no reference left, their types are freed."""
    for name in [n for n in sys.modules if _is_ffi(n)]:
        del sys.modules[name]


def _trusted_code() -> tuple[Callable[[list[Any]], None], Callable[[Any], bool]]:
    """Code objects of libraries allowed to touch their own ctypes objects while a
    function runs (numpy's ``ndarray.ctypes``), registered from outside functions
    only; kept by identity in a closure (equal code made by a function does not
    match)."""
    kept: list[Any] = []
    ids: set[int] = set()

    def add(codes: list[Any]) -> None:
        if _current_function() is not None:
            raise IsolationViolation(_current_function(), "trusting library code")
        for code in codes:
            if id(code) not in ids:
                kept.append(code)
                ids.add(id(code))

    def trusted(code: Any) -> bool:
        return id(code) in ids

    return add, trusted


_trust_code, _is_trusted_code = _trusted_code()


def trust_numpy_ctypes() -> bool:
    """Let numpy's ``ndarray.ctypes`` helper (``numpy._core._internal._ctypes``: its
    constructor, ``data``, ``shape_as``, ``strides_as``) make and read its own ctypes
    objects inside functions: ``array.ctypes.data`` is ordinary numpy. Only accesses
    raised by those methods' code, at addresses in the calling function's own domain
    (its own objects), pass; ``data_as`` (a cast, a foreign call) and every access by
    the function's own code stay refused. Call outside functions, once numpy is
    imported (``private_heaps.load`` does); True if numpy's helper was found."""
    internal = sys.modules.get("numpy._core._internal")
    helper = getattr(internal, "_ctypes", None)
    if not isinstance(helper, type):
        return False
    # ``shape_as``/``strides`` keep the ctypes integer type in an attribute of a shared
    # function on first use: made here, outside functions, where it may be (guard.py).
    intp = getattr(internal, "_getintp_ctype", None)
    if callable(intp):
        intp()
    codes = []
    for name in ("__init__", "shape_as", "strides_as", "data"):
        member = helper.__dict__.get(name)
        member = member.fget if isinstance(member, property) else member
        code = getattr(member, "__code__", None)
        if code is not None:
            codes.append(code)
    _trust_code(codes)
    return bool(codes)


def _own_memory_reader(slot_reader: Callable[[], int | None]) -> Callable[[int], bool]:
    """Whether an address lies in the domain the calling thread runs (is inside, or
    sealed to): arithmetic on the slot table, nothing read."""
    try:
        import _faastlane
    except ImportError:
        return lambda address: False
    slot_of = _faastlane.slot_of

    def own(address: int) -> bool:
        mine = slot_reader()
        return mine is not None and isinstance(address, int) and slot_of(address) == mine

    return own


def _ctypes_event(policy: Policy, function: str | None, event: str,
                  args: tuple[Any, ...], cache: bool, code: Any = None,
                  trusted: Callable[[Any], bool] = lambda code: False,
                  owns: Callable[[int], bool] = lambda address: False,
                  libraries: Callable[[], bool] = lambda: False) -> None:
    # Asked only of function code: every ctypes memory access raises an event.
    if function is not None and policy.refuse_ctypes and not libraries():
        # Any use at all: with patch 0009 every call and memory access raises one.
        # Except a trusted library's own objects (numpy's ndarray.ctypes), in the
        # function's own domain.
        if event == "ctypes.cdata/access" and args and trusted(code) and owns(args[0]):
            return
        raise IsolationViolation(function, f"ctypes ({event})")
    if event == "ctypes.dlopen":
        path = _path_of(args[0]) if args else None
        if path is not None:
            resolved = _resolve_library(path)
            why = policy.native_finding(resolved, cache) if resolved else \
                f"loading {path}: not found where the inspector can read it"
            if why:
                raise IsolationViolation(function, why)
    elif event == "ctypes.dlsym" and function is not None:
        name = args[1] if len(args) > 1 else None
        if isinstance(name, str) and name in REFUSED_SYMBOLS:
            raise IsolationViolation(function, f"ctypes lookup of {name!r}")


def _resolve_library(name: str) -> str | None:
    """The file ``dlopen(name)`` would load: a path as given, a bare name searched in
    LD_LIBRARY_PATH and the default directories. None if not found."""
    if "/" in name:
        return name if os.path.exists(name) else None
    directories = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    directories += ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
                    "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib"]
    for directory in directories:
        candidate = os.path.join(directory, name)
        if os.path.exists(candidate):
            return candidate
    return None


_installed: list[Policy] = []  # at most one; only its presence is read
_install_lock = threading.Lock()


def install(policy: Policy) -> None:
    """Install the audit hook for ``policy``, once per process (a forked child keeps
    its parent's). A second call raises :class:`HardeningError`: a policy must not be
    replaceable by the code it restrains. Audit hooks cannot be removed either."""
    with _install_lock:
        if _installed:
            raise HardeningError("the hardening's audit hook is already installed; "
                                 "its policy cannot be replaced")
        _installed.append(policy)
        slot_reader = _domain_slot_reader()
        _slot_reader.append(slot_reader)
        _follow_domains(slot_reader)
        sys.addaudithook(_make_hook(policy, _own_memory_reader(slot_reader)))


def _domain_slot_reader() -> Callable[[], int | None]:
    """The slot of the domain the calling thread is in or sealed to (a thread started
    by sealed function code), read from the C module's thread state (None outside
    domains, or without ``_faastlane``)."""
    try:
        import _faastlane
    except ImportError:
        return lambda: None
    # Bound now: rebinding them later is moot.
    current_domain, sealed = _faastlane.current_domain, _faastlane.sealed

    def slot() -> int | None:
        domain = current_domain()
        return sealed() if domain is None else int(domain.slot)

    return slot


def runtime_gate() -> bytes | None:
    """``_faastlane.gate_code()`` on the cpython-mpk runtime, else None (every WRPKRU
    in native code loaded later is then refused)."""
    try:
        import _faastlane
    except ImportError:
        return None
    code: bytes = _faastlane.gate_code()
    return code or None


def waivers_from_record(action_dir: str | os.PathLike[str]) -> dict[str, str | None]:
    """The files the action's ``inspection.json`` accepted with waived findings: their
    real paths and the SHA-256 compose inspected. No record: nothing is waived."""
    record_path = os.path.join(action_dir, INSPECTION_RECORD)
    try:
        with open(record_path, encoding="utf-8") as handle:
            record = json.load(handle)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise HardeningError(f"{record_path}: cannot read the inspection record: {exc}") \
            from None
    waived: dict[str, str | None] = {}
    for entry in record.get("files", []) if isinstance(record, dict) else []:
        findings = entry.get("findings") or []
        if findings and all(f.get("waived") for f in findings) and entry.get("file"):
            path = os.path.realpath(os.path.join(action_dir, entry["file"]))
            waived[path] = entry.get("sha256")
    return waived


@dataclass(frozen=True)
class Activation:
    """What :func:`activate` switched on, for the trace and plan."""

    gate: bytes | None
    waived: tuple[str, ...]
    refuse_ffi: bool
    libraries_ffi: bool  # FFI modules loadable outside functions (never inside)
    seccomp: bool
    key_syscall_site: int | None  # where the runtime's pkey calls come from
    refused_syscalls: tuple[str, ...]


_activations: list[Activation] = []
CONFINED = _confined = threading.local()  # .done: this thread no longer holds CAP_SYS_PTRACE


def confine_thread() -> None:
    """Make sure the calling thread, about to run function code, holds no
    ``CAP_SYS_PTRACE`` (capabilities are per thread: :func:`activate` drops it on its
    own thread and the threads started from there, not on threads that already
    existed). Cheap after the first call on a thread. Call outside function code,
    after :func:`activate` (with its seccomp part); a no-op before.

    Raises :class:`HardeningError` if the capability cannot be dropped."""
    if getattr(_confined, "done", False) or not _activations or \
            not _activations[0].seccomp:
        return
    if seccomp_filter.holds_capability(seccomp_filter.CAP_SYS_PTRACE):
        try:
            seccomp_filter.drop_capability(seccomp_filter.CAP_SYS_PTRACE)
        except (OSError, ImportError) as exc:
            raise HardeningError(f"cannot drop CAP_SYS_PTRACE on thread "
                                 f"{threading.current_thread().name}: {exc}") from None
    _confined.done = True


def activate(action_dir: str | os.PathLike[str] | None = None, *,
             refuse_ffi: bool = True, seccomp: bool = True,
             libraries_ffi: bool = False) -> Activation:
    """Switch the ``mpk`` hardening on for this process; call once, early.

    ``action_dir``: the composed action (its ``inspection.json`` supplies the waived
    native files; None: nothing is waived). ``refuse_ffi``: no module that calls
    arbitrary native addresses (ctypes, cffi, CPython's test modules) may be loaded
    before or after -- leave True for untrusted functions; False keeps ctypes usable
    and refuses only lookups of the libc wrappers that reach PKRU. ``libraries_ffi``
    (with ``refuse_ffi``; the Orchestrator's choice): code outside functions --
    libraries imported shared, before or after -- may load ctypes, while function
    code may neither import an FFI module nor raise any ``ctypes.*`` audit event
    (docs/security.md says what this leaves open). ``seccomp``:
    install the system-call filter on every thread, and make the process
    non-dumpable.

    Order for the Orchestrator: call ``activate()`` before anything imports ctypes --
    before pre-importing the functions' modules and libraries (numpy falls back
    without ctypes) -- then create domains and run function code, module bodies
    too, each inside ``function_scope(name)``. Domains may be created and destroyed
    before or after: the runtime's key calls pass the filter. A forked child inherits
    everything; calling again in the same process returns the first activation.

    Raises :class:`HardeningError` (fail closed: run ``process`` isolation instead)
    when the runtime's key ``syscall`` site cannot be found, the filter cannot be
    installed, or with ``refuse_ffi`` an FFI module is loaded and still referenced.
    """
    if _activations:
        return _activations[0]
    site = None
    if seccomp:
        site = seccomp_filter.runtime_key_syscall_site()
        if site is None:
            raise HardeningError(
                "cannot find the runtime's protection-key syscall site (mpk_sys.c's "
                f"stub) in {sys.executable}: the seccomp filter would refuse the "
                "runtime's own pkey calls; use the cpython-mpk runtime")
        program = seccomp_filter.build_filter(allowed_sites=[(site, site + 1)])
        try:
            seccomp_filter.install(program, all_threads=True, dumpable=False)
        except OSError as exc:
            raise HardeningError(f"cannot install the seccomp filter: {exc}") from None
        try:
            # Non-dumpable is not enough against root: CAP_SYS_PTRACE overrides it, and
            # a child (even one exec'ing a fresh interpreter) would read our memory.
            seccomp_filter.drop_capability(seccomp_filter.CAP_SYS_PTRACE)
        except OSError as exc:
            raise HardeningError(f"cannot drop CAP_SYS_PTRACE: {exc}") from None
        _confined.done = True
    if refuse_ffi and not libraries_ffi:
        _drop_ffi_modules()
        alive = _ffi_types_alive()
        if alive:
            raise HardeningError(
                f"native-call modules are loaded and still referenced ({', '.join(alive[:4])}"
                f"{', ...' if len(alive) > 4 else ''}): any function could call any native "
                "address through them; call hardening.activate() before anything imports "
                "ctypes")
    gate = runtime_gate()
    waived = waivers_from_record(action_dir) if action_dir is not None else {}
    install(Policy(gate, waived, refuse_ctypes=refuse_ffi,
                   refuse_ffi=refuse_ffi and not libraries_ffi,
                   refuse_ffi_in_functions=refuse_ffi))
    trust_numpy_ctypes()
    activation = Activation(gate, tuple(sorted(waived)), refuse_ffi, refuse_ffi and
                            libraries_ffi, seccomp, site,
                            seccomp_filter.REFUSED if seccomp else ())
    _activations.append(activation)
    return activation
