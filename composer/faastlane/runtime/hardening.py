"""Run-time hardening of ``mpk`` isolation: what function code may not do in-process.

Protection keys stop loads and stores; this module covers what goes around them, with
``sys.addaudithook`` (CPython raises an audit event before each of these actions, and a
hook that raises stops it):

- **native code loaded after start-up** -- ``ctypes.CDLL`` (event ``ctypes.dlopen``) and
  extension modules (event ``import`` with the file about to be ``dlopen``-ed) -- is
  inspected first with :mod:`pkru_scan`, and refused when it holds a WRPKRU outside the
  runtime's gate or an XRSTOR, unless the action's ``inspection.json`` waived that file;
- **memory files** that ignore PKRU: ``/proc/<pid>/mem`` (any spelling, symlinks
  resolved), ``/proc/<pid>/task/<tid>/mem``, ``/dev/mem``, ``/dev/kmem``, ``/proc/kcore``;
- inside a function (``function_scope``): **ctypes** looking up the libc wrappers that
  reach PKRU or other processes' memory (``pkey_set``, ``pkey_mprotect``, ...), and with
  ``refuse_ctypes`` any foreign call or raw memory access, which could call the gate
  itself with a forged PKRU value.

Each refusal is an :class:`IsolationViolation` naming the function (or the
Orchestrator, outside any function). The system calls MPK cannot see are refused by
``seccomp_filter``. Standard library only: this ships inside actions.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .pkru_scan import ELF_MAGIC, NotAnELF, scan_elf

_MEMORY_FILES = re.compile(r"^/(proc/(\d+|self|thread-self)(/task/\d+)?/mem|dev/k?mem"
                           r"|proc/kcore)$")
# libc entry points that write PKRU or copy memory past it.
REFUSED_SYMBOLS = frozenset({"pkey_set", "pkey_get", "pkey_mprotect", "pkey_alloc",
                             "pkey_free", "process_vm_readv", "process_vm_writev",
                             "ptrace", "syscall"})
# ctypes events that execute native code or touch raw memory.
_CTYPES_RAW = frozenset({"ctypes.call_function", "ctypes.cdata", "ctypes.string_at",
                         "ctypes.wstring_at", "ctypes.cdata/buffer", "ctypes.addressof",
                         "ctypes.dlopen"})
_ORCHESTRATOR = "the Orchestrator"


class IsolationViolation(RuntimeError):
    """Function code tried something that would defeat its isolation."""

    def __init__(self, function: str | None, what: str) -> None:
        who = f"function {function!r}" if function else _ORCHESTRATOR
        super().__init__(f"{who}: {what} refused (mpk isolation)")
        self.function = function


@dataclass
class Policy:
    """What the hook enforces; built once by the Orchestrator in ``mpk`` mode."""

    gate: bytes | None  # the runtime's gate (``_faastlane.gate_code()``)
    waived: frozenset[str] = frozenset()  # real paths the action's inspection waived
    refuse_ctypes: bool = False  # any ctypes call/raw access inside a function
    _verdicts: dict[tuple[int, int, int, int], str | None] = field(default_factory=dict)

    def native_finding(self, path: str) -> str | None:
        """Why ``path`` may not be loaded, or None; cached per file identity."""
        real = os.path.realpath(path)
        if real in self.waived:
            return None
        try:
            info = os.stat(real)
        except OSError as exc:
            return f"cannot inspect {path}: {exc.strerror}"
        key = (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size)
        if key not in self._verdicts:
            self._verdicts[key] = _inspect(real, self.gate)
        return self._verdicts[key]


def _inspect(path: str, gate: bytes | None) -> str | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        return f"cannot inspect {path}: {exc.strerror}"
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


_scope = threading.local()
_policy: Policy | None = None
_lock = threading.Lock()


def current_function() -> str | None:
    """The function the calling thread is running, if any."""
    return getattr(_scope, "function", None)


@contextmanager
def function_scope(name: str) -> Iterator[None]:
    """Mark the calling thread as running function ``name`` (what the invoker wraps
    around a function call in ``mpk`` mode)."""
    outer = current_function()
    _scope.function = name
    try:
        yield
    finally:
        _scope.function = outer


def _path_of(argument: Any) -> str | None:
    if isinstance(argument, bytes):
        argument = os.fsdecode(argument)
    return argument if isinstance(argument, str) else None


def _hook(event: str, args: tuple[Any, ...]) -> None:
    policy = _policy
    if policy is None:
        return
    function = current_function()
    if event == "open":
        path = _path_of(args[0]) if args else None
        if path is not None and _MEMORY_FILES.match(os.path.realpath(path)):
            raise IsolationViolation(function, f"opening {path}")
    elif event == "import" and len(args) > 1 and args[1]:
        path = _path_of(args[1])
        if path and not path.endswith((".py", ".pyc")):
            why = policy.native_finding(path)
            if why:
                raise IsolationViolation(function, why)
    elif event == "ctypes.dlopen":
        if function is not None and policy.refuse_ctypes:
            raise IsolationViolation(function, "ctypes (loading native code)")
        path = _path_of(args[0]) if args else None
        if path is not None:
            resolved = _resolve_library(path)
            why = policy.native_finding(resolved) if resolved else \
                f"loading {path}: not found where the inspector can read it"
            if why:
                raise IsolationViolation(function, why)
    elif event == "ctypes.dlsym" and function is not None:
        name = args[1] if len(args) > 1 else None
        if policy.refuse_ctypes or (isinstance(name, str) and name in REFUSED_SYMBOLS):
            raise IsolationViolation(function, f"ctypes lookup of {name!r}")
    elif event in _CTYPES_RAW and function is not None and policy.refuse_ctypes:
        raise IsolationViolation(function, f"ctypes ({event})")


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


def install(policy: Policy) -> None:
    """Install the audit hook (once per process; later calls replace the policy).

    Audit hooks cannot be removed: install it after the Orchestrator has loaded what
    it trusts and before any function runs.
    """
    global _policy
    with _lock:
        first = _policy is None
        _policy = policy
        if first:
            sys.addaudithook(_hook)


def runtime_gate() -> bytes | None:
    """``_faastlane.gate_code()`` on the cpython-mpk runtime, else None (every WRPKRU
    in native code loaded later is then refused)."""
    try:
        import _faastlane  # type: ignore[import-not-found]
    except ImportError:
        return None
    code: bytes = _faastlane.gate_code()
    return code or None
