"""How an Orchestrator places work: the isolation and placement words and ``Options``.

Read from plan.json (written by ``faastlane compose``), overridable per run. Compose-time
code imports these too, so they live at the bottom of the runtime.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .cpus import available_cpus

NONE = "none"
PROCESS_ISOLATION = "process"
MPK = "mpk"
ISOLATION_MODES = (MPK, PROCESS_ISOLATION, NONE)

# How Parallel branches and Map iterations run (the paper's Figure 8 variants).
PARALLEL_PROCESSES = "processes"  # forked processes, at most vcpus at once (default)
PARALLEL_THREADS = "threads"  # -Th: threads of the Orchestrator, even for parallel states


@dataclass(frozen=True)
class Options:
    """How an Orchestrator places work; read from plan.json, overridable per run."""

    isolation: str = NONE
    parallel: str = PARALLEL_PROCESSES
    processes_only: bool = False  # -P: every function in its own process too
    vcpus: int = 0  # 0: the container's CPU count
    # Parallel work wider than the vCPUs may spill to this many containers in all (this
    # one included), for the Parallel/Map states the plan places on "containers".
    max_containers: int = 1
    placements: dict[str, str] = field(default_factory=dict)  # plan key -> placement
    # Sections placed on processes that nothing measured: plan key -> a warm process's
    # hand-off per job (ms). They run on threads until timing says (parallel/learned.py).
    learned: dict[str, float] = field(default_factory=dict)
    # isolation mpk: functions whose escapes are kept (reported) instead of failing them.
    kept_escapes: tuple[str, ...] = ()

    def cpu_budget(self) -> int:
        """Parallel workers: ``vcpus``, else the CPUs the cpuset and CPU quota allow."""
        return self.vcpus if self.vcpus > 0 else available_cpus()


# Placements of a Parallel or Map state (plan.json's "placement").
THREADS = "threads"
PROCESSES = "processes"
CONTAINERS = "containers"
