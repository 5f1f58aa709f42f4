"""The placement plan: where each state's work runs, and why (written to plan.json).

The plan is made at compose time from the workflow's shape, the app's settings and the
command line; the Orchestrator reads its options back when it loads.

Each Parallel and Map state gets one of three placements, weighing what a hand-off costs:

``threads``     its branches call no function: forking would cost more than they compute;
``processes``   forked children of this container, at most ``vcpus`` at a time; a hand-off
                is a fork and a pipe (about a millisecond, state copied on write);
``containers``  the same, plus groups of ``vcpus`` jobs sent to copies of the action when
                the section is wider than this container's vCPUs; a hand-off is a
                platform invocation (tens of milliseconds warm, its payload over the
                network, through the object store past the platform's limit).

The hand-off costs are measured by ``faastlane profile`` (fork and pipe wherever the
probe ran; invocation and transfer on a platform target) and read from its cache, with
documented defaults for what was never measured (``faastlane_profiler.costs``). They are
written into plan.json with where each came from; at run time the Orchestrator uses them,
with the time a round of the state's jobs took in this container, to choose how many
containers a section really uses (``runtime/parallel/spill.py``).

Only outermost parallel states spill: a nested one runs inside a group already sized to
its container, and a copy that runs a group never spills again.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any, NamedTuple

from faastlane.app.folder import App
from faastlane.errors import FaastlaneError, IsolationUnavailable
from faastlane.runtime.asl.model import (
    ORCHESTRATOR,
    Machine,
    Map,
    Parallel,
    State,
    Task,
    walk_states,
)
from faastlane.runtime.engine import modes
from faastlane.runtime.engine.modes import Mode
from faastlane.runtime.isolation import domains
from faastlane.runtime.isolation.domains import MPKStatus
from faastlane.runtime.options import (
    CONTAINERS,
    ISOLATION_MODES,
    MPK,
    NONE,
    PARALLEL_PROCESSES,
    PARALLEL_THREADS,
    PROCESS_ISOLATION,
    PROCESSES,
    THREADS,
    Options,
)
from faastlane.runtime.parallel.invokers import LAMBDA_PAYLOAD_LIMIT, OPENWHISK_PAYLOAD_LIMIT
from faastlane.runtime.parallel.protocol import state_keys

from .costs import HandoffCosts
from .costs import load as load_costs
from .measured import Measured, section_costs


def break_even_round_ms(costs: HandoffCosts, group_mb: float = 0.0) -> float:
    """How long a local round of jobs must take for one more container to pay: a round
    saved costs one invocation and the group's payload."""
    return costs.invoke_ms + costs.transfer_ms_per_mb * group_mb


# A deploy target's CPU (and whether its runtime is cpython-mpk) is not known when the
# action is composed: isolated by default there means warm sandboxed processes.
DEPLOY_TARGET = MPKStatus(False, "a deployed action's CPU is not known when it is composed",
                          "unknown")


def choose_isolation(app: App, requested: str | None, keys: MPKStatus | None = None
                     ) -> tuple[str, str]:
    """The isolation mode and the reason for it; refuses what cannot be given here.

    Functions are untrusted code: unless the command line or faastlane.json chooses, or
    faastlane.json marks every function trusted, each is isolated -- in its protection
    domain where the action's runtime has keys (``keys``: where it runs; by default this
    interpreter's on this CPU, under FAASTLANE_MPK), else in its own warm sandboxed
    process."""
    if requested is not None:
        mode, reason = requested, "chosen on the command line"
    elif app.settings.isolation is not None:
        mode, reason = app.settings.isolation, "set in faastlane.json"
    elif app.functions and all(name in app.settings.trusted for name in app.functions):
        mode, reason = NONE, "faastlane.json marks every function trusted"
    else:
        keys = keys or domains.status_in_use()
        if keys.available:
            mode, reason = MPK, "isolated by default (the runtime has protection keys)"
        else:
            mode, reason = PROCESS_ISOLATION, (
                f"isolated by default; protection keys are not in use ({keys.reason})")
    kind = modes.KINDS.get(mode)
    if kind is None:
        raise IsolationUnavailable(f"unknown isolation mode {mode!r} ({reason}); "
                                   f"use one of {', '.join(ISOLATION_MODES)}")
    reason += "; " + kind.summary(bool(app.settings.untrusted or app.settings.sensitive))
    return mode, reason


def _calls_functions(machine: Machine) -> bool:
    return any(isinstance(state, Task) for state in walk_states(machine))


def _machines(state: Parallel | Map) -> tuple[Machine, ...]:
    return state.branches if isinstance(state, Parallel) else (state.iterator,)


class Placement(NamedTuple):
    """Where a Parallel/Map runs, why, and whether its local part (threads or warm
    processes) is learned at run time (``parallel/learned.py``): nothing measured it."""

    where: str
    reason: str
    learned: bool = False


def decide(state: Parallel | Map, vcpus: int, max_containers: int, parallel: str,
           nested: bool, costs: HandoffCosts | None = None,
           measured: Measured | None = None) -> Placement:
    """A Parallel/Map state's placement and the reason for it.

    ``vcpus`` 0 means the container's own count, known only at run time. ``measured``:
    an earlier run's compute times (``--profile-from``), which weigh the section's jobs
    on threads against warm processes; without them the Orchestrator weighs them itself.
    """
    costs = costs or HandoffCosts()
    if parallel == PARALLEL_THREADS:
        return Placement(THREADS, "threads-only variant (-Th): parallel work shares the GIL")
    if not any(_calls_functions(m) for m in _machines(state)):
        return Placement(THREADS, "its branches call no function: evaluating them on "
                                  f"threads costs less than forking ({costs.fork_ms:g} ms "
                                  "a process)")
    weighed = None if measured is None else section_costs(state, measured, vcpus,
                                                          costs.fork_ms)
    if weighed is None:
        where, why = _beyond_threads(state, vcpus, max_containers, nested, costs)
        return Placement(where, (
            "nothing measured its jobs (compose --profile-from TRACE weighs them here): "
            "the Orchestrator runs them on its threads first, timed; if they kept one core "
            f"busy and each computed longer than a process hand-off ({costs.fork_ms:g} ms), "
            "the next run tries its warm processes, and from then on the faster of the two "
            f"per job; on processes: {why}"), learned=True)
    numbers = (f"measured ({measured.source if measured else ''}): {weighed.jobs} jobs of "
               f"{weighed.total_ms / weighed.jobs:.3g} ms on average take "
               f"{weighed.threads_ms:.3g} ms on threads, {weighed.processes_ms:.3g} ms on "
               f"{weighed.vcpus} warm processes ({weighed.handoff_ms:g} ms a hand-off each)")
    if weighed.threads_ms <= weighed.processes_ms:
        return Placement(THREADS, numbers)
    where, why = _beyond_threads(state, vcpus, max_containers, nested, costs)
    return Placement(where, f"{numbers}; {why}")


def _beyond_threads(state: Parallel | Map, vcpus: int, max_containers: int, nested: bool,
                    costs: HandoffCosts) -> tuple[str, str]:
    """A section that calls functions, in processes or containers."""
    budget = f"{vcpus} vCPUs" if vcpus else "the container's vCPUs (counted at run time)"
    local = (f"warm worker processes, at most {budget} at a time, results over pipes "
             f"({costs.fork_ms:g} ms a hand-off + {costs.pipe_ms_per_mb:g} ms per MB)")
    remote = (f"one invocation ({costs.invoke_ms:g} ms + {costs.transfer_ms_per_mb:g} ms "
              f"per MB of the group's input): another container pays when a round of "
              f"these jobs takes over {break_even_round_ms(costs):g} ms plus the payload's "
              f"share; the Orchestrator times the rounds and uses only the containers "
              f"that pay")
    if max_containers <= 1:
        return PROCESSES, f"{local}; --max-containers 1: no spilling"
    if nested:
        return PROCESSES, (f"{local}; nested in a parallel state, so it already runs in a "
                           "group sized to its container")
    if isinstance(state, Parallel):
        width = len(state.branches)
        if vcpus and width <= vcpus:
            return PROCESSES, f"{width} branches fit {vcpus} vCPUs: {local}"
        if vcpus:
            containers = min(max_containers, math.ceil(width / vcpus))
            return CONTAINERS, (
                f"{width} branches exceed {vcpus} vCPUs: groups of about "
                f"{math.ceil(width / containers)} in up to {containers} containers, this "
                f"one included, where a local branch beyond the vCPUs would wait a whole "
                f"round; a remote group costs {remote}")
    return CONTAINERS, (
        f"{local}; when there are more jobs than {budget}, groups sized to a container's "
        f"vCPUs may go to copies of this action (at most {max_containers} containers in "
        f"all; payloads over the platform's limit through FAASTLANE_SPILL_STORE); a "
        f"remote group costs {remote}")


def placements(workflow: Machine, vcpus: int, max_containers: int, parallel: str,
               costs: HandoffCosts | None = None, measured: Measured | None = None
               ) -> dict[str, Placement]:
    """Plan key -> placement for every Parallel and Map state."""
    keys = state_keys(workflow)
    decided: dict[str, Placement] = {}

    def visit(machine: Machine, nested: bool) -> None:
        for state in machine.states.values():
            if isinstance(state, (Parallel, Map)):
                decided[keys[id(state)]] = decide(state, vcpus, max_containers, parallel,
                                                  nested, costs, measured)
                for inner in _machines(state):
                    visit(inner, True)

    visit(workflow, False)
    return decided


def make_options(app: App, isolation: str, vcpus: int | None, threads_only: bool,
                 processes_only: bool, workflow: Machine | None = None,
                 max_containers: int | None = None, measured: Measured | None = None
                 ) -> Options:
    """The Orchestrator's options: the command line over faastlane.json over defaults."""
    if vcpus is not None and vcpus < 1:
        raise FaastlaneError(f"--vcpus {vcpus}: give at least 1")
    if max_containers is not None and max_containers < 1:
        raise FaastlaneError(f"--max-containers {max_containers}: give at least 1")
    cpus = vcpus if vcpus is not None else (app.settings.vcpus or 0)
    parallel = PARALLEL_THREADS if threads_only else PARALLEL_PROCESSES
    containers = max_containers or 1
    costs = load_costs()
    decided = ({} if workflow is None
               else placements(workflow, cpus, containers, parallel, costs, measured))
    return Options(isolation=isolation, parallel=parallel, processes_only=processes_only,
                   vcpus=cpus, max_containers=containers,
                   placements={key: p.where for key, p in decided.items()},
                   # -P forks every call anyway: nothing to learn.
                   learned={} if processes_only else {
                       key: costs.fork_ms for key, p in decided.items() if p.learned},
                   kept_escapes=tuple(sorted(app.settings.kept_escapes)))


def _describe(state: State, options: Options, decided: Placement | None,
              costs: HandoffCosts, mode: Mode) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": type(state).__name__}
    if isinstance(state, Task) and state.integration is not None:
        entry["integration"] = state.integration
        entry["placement"] = ORCHESTRATOR
        entry["reason"] = ("service integration: the Orchestrator calls the service itself "
                           "(boto3, its own credentials and endpoint), never a function's "
                           "sandbox or domain")
    elif isinstance(state, Task):
        entry["function"] = state.function
        entry["placement"], entry["reason"] = mode.explain_task(state.function)
    elif isinstance(state, (Parallel, Map)):
        if isinstance(state, Parallel):
            entry["branches"] = len(state.branches)
        else:
            entry["iterations"] = "one per item"
            if state.max_concurrency:
                entry["max_concurrency"] = state.max_concurrency
        entry["placement"], entry["reason"] = (decided.where, decided.reason) if decided \
            else (PROCESSES, "not planned")
        if entry["placement"] != THREADS and mode.only_sandboxed(state):
            # As the runtime decides it (parallel/sections.py), where it does not spill.
            local = ("on the Orchestrator's threads: every function it calls runs in its "
                     "own sandbox, which gives the parallelism (a worker process would "
                     "only add a hand-off)")
            if entry["placement"] == PROCESSES:
                entry["placement"], entry["reason"] = THREADS, local
            else:
                entry["reason"] += f"; a group kept in this container runs {local}"
        if (decided is not None and decided.learned and not options.processes_only
                and entry["placement"] != THREADS and not mode.only_sandboxed(state)):
            entry["learned"] = True  # threads or warm processes: timed at run time
        if entry["placement"] == CONTAINERS:
            entry["max_containers"] = options.max_containers
            # The runtime reads these back (parallel/policy.py) to choose how many
            # containers.
            entry["handoff"] = {
                **costs.to_json(), "break_even_round_ms": break_even_round_ms(costs),
                "payload_limit_bytes": {"openwhisk": OPENWHISK_PAYLOAD_LIMIT,
                                        "lambda": LAMBDA_PAYLOAD_LIMIT}}
    else:
        entry["placement"] = "inline"
        entry["reason"] = "no function: evaluated by the Orchestrator itself"
    return entry


def make_plan(app: App, workflow: Machine, options: Options, isolation_reason: str,
              measured: Measured | None = None) -> dict[str, Any]:
    """plan.json's content."""
    keys = state_keys(workflow)
    costs = load_costs()
    decided = placements(workflow, options.vcpus, options.max_containers, options.parallel,
                         costs, measured)
    # The runtime's own rules, given the functions the Orchestrator will isolate.
    mode = modes.for_options(options, modes.isolated_functions(
        options, app.functions, set(app.settings.untrusted) | set(app.settings.sensitive),
        set(app.settings.trusted)))
    return {
        "workflow": app.name,
        "options": asdict(options),
        "isolation": {"mode": options.isolation, "reason": isolation_reason},
        **({} if measured is None else {"measured": {
            "from": measured.source, "compute_ms": measured.compute_ms,
            "map_jobs": measured.widths}}),
        "functions": {name: {"module": spec.module_file, "entry": spec.entry,
                             "style": spec.style,
                             "untrusted": name in app.settings.untrusted,
                             "sensitive": name in app.settings.sensitive,
                             "trusted": name in app.settings.trusted}
                      for name, spec in app.functions.items()},
        "states": {keys[id(state)]: _describe(state, options, decided.get(keys[id(state)]),
                                              costs, mode)
                   for state in walk_states(workflow)},
    }
