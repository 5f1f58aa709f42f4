"""Functions in private heaps: ``--isolation mpk`` (cpython-mpk/PRIVATE_HEAPS.md).

Each function gets one protection domain with a private heap for the container's life
(PRIVATE_HEAPS.md section 1). Its module is imported *inside* the domain, so whatever it
sets up at module level, or caches lazily in its globals, lives in its heap: reused by
its next invocation, unreadable to every other function. What it imports from outside
its own files (numpy, the standard library) is imported first and stays shared: in the
library loader, a heapless domain where those module bodies run sealed and guarded,
with no function's rights (``library_loader.py``).

An invocation crosses the entry gate on the function's warm thread, runs on a private
copy of its input, and before the exit gate:

1. **promotes** its result (or its error) by value: the JSON value is rebuilt by a
   thread that can still read the domain but allocates in the shared heap
   (``_faastlane.call_shared``; in C for plain JSON values, ``promote_json``);
2. **drops** every private reference the invoker held and collects the heap's young
   generation;
3. **checks for escapes**: shared objects still pointing into the domain
   (``Domain.shared_referrers``). Entries of the function's own modules in
   ``sys.modules`` are expected; the standard library's caches (``re``, ``struct``,
   ``functools.lru_cache``, ``linecache``) and known libraries' memo dicts are the
   function's own copies (``stdlib_caches.py``, ``library_caches.py``).
   Anything else fails the invocation with ``Faastlane.IsolationError`` naming
   the function and what holds its object. The domain is *not* destroyed (the shared
   pointers would dangle): the escaped object stays readable only by its owner, any
   other reader dies of a protection-key fault naming the owner, and the Orchestrator
   is marked tainted so that a server retires the container after answering.

Each function's module is loaded on its own warm thread, in its own context (context
variables), with its own instances of modules that keep a per-caller default
(``module_instances.py``: boto3's session).

Standard library only: this ships inside composed actions.
"""

from __future__ import annotations

import codecs
import contextvars
import gc
import importlib
import json
import os
import platform
import sys
import threading
import time
import typing
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..asl.errors import StatesError
from ..asl.jsonvalue import detach, lambda_default
from ..engine import fault_reports, lambda_env
from ..engine.functions import (
    HANDLER_NOT_FOUND,
    USER_FAILURES,
    FunctionSpec,
    call_entry,
    environment_of,
    failure,
    handler_not_found,
    init_failure,
    load_module,
    module_name,
    own_namespace,
)
from ..engine.lambda_context import LambdaContext
from ..engine.threads import POOL
from . import (
    domains,
    guard,
    handoff,
    hardening,
    library_caches,
    library_loader,
    module_instances,
    shared_registries,
    stdlib_caches,
)

if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")

ISOLATION_ERROR = "Faastlane.IsolationError"
ESCAPE_CHECK_VARIABLE = "FAASTLANE_ESCAPE_CHECK"
# Read once: the check decides on every invocation, on the hand-off path.
_CHECK_EVERY = os.environ.get(ESCAPE_CHECK_VARIABLE, "sampled") == "every"
# Each function's first invocations are checked (caches fill there); after that the
# scan may cost at most 1/SCAN_BUDGET of the function's invocation time.
FIRST_CHECKED = 4
SCAN_BUDGET = 100


def _local_dummy_type() -> type:
    """``_thread._localdummy``: what a ``threading.local`` keys each thread's dict by."""
    local = threading.local()
    local.probe = True
    [dicts] = [o for o in gc.get_referents(local) if type(o) is dict]
    return type(next(iter(dicts)))


_LOCAL_DUMMY = _local_dummy_type()
MODULE_PREFIX = "faastlane_mpk_"
# Codecs looked up inside a function would be cached, private, in the interpreter's
# codec registry: look the common ones up first, outside every domain.
_WARM_CODECS = ("utf-8", "ascii", "latin-1", "utf-16", "utf-32", "idna", "cp1252")


class IsolationError(StatesError):
    """A function broke the rules of its private heap (an escape, a refused import)."""

    def __init__(self, function: str, what: str) -> None:
        super().__init__(ISOLATION_ERROR, f"function {function!r}: {what} (isolation mpk)")
        self.function = function


@dataclass
class DomainFunction:
    """A function whose module lives in its own private heap."""

    spec: FunctionSpec
    domain: domains.ProtectionDomain
    # [module, instances, context]: a shared list holding the private module, the
    # function's module instances (module_instances.py) and its base context (context
    # variables its module set-up set), read only inside the domain (the module is kept
    # out of sys.modules, which code outside iterates).
    holder: list[Any] = field(default_factory=list, repr=False)
    own_modules: frozenset[str] = frozenset()  # sys.modules entries made inside
    # Top-level names of the modules in the function's own files: imported privately.
    own_names: frozenset[str] = frozenset()
    escaped: str | None = None  # set once an escape was found: the function is refused
    # Shared objects the module's own set-up left pointing into the heap (library
    # memoization while it built its model, say): accepted once, at load, and reported.
    baseline: list[Any] = field(default_factory=list, repr=False)
    invocations: int = 0
    keep_escapes: bool = False  # faastlane.json "kept_escapes": report, do not fail
    # The escape-scan budget, kept outside the domain (shared floats): seconds spent in
    # invocations since the last check, and how long the last checked one took.
    unchecked_seconds: float = 0.0
    checked_seconds: float = 0.0
    # Its own environment variables (engine.lambda_env), a shared dict made at load.
    environment: dict[str, str | None] | None = field(default=None, repr=False)

    def invoke(self, event: Any, timeout_seconds: float | None = None) -> Any:
        """Run one invocation inside the domain; return its result, promoted (into the
        hand-off heap, when there is one: ``handoff.py``)."""
        if self.escaped is not None:
            raise IsolationError(self.spec.name, self.escaped)
        # Its records and this thread's state are read inside: made in the shared heap.
        with handoff.outside():
            result, error, moved = self._invoke(event, timeout_seconds)
        if error is not None:
            raise handoff.take_error(error)
        return result if moved else handoff.take(result)

    def _invoke(self, event: Any, timeout_seconds: float | None
                ) -> tuple[Any, StatesError | None, bool]:
        """The invocation's result (and whether it is in the hand-off heap already)
        or error."""
        # Set outside the domain: an int or a thread's dict made inside would be private.
        _running.own = self.own_names
        _running.fn = self
        current = lambda_env.CURRENT
        outer = current.view, current.context
        # Both keys set here, outside: inside, the context only replaces a value.
        current.view, current.context = self.environment, None
        self.invocations += 1
        library_loader.start_loader_thread()  # a forked child's own, started outside
        hardening.confine_thread()  # no CAP_SYS_PTRACE on a thread running its code
        check = _check_due(self)
        start = time.perf_counter()
        # Sealed: the function's code cannot leave its domain or enter another. Its
        # input crosses the entry gate as its own copy, made there in C (so does a
        # timeout the engine computed in the hand-off heap).
        try:
            try:
                (result, error, escaped), handed = self.domain.run_sealed_on(
                    event, _run_inside, self, timeout_seconds, check)
            except TypeError as exc:
                if not str(exc).startswith(_NOT_PLAIN_JSON):
                    raise  # the function ran: never run it twice
                # Not plain JSON (a Decimal, a tuple's subclass): the gate's copy refused
                # it before anything ran; Lambda's conversion first.
                (result, error, escaped), handed = self.domain.run_sealed_on(
                    detach(event), _run_inside, self, timeout_seconds, check)
        finally:
            current.view, current.context = outer
        if escaped is not None:
            refusal = _record_escape(self, escaped)
            # A write the guard refused names what the function tried: it stays the error.
            if refusal is not None and (error is None or error.error != ISOLATION_ERROR):
                error, result = refusal, None
        elapsed = time.perf_counter() - start
        if check:
            self.checked_seconds, self.unchecked_seconds = elapsed, 0.0
        else:
            self.unchecked_seconds += elapsed
        if result is _HANDED_OFF:
            return handed, error, True
        return result, error, False


# How the entry gate's copy (Domain.run_sealed_on) refuses a value that is not plain JSON.
_NOT_PLAIN_JSON = ("not a plain JSON value", "not a str key")
# What the invoker returns for a result _faastlane.hand_off moved; the gate returns the
# moved value beside the invoker's outcome (an immortal object: shared).
_HANDED_OFF = ...


def call_shared(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` allocating in the shared heap (the caller stays in its domain)."""
    native = domains.native_module()
    result: T = native.call_shared(function, *args)
    return result


@guard.broker
def _promote(value: Any) -> Any:
    """A copy of a JSON value built by the calling thread's allocator (under
    ``call_shared``: the shared heap), checked as Lambda's encoder checks a result.
    A plain JSON value is copied in C (``promote_json``: the containers and the
    private leaves); anything else -- a Decimal, a subclass, a non-str key, a cycle --
    goes through json.dumps and json.loads, which convert it as Lambda does or say
    what is wrong."""
    try:
        return domains.native_module().promote_json(value)
    except (TypeError, RecursionError):
        pass
    try:
        return json.loads(json.dumps(value, default=lambda_default))
    except TypeError:
        detach(value)  # raises NotJSONSerializable saying where in the value
        raise


def _run_inside(event: Any, fn: DomainFunction, timeout_seconds: float | None,
                check_escapes: bool) -> tuple[Any, StatesError | None, str | None]:
    """Everything between the gates, on the function's own copy of its input. Returns
    only shared objects -- the result, the error, and what escaped (the caller records
    it, outside: the function's record is read-only in here) -- and keeps no private
    one."""
    error: StatesError | None = None
    result: Any = None
    try:
        result = _invoke_private(fn, event, timeout_seconds)
    except StatesError as exc:
        error = call_shared(_copy_error, exc)
    _flush_std_streams()
    gc.collect(0)
    # Concurrent invocations hold live references: only the last one out checks.
    last_out = fn.domain.threads_inside() == 1
    escaped = _escapes(fn) if check_escapes and last_out else None
    # What crosses the exit gate is shared.
    return call_shared(_outcome, result, error, escaped)


@guard.broker
def _outcome(result: Any, error: StatesError | None,
             escaped: str | None) -> tuple[Any, StatesError | None, str | None]:
    return result, error, None if escaped is None else _promote(escaped)


def _record_escape(fn: DomainFunction, escaped: str) -> StatesError | None:
    """Outside the domain: keep (report) or refuse what escaped; the error, if any."""
    if fn.keep_escapes:
        fn.baseline = list(fn.domain.shared_referrers())
        sys.stderr.write(f"[faastlane] {fn.spec.name}: kept (kept_escapes): {escaped}\n")
        return None
    fn.escaped = escaped
    return IsolationError(fn.spec.name, escaped)


@guard.broker
def _holders_left(fn: DomainFunction) -> list[Any]:
    """The shared holders of the function's objects that are not expected, as a shared
    list (its module set-up's baseline)."""
    return list(_unexpected(fn, fn.domain.shared_referrers()))


def _invoke_private(fn: DomainFunction, event: Any, timeout_seconds: float | None) -> Any:
    """Call the function on a private copy of its input; return its result, checked and
    promoted. Every private object made here is garbage once this frame returns."""
    context = LambdaContext(fn.spec.name, timeout_seconds)
    entry = getattr(fn.holder[0], fn.spec.entry)
    lambda_env.CURRENT.context = context  # for its log lines' request id
    try:
        with hardening.function_scope(fn.spec.name):
            # In a copy of its base context, as asyncio runs a task: what it sets in
            # context variables stays in its heap, not in the thread's shared context.
            result = fn.holder[2].copy().run(call_entry, entry, fn.spec.style,
                                             event, context)
        # Plain JSON goes straight to the hand-off heap, rebuilt in C (the common
        # case); anything else through Lambda's conversion, into the shared heap.
        if domains.native_module().hand_off(result):
            return _HANDED_OFF
        return call_shared(_promote, result)
    except StatesError:
        raise
    except guard.SharedWriteError as exc:
        # Shared code, or the runtime's state, written by function code: refused.
        raise IsolationError(fn.spec.name, str(exc)) from None
    except USER_FAILURES as exc:  # noqa: BLE001 - any failure of user code
        raise call_shared(_failure, fn.spec.name, exc, context.aws_request_id) from None
    finally:
        lambda_env.CURRENT.context = None  # no private object left in the thread's state


@guard.broker
def _copy_error(exc: StatesError) -> StatesError:
    """A shared copy (strings too, without __context__) of a possibly private error."""
    return type(exc)(_promote(exc.error), _promote(exc.cause))


# ---------------------------------------------------------------------------- escapes

def _escapes(fn: DomainFunction) -> str | None:
    """What still holds the function's private objects."""
    holders = _unexpected(fn, fn.domain.shared_referrers())
    if not holders:
        return None
    return "left private objects reachable from shared state: " + "; ".join(
        _describe(fn, holder) for holder in holders[:5]) + (
        f" (and {len(holders) - 5} more)" if len(holders) > 5 else "") + (
        ". Create them at module level (imported inside the function's own heap), or "
        "run the function with --isolation process")


def _flush_std_streams() -> None:
    """A buffered stream holds what was printed (private bytes) until it flushes."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass


def _check_due(fn: DomainFunction) -> bool:
    """Whether this invocation's exit checks for escapes: always with
    FAASTLANE_ESCAPE_CHECK=every; by default the function's first four (where caches
    fill), then whenever the invocations since the last check took SCAN_BUDGET times as
    long as that checked one -- the scan walks every shared GC-tracked object (8 ms with
    FINRA's libraries, ~20 ms with scikit-learn's), so it costs at most ~1% of the
    function's time. Between checks the hardware still stops every foreign read of an
    escaped object: a later check reports it, a foreign reader faults naming the owner."""
    return (_CHECK_EVERY or fn.invocations <= FIRST_CHECKED
            or fn.unchecked_seconds >= SCAN_BUDGET * fn.checked_seconds)


def _unexpected(fn: DomainFunction, holders: list[Any]) -> list[Any]:
    baseline = {id(h) for h in fn.baseline}
    return [h for h in holders if h is not fn.holder and id(h) not in baseline
            # weakref.finalize's registry: finalizers of the function's own objects, run
            # inside the domain when those objects die there.
            and h is not weakref.finalize._registry  # type: ignore[attr-defined]
            and not (h is sys.modules and _only_own_modules(fn))
            and not _thread_local_state(fn, h) and not _subclass_table(fn, h)]


def _subclass_table(fn: DomainFunction, holder: Any) -> bool:
    """A shared class's table of subclasses (``type.__subclasses__``, keyed by address,
    weak references) naming a class the function defined: its own class, kept alive by
    its own module. Known hazard, documented: code that walks a shared class's
    ``__subclasses__()`` reaches that class, and faults outside the function."""
    if type(holder) is not dict:
        return False
    mine = fn.domain.contains
    return all(isinstance(ref, weakref.ref) and id(ref()) == key
               for key, ref in fn.domain.visible_items(holder) if mine(id(ref)))


def _thread_local_state(fn: DomainFunction, holder: Any) -> bool:
    """A ``threading.local``'s entry for the calling thread: its per-thread dict, or the
    weak reference the local keeps to the thread. A function runs only on threads
    dedicated to it (``workers.py``), so that state is the function's own."""
    mine = fn.domain.contains
    if isinstance(holder, dict):
        return all(type(k) is _LOCAL_DUMMY for k, v in fn.domain.visible_items(holder)
                   if mine(id(k)) or mine(id(v)))
    if isinstance(holder, set):
        return all(isinstance(ref, weakref.ref) and type(ref()) is _LOCAL_DUMMY
                   for ref in fn.domain.visible_items(holder) if mine(id(ref)))
    return False


def _only_own_modules(fn: DomainFunction) -> bool:
    return all(name in fn.own_modules for name, module in fn.domain.visible_items(sys.modules)
               if fn.domain.contains(id(module)))


def _describe(fn: DomainFunction, holder: Any) -> str:
    """A shared holder of private objects, named without touching another domain."""
    if holder is sys.modules:
        names = [n for n, m in fn.domain.visible_items(sys.modules)
                 if fn.domain.contains(id(m)) and n not in fn.own_modules]
        return f"sys.modules (module {', '.join(names)} imported inside the function)"
    for name, module in fn.domain.visible_items(sys.modules):
        if domains.native_module().slot_of(id(module)) is None and \
                getattr(module, "__dict__", None) is holder:
            return f"a global of module {name}"
    if isinstance(holder, dict):
        keys = [k for k, v in fn.domain.visible_items(holder)
                if fn.domain.contains(id(v)) or fn.domain.contains(id(k))]
        shown = ", ".join(repr(k) if isinstance(k, str) else type(k).__name__
                          for k in keys[:3])
        return f"a shared dict (under {shown})"
    return f"a shared {type(holder).__name__}"


# ---------------------------------------------------------------------------- loading

def load(root: str, spec: FunctionSpec, keep_escapes: bool = False) -> DomainFunction:
    """Create the function's domain and import its module inside it; ``keep_escapes``:
    the app chose to keep (report) this function's escapes rather than fail on them."""
    _check_runtime()
    # Before any function's code (module bodies too) and the libraries they import:
    # native code loaded from here on is inspected; ctypes only outside functions.
    try:
        hardening.activate(root, libraries_ffi=True)
    except hardening.HardeningError as exc:
        raise domains.IsolationUnavailableError(f"isolation mpk: {exc}") from None
    _warm_shared_state()
    handoff.activate()  # before the functions' domains and their warm threads
    library_loader.import_dependencies(root, spec)
    hardening.trust_numpy_ctypes()  # ndarray.ctypes of its own arrays works inside
    for warning in library_caches.prepare_loaded():
        sys.stderr.write(f"[faastlane] {warning}\n")
    fn = DomainFunction(spec, domains.ProtectionDomain(spec.name, private_heap=True),
                        keep_escapes=keep_escapes, environment=environment_of(root, spec))
    fault_reports.announce(fn.domain.slot, fn.domain.key, spec.name)
    guard.name_slot(fn.domain.slot, spec.name)
    hardening.name_domain(fn.domain.slot, spec.name)
    name = module_name(spec, MODULE_PREFIX)
    fn.own_names = library_loader.own_names(root, spec)
    _own_by_slot[fn.domain.slot] = fn.own_names  # for the threads its code starts
    # Outside the domain: the routing tables of its own modules are shared.
    own_namespace(root, spec, name)
    try:
        # On the function's own warm thread, the one its invocations run on: what C
        # libraries keep per thread (OpenSSL's error queue, made on first use) is then
        # made in its heap and only ever used by it -- loading every function on one
        # thread, the second function read the first one's.
        error = POOL.run(spec.name, lambda: _load_on_own_thread(root, fn, name))
    except BaseException:
        del _own_by_slot[fn.domain.slot]
        fn.domain.destroy()  # nothing shared refers into it yet
        raise
    if error is not None:
        # The failed import may have left private modules in sys.modules: keep the
        # domain (destroying it would leave those pointers dangling).
        raise error
    # From here on its records, shared code and this runtime's state are read-only to
    # every function's code (guard.py).
    guard.freeze((fn, fn.holder, fn.domain), f"the runtime's record of {spec.name!r}")
    guard.freeze_shared_state()
    return fn


def _load_on_own_thread(root: str, fn: DomainFunction, name: str) -> StatesError | None:
    with handoff.outside():  # what the load makes is read inside: the shared heap
        return _load_on_this_thread(root, fn, name)


def _load_on_this_thread(root: str, fn: DomainFunction, name: str) -> StatesError | None:
    # Set outside the domain, like invoke() does.
    _running.own = fn.own_names
    _running.fn = fn
    current = lambda_env.CURRENT
    outer = current.view, current.context
    current.view, current.context = fn.environment, None  # its set-up sees its own
    try:
        hardening.confine_thread()
        return fn.domain.run_sealed(_load_inside, root, fn, name)
    finally:
        current.view, current.context = outer


def _load_inside(root: str, fn: DomainFunction, name: str) -> StatesError | None:
    """Import the module in the domain; record the sys.modules entries it made."""
    before = len(sys.modules)
    # The module's set-up runs in the function's own context (a context variable set
    # there -- botocore's client context, decimal's -- stays private and visible to
    # its invocations): the thread's shared context would hold its private values.
    base = contextvars.Context()
    fn.holder[:] = [None, {}, base]
    try:
        with hardening.function_scope(fn.spec.name):
            module = base.run(load_module, root, fn.spec, name)
        fn.holder[0] = module
        del sys.modules[name]
        if not callable(getattr(fn.holder[0], fn.spec.entry, None)):
            raise init_failure(HANDLER_NOT_FOUND, handler_not_found(fn.spec))
    except StatesError as exc:
        return call_shared(_copy_error, exc)
    finally:
        if len(sys.modules) != before:
            fn.own_modules = call_shared(_private_module_names, fn.domain)
        gc.collect(0)
    _flush_std_streams()
    if _unexpected(fn, fn.domain.shared_referrers()):
        fn.baseline = call_shared(_holders_left, fn)
    if fn.baseline:
        kinds = call_shared(_kinds, fn.baseline)
        sys.stderr.write(f"[faastlane] {fn.spec.name}: module set-up left {kinds} pointing "
                         "into its private heap; kept (other readers fault)\n")
    return None


@guard.broker
def _kinds(holders: list[Any]) -> str:
    counts: dict[str, int] = {}
    for holder in holders:
        counts[type(holder).__name__] = counts.get(type(holder).__name__, 0) + 1
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))


def _check_runtime() -> None:
    """Refuse what would make private heaps a pretence (FAASTLANE_MPK=on without keys
    raises here too; ``auto`` runs them unenforced and says so once)."""
    allocator = os.environ.get("PYTHONMALLOC", "")
    if allocator and allocator != "pymalloc":
        raise domains.IsolationUnavailableError(
            f"isolation mpk: PYTHONMALLOC={allocator} bypasses the allocator that places "
            "objects in private heaps; unset it")
    domains.native_module()
    domains.keys_enabled()


@guard.broker
def _private_module_names(domain: domains.ProtectionDomain) -> frozenset[str]:
    return frozenset(_promote(name) for name, module in domain.visible_items(sys.modules)
                     if domain.contains(id(module)))


_warmed = False


def _warm_shared_state() -> None:
    """Fill, outside every domain, the caches a function would otherwise fill privately."""
    global _warmed
    if _warmed:
        return
    _warmed = True
    _route_c_malloc()
    guard.guard_channels()  # the runtime's queues carry data in flight
    module_instances.install(_function_instances)
    for name in _WARM_CODECS:
        codecs.lookup(name)
    for module in ("_strptime", "linecache", "traceback", "decimal", "encodings.idna"):
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    stdlib_caches.install()  # re's, struct's, every lru_cache: per function
    # platform caches what it learns (uname, the interpreter's version) in its globals;
    # typing its aliases of re's types, made on first use (the namespace binds code).
    platform.uname()
    platform.python_implementation()
    for alias in ("Pattern", "Match", "ContextManager", "AsyncContextManager"):
        getattr(typing, alias)  # made and cached by typing.__getattr__ on first access
    shared_registries.install(_own_names_here)


MALLOC_VARIABLE = "FAASTLANE_MPK_MALLOC"
# OpenBLAS/OpenMP start their worker threads when numpy loads, outside every domain:
# with keys they could not read a function's private arrays (PRIVATE_HEAPS.md section 7).
_SINGLE_THREADED_LIBRARIES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _route_c_malloc() -> None:
    """Before the first private heap: C ``malloc`` (numpy arrays, Pillow images) goes to
    the calling function's heap unless the user chose ``FAASTLANE_MPK_MALLOC=off``; the
    runtime reads the variable once, when that heap is made."""
    if os.environ.setdefault(MALLOC_VARIABLE, "on") != "on":
        sys.stderr.write(f"[faastlane] {MALLOC_VARIABLE}={os.environ[MALLOC_VARIABLE]}: "
                         "C malloc stays shared (numpy and Pillow buffers are not "
                         "private)\n")
        return
    for variable in _SINGLE_THREADED_LIBRARIES:
        os.environ.setdefault(variable, "1")


def malloc_routed() -> bool:
    """True when C allocations are routed into private heaps in this process."""
    return bool(domains.native_module().malloc_routed())


_running = threading.local()  # .own, .fn: the function on this thread, its own_names
handoff.read_inside(_running)
handoff.read_inside(lambda_env.CURRENT)
handoff.read_inside(hardening.CONFINED)
# Domain slot -> that function's own_names: a thread its code started has no _running.
_own_by_slot: dict[int, frozenset[str]] = {}


def _own_names_here() -> frozenset[str] | None:
    """The top-level names of the own modules of the function whose code this thread
    runs (its warm thread, or a thread its code started, inside its domain), or None."""
    own: frozenset[str] | None = getattr(_running, "own", None)
    if own is None:
        domain = domains.native_module().current_domain()
        if domain is not None:
            own = _own_by_slot.get(domain.slot)
    return own


# A function's failure, made into its ASL error: a runtime operation.
_failure = guard.broker(failure)


def _function_instances() -> dict[str, Any] | None:
    """The running function's module instances; None outside its domain."""
    fn = getattr(_running, "fn", None)
    if fn is None or domains.native_module().current_domain() is not fn.domain._domain:
        return None
    instances: dict[str, Any] = fn.holder[1]
    return instances
