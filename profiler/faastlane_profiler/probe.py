"""What runs on the target: MPK support, the CPU limits it can read, the measured knee.

Locally ``faastlane profile`` calls :func:`profile`; as an action, ``main(params)``
(OpenWhisk) or ``handler(event, context)`` (Lambda) take ``{"max_processes": N,
"target_seconds": S}`` and answer the same JSON (``{"echo": true, "pad": ...}`` answers
at once: the invocation round trips of ``handoff.measure_invoke``);
``python -m faastlane_profiler.probe`` prints it (the Docker target runs that).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from typing import Any

from . import handoff, mpk, scaling
from .runtime_modules import cpus

# Past the CPUs the scheduler offers, more processes cannot help: one more shows the knee.
EXTRA_PROCESSES = 1
MAX_PROCESSES = 32


def cpu_limits() -> dict[str, Any]:
    """What the container says about its CPUs (the measurement may say otherwise)."""
    quota = cpus.cgroup_quota()
    return {"os_cpu_count": os.cpu_count(), "affinity": cpus.affinity_cpus(),
            "cgroup_quota": quota, "available": cpus.available_cpus()}


def profile(max_processes: int | None = None, target_seconds: float = 0.1) -> dict[str, Any]:
    """The whole profile of the machine (or container) this runs on."""
    limits = cpu_limits()
    count = max_processes or min(MAX_PROCESSES, limits["affinity"] + EXTRA_PROCESSES)
    measured = scaling.measure(count, target_seconds)
    throughput = measured.throughput()
    return {
        "measured_at": time.time(),
        "host": {"machine": platform.machine(), "python": sys.version.split()[0],
                 "implementation": sys.implementation.name},
        "mpk": mpk.detect().to_json(),
        "cpus": limits,
        "scaling": {"loops": measured.loops,
                    "seconds": {str(k): round(v, 6) for k, v in measured.seconds.items()},
                    "throughput": {str(k): round(v, 3) for k, v in throughput.items()}},
        # Noise on a busy host can make one more process look useful; the declared limits
        # (affinity, CFS quota) cap what the measurement may claim.
        "measured_knee": scaling.knee(throughput),
        "vcpus": min(scaling.knee(throughput), limits["available"]),
        "effective_cpus": round(max(throughput.values()), 2),
        # What giving work to a forked child costs here (planner input, see costs.py).
        "handoff": handoff.measure_fork(),
    }


def parse_params(params: Any) -> dict[str, Any]:
    params = params if isinstance(params, dict) else {}
    seconds = params.get("target_seconds", 0.1)
    count = params.get("max_processes")
    return {"max_processes": int(count) if count else None,
            "target_seconds": float(seconds) if seconds else 0.1}


def main(params: Any) -> dict[str, Any]:
    """OpenWhisk's entry point (``{"echo": true}``: answer at once, to time invocations)."""
    if isinstance(params, dict) and params.get("echo"):
        return handoff.echo(params)
    return profile(**parse_params(params))


def handler(event: Any, context: Any) -> dict[str, Any]:
    """Lambda's entry point."""
    return main(event)


def run_cli(argv: list[str]) -> int:
    """``python -m faastlane_profiler.probe [max_processes=N] [target_seconds=S]``."""
    print(json.dumps(profile(**parse_params(dict(arg.split("=", 1) for arg in argv)))))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv[1:]))
