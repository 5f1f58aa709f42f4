"""The object a generated ``orchestrator.py`` builds: one per action, warm across requests.

It pre-imports every function module when the action loads (their module-level set-up
runs once per container, as on Lambda) -- under process isolation, the functions it
isolates import in their own sandboxed processes instead -- reads the placement plan,
and executes workflow instances. Platform entry points (``__main__.py`` for OpenWhisk,
``lambda_function.py`` for Lambda) and the local runner all go through
:meth:`Orchestrator.execute`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

from .action_plan import ActionPlan
from .asl import jsonata
from .asl.errors import RUNTIME, StatesError, error_object, unexpected_cause
from .asl.model import JSONATA, Machine, walk_states
from .engine import handoff_scope, history, modes
from .engine.execution import Execution
from .engine.functions import FunctionRegistry, FunctionSpec, Invocable, NoSandboxes
from .interpreter.states import run_machine
from .options import Options
from .parallel.forkpool import ForkPool
from .parallel.sections import Sections
from .parallel.spill import Spiller
from .sandbox.host import Sandboxes
from .services import clients as service_clients
from .services import executions as state_machines
from .services.calls import services_of

SUCCEEDED = "SUCCEEDED"
FAILED = "FAILED"


@dataclass(frozen=True)
class Result:
    """How an execution ended, as DescribeExecution reports it."""

    status: str
    output: Any = None
    error: str | None = None
    cause: str | None = None
    state: str | None = None  # the (innermost) state a failed execution failed in
    history: list[dict[str, Any]] | None = None  # its events, when recorded (--history)

    def to_json(self) -> Any:
        """The output, or ``{"Error", "Cause"}`` of a failed execution."""
        if self.status == SUCCEEDED:
            return self.output
        return error_object(self.error, self.cause)


def action_memory_mb() -> int | None:
    """The memory the action was given (Lambda's setting, else the container's cgroup
    limit): a sandboxed function's memory limit unless faastlane.json sets its own."""
    size = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "")
    if size.isdigit():
        return int(size)
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as handle:
            limit = handle.read().strip()
    except OSError:
        return None
    return int(limit) // (1024 * 1024) if limit.isdigit() else None


def _load_private(root: str, spec: FunctionSpec, keep_escapes: bool) -> Invocable:
    """A function in its own private heap (isolation mpk), imported only when asked:
    the private heaps need the cpython-mpk runtime."""
    from .isolation.private_heaps import load

    return load(root, spec, keep_escapes)


class Orchestrator:
    """A composed workflow, ready to run instances."""

    def __init__(self, name: str, workflow: Machine, functions: dict[str, FunctionSpec],
                 root: str, options: Options | None = None,
                 plan: ActionPlan | None = None) -> None:
        """``plan``: the action's plan.json, read once by whoever starts the action (read
        here if not given); ``options`` replace its options (tests, the benchmark)."""
        self.name = name
        self.workflow = workflow
        self.root = root
        plan = plan or ActionPlan.read(root)
        self.options = options or plan.options
        # Sandboxes first: their zygote is forked before any function module is imported
        # here, and their imports run while the trusted functions' do.
        # Where functions run and how they are called, decided once for every execution.
        self.mode = modes.for_options(self.options, modes.isolated_functions(
            self.options, functions, plan.marked("untrusted", "sensitive"),
            plan.marked("trusted")))
        isolated = self.mode.sandboxed()
        self.sandboxes = (Sandboxes(root, [spec for name, spec in functions.items()
                                           if name in isolated],
                                    self.options.cpu_budget(), action_memory_mb(),
                                    functions.values())
                          if isolated else None)
        if self.sandboxes is not None:
            self.sandboxes.warm()
        # Under process isolation with every function trusted, none has a sandbox and
        # none is forked per call.
        sandboxed = self.sandboxes if self.sandboxes is not None else (
            NoSandboxes() if isolated is not None else None)
        self.functions = FunctionRegistry(root, functions, _load_private, sandboxed)
        self.functions.preload(private=self.mode.loads_privately(),
                               kept_escapes=self.options.kept_escapes)
        # The state machines states:startExecution may run in-process (this workflow and
        # the template's others), known before the warm workers fork.
        state_machines.install(state_machines.load(root, name, workflow))
        service_clients.warm(services_of(workflow))  # boto3 loaded once, as functions are
        if any(s.query_language == JSONATA for s in walk_states(workflow)):
            jsonata.preload()
        if self.sandboxes is not None:
            self.sandboxes.warmed()  # no fork while that thread talks to the zygote
        # Warm workers for Parallel/Map, forked now that every module is imported.
        self.pool = ForkPool(name, workflow, self.functions, self.mode,
                             self.mode.unconfined(plan.marked("untrusted")))
        if self.pool.wanted(self.options):
            self.pool.start(self.options.cpu_budget())
        if self.sandboxes is not None:
            self.sandboxes.ready()

    def with_options(self, **overrides: Any) -> Options:
        """This action's options with some replaced (``None`` values are ignored)."""
        return replace(self.options, **{k: v for k, v in overrides.items() if v is not None})

    def execute(self, execution_input: Any, options: Options | None = None,
                execution_name: str | None = None) -> Result:
        """Run one workflow instance to its end."""
        with handoff_scope.held():  # its data is in flight from start to end
            return self._execute(handoff_scope.take(execution_input), options,
                                 execution_name)

    def _execute(self, execution_input: Any, options: Options | None,
                 execution_name: str | None) -> Result:
        options = options or self.options
        sections = Sections(Spiller.from_environ(self.workflow, options, self.pool))
        # The mode built when the functions were loaded, unless this run's options place
        # them otherwise (-P, -Th from the command line).
        mode = self.mode if options == self.options else modes.for_registry(
            options, self.functions)
        execution = Execution(self.name, execution_input, self.functions, options,
                              self.workflow.timeout_seconds, execution_name, sections, mode)
        history.started(execution, execution_input)
        try:
            output = run_machine(self.workflow, execution_input, execution)
        except StatesError as err:
            history.ended(execution, error=err)
            return Result(FAILED, error=err.error, cause=err.cause, state=err.state,
                          history=execution.events)
        except Exception as exc:  # noqa: BLE001 - an engine fault outside any state
            fault = StatesError(RUNTIME, unexpected_cause(exc))
            history.ended(execution, error=fault)
            return Result(FAILED, error=fault.error, cause=fault.cause, history=execution.events)
        history.ended(execution, output)
        return Result(SUCCEEDED, output=output, history=execution.events)

    def close(self) -> None:
        """Stop the warm workers and the sandboxes (they also exit on their own when this
        process does)."""
        self.pool.close()
        if self.sandboxes is not None:
            self.sandboxes.close()
