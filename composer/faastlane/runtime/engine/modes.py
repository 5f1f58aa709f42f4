"""The isolation modes, one object each: where a Task's function runs and how it is called.

The Orchestrator builds its mode once (:func:`for_options`) and hands it to every
:class:`~.execution.Execution`; compose builds the same object to write plan.json's
reasons, so that what plan.json says and what the runtime does are one piece of code.

- :class:`SharedHeap` (``none``): every function on its own warm thread, state passed by
  reference; sequential Tasks may relay (``interpreter.states``).
- :class:`Sandboxed` (``process``): the functions faastlane.json isolates run in their
  own warm sandboxed processes (``sandbox/``), the others as under ``none``.
- :class:`PrivateHeaps` (``mpk``): every function on its thread, inside its own
  protection domain (``isolation.private_heaps``); the domain's entry gate copies the
  event in, so the interpreter does not.

``-P`` (every call in a forked process) is a variant of each. A mode is not told which
objects run a call until it is given a registry: compose asks only for explanations.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any, Protocol

from ..asl.model import PROCESS, THREAD, Map, Parallel, Task, walk_states
from ..options import MPK, NONE, PROCESS_ISOLATION, Options
from .functions import FunctionRegistry, FunctionSpec, Invocable
from .invoke import SANDBOX

_FORKED = ("-P: the function runs in a forked process per call; its input and output "
           "cross a pipe as JSON")


class Calls(Protocol):
    """What a mode asks of the execution it makes a call for (``execution.Execution``,
    which holds the deadline and makes the call where the mode says)."""

    functions: FunctionRegistry
    deadline: float | None

    def check_deadline(self) -> None: ...

    def remaining(self, limit: float | None = None) -> float | None: ...

    def call_loaded(self, state_name: str, loaded: Invocable, event: Any,
                    timeout_seconds: float | None, where: str) -> Any: ...

    def call_sandboxed(self, state_name: str, spec: FunctionSpec, event: Any,
                       timeout_seconds: float | None) -> Any: ...


class Mode:
    """What every mode shares; a subclass says where its functions run."""

    name = NONE

    @classmethod
    def summary(cls, marks: bool) -> str:
        """How this mode isolates, for plan.json's reason; ``marks``: whether
        faastlane.json marks some functions untrusted or sensitive."""
        return "threads share one heap"

    def __init__(self, options: Options) -> None:
        self.processes_only = options.processes_only
        self.kept_escapes = frozenset(options.kept_escapes)

    def placement(self, function: str | None, planned: str) -> str:
        """Where a function of a Task planned at ``planned`` runs (``THREAD``,
        ``PROCESS``, ``SANDBOX``); ``function`` None: named only at run time."""
        return PROCESS if self.processes_only else planned

    def copies_event(self, function: str | None, planned: str) -> bool:
        """Whether the interpreter gives the call its own copy of the event (a handler
        may change it in place; the state's input must not change): on a thread of
        this process. A call that crosses into another process gets its copy there,
        from the wire; mpk's gate copies it into the function's heap."""
        return self.placement(function, planned) == THREAD

    def explain_task(self, function: str | None) -> tuple[str, str]:
        """plan.json's placement of a Task calling ``function``, and the reason."""
        if self.processes_only:
            return PROCESS, _FORKED
        return THREAD, ("sequential state: the function runs on its own thread of the "
                        "Orchestrator; state passes by reference")

    def only_sandboxed(self, state: Parallel | Map) -> bool:
        """Whether every Task of a Parallel/Map (nested ones too) calls a function that
        runs in its own sandbox: its parallelism is the sandboxes', and the section's
        threads only wait for them (a Task naming its function at run time may call
        any; service integrations are the Orchestrator's calls, made anywhere)."""
        machines = state.branches if isinstance(state, Parallel) else (state.iterator,)
        tasks = [s for m in machines for s in walk_states(m)
                 if isinstance(s, Task) and s.integration is None]
        return bool(tasks) and all(
            t.function is not None and self.placement(t.function, t.placement) == SANDBOX
            for t in tasks)

    def sandboxed(self) -> frozenset[str] | None:
        """The functions that run in their own sandboxes (None: this mode makes none)."""
        return None

    def loads_privately(self) -> bool:
        """Whether its functions are imported into private heaps (the cpython-mpk
        runtime's protection domains) rather than the shared one."""
        return False

    def invocable(self, functions: FunctionRegistry, function: str) -> Invocable:
        """The loaded function a call runs."""
        return functions.get(function)

    def pool_allowed(self, functions: FunctionRegistry) -> bool:
        """Whether warm pre-forked workers may run parallel sections: a worker reused
        across jobs keeps what earlier jobs left in it."""
        return False

    def unconfined(self, untrusted: frozenset[str]) -> frozenset[str]:
        """Of the functions faastlane.json marks untrusted, those a reused worker would
        run with nothing between them and the jobs it runs next (a section that may
        call one gets fresh forks, never the pool)."""
        return untrusted

    def relays(self, execution: Calls, planned: str) -> bool:
        """Whether a Task planned at ``planned`` may run in a relay (``states.py``): on
        one warm thread with the Tasks around it, and no deadline but the functions'
        own."""
        return False

    def call(self, execution: Calls, state_name: str, function: str, event: Any,
             timeout_seconds: float | None, planned: str) -> Any:
        """Run one invocation; its detached result (or raise its ASL error)."""
        where = self.placement(function, planned)
        if where == SANDBOX:  # never imported here: its module is its sandbox's alone
            return execution.call_sandboxed(state_name, execution.functions.spec(function),
                                            event, timeout_seconds)
        return execution.call_loaded(state_name, self.invocable(execution.functions, function),
                                     event, timeout_seconds, where)


class SharedHeap(Mode):
    """``none``: functions share one heap, on their own warm threads."""

    def pool_allowed(self, functions: FunctionRegistry) -> bool:
        return True  # what a worker keeps, the Orchestrator's threads share anyway

    def relays(self, execution: Calls, planned: str) -> bool:
        return execution.deadline is None and self.placement(None, planned) == THREAD


class Sandboxed(Mode):
    """``process``: the isolated functions in their own warm sandboxed processes.

    ``isolated``: the functions that have a sandbox (the Orchestrator's sandboxes, or,
    at compose time, the functions faastlane.json isolates); None: no sandbox was made,
    so every call forks (an Execution made without an Orchestrator)."""

    name = PROCESS_ISOLATION

    @classmethod
    def summary(cls, marks: bool) -> str:
        if marks:
            return ("the untrusted and sensitive functions each run in their own warm "
                    "sandboxed process, the others as threads")
        return "each function not marked trusted runs in its own warm sandboxed process"

    def __init__(self, options: Options, isolated: frozenset[str] | None) -> None:
        super().__init__(options)
        self.isolated = isolated

    def placement(self, function: str | None, planned: str) -> str:
        if self.processes_only or self.isolated is None:
            return PROCESS
        # A Task naming its function at run time (FunctionName.$) may call any of them.
        if function in self.isolated or (function is None and self.isolated):
            return SANDBOX
        return planned

    def explain_task(self, function: str | None) -> tuple[str, str]:
        if self.placement(function, THREAD) == SANDBOX:
            return SANDBOX, ("isolation=process: the function runs in its own warm "
                             "sandboxed process (imported there once); its input and "
                             "output cross a socket")
        return super().explain_task(function)

    def sandboxed(self) -> frozenset[str] | None:
        return None if self.processes_only else self.isolated

    def pool_allowed(self, functions: FunctionRegistry) -> bool:
        # Only where the isolated functions have sandboxes: a worker then only calls
        # them, never runs their code.
        return not self.processes_only and functions.sandboxes is not None

    def unconfined(self, untrusted: frozenset[str]) -> frozenset[str]:
        return untrusted - (self.isolated or frozenset())  # a worker only calls those


class PrivateHeaps(Mode):
    """``mpk``: each function in its own private heap and protection domain.

    No relays: each function keeps its own thread, because C libraries keep per-thread
    state (OpenSSL's error queue and caches, numpy's) that a function's calls allocate
    in its domain; a second function on that thread would fault on it (under real keys:
    two TLS clients in turn, ml-predict's chain)."""

    name = MPK

    @classmethod
    def summary(cls, marks: bool) -> str:
        return ("each function runs in its own private heap (protection domain) on the "
                "cpython-mpk runtime, enforced where the CPU has protection keys")

    def explain_task(self, function: str | None) -> tuple[str, str]:
        if self.processes_only:
            return PROCESS, _FORKED
        return THREAD, ("isolation=mpk: the function runs on its own thread inside its "
                        "protection domain (a private heap under its own key); its event "
                        "is copied in by the domain's gate and its result handed on by "
                        "value")

    def loads_privately(self) -> bool:
        return True

    def copies_event(self, function: str | None, planned: str) -> bool:
        return False  # the domain's entry gate copies it into the function's heap

    def invocable(self, functions: FunctionRegistry, function: str) -> Invocable:
        return functions.get(function, private=True,
                             keep_escapes=function in self.kept_escapes)

    def pool_allowed(self, functions: FunctionRegistry) -> bool:
        # A worker is forked after every function's domain was made: it has the same
        # keyed heaps, and a job enters its function's domain through the same gate.
        return not self.processes_only

    def unconfined(self, untrusted: frozenset[str]) -> frozenset[str]:
        return frozenset()  # every function is in its domain, in a worker as here


def isolated_functions(options: Options, functions: Iterable[str], marked: Collection[str],
                       trusted: Collection[str] = ()) -> frozenset[str] | None:
    """The functions process isolation runs in their own warm sandboxed processes:
    those faastlane.json marks untrusted or sensitive (``marked``; the others keep
    running as threads, state by reference), or, if it marks none, every one it does
    not mark trusted. None under the other modes, and under ``-P`` (a fork per call)."""
    if options.isolation != PROCESS_ISOLATION or options.processes_only:
        return None
    if marked:
        return frozenset(name for name in functions if name in marked)
    return frozenset(name for name in functions if name not in trusted)


KINDS: dict[str, type[Mode]] = {NONE: SharedHeap, PROCESS_ISOLATION: Sandboxed,
                                 MPK: PrivateHeaps}


def for_options(options: Options, isolated: frozenset[str] | None = None) -> Mode:
    """The mode ``options`` name; ``isolated``: the functions with a sandbox (process)."""
    kind = KINDS.get(options.isolation, SharedHeap)
    return Sandboxed(options, isolated) if kind is Sandboxed else kind(options)


def for_registry(options: Options, functions: FunctionRegistry) -> Mode:
    """The mode of an Execution made from ``options`` and the registry its functions are
    called through (the sandboxes, if any, are the registry's)."""
    sandboxes = functions.sandboxes
    return for_options(options, sandboxes.names() if sandboxes is not None else None)
