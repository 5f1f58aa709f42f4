"""How many CPUs this container may really use: affinity and cgroup CPU quotas.

``os.cpu_count()`` counts the host's CPUs. A container is limited in two other ways: a
cpuset (``docker --cpuset-cpus``, visible through ``sched_getaffinity``) and a CFS
bandwidth quota (``docker --cpus``, OpenWhisk's and Lambda's CPU shares of memory), which
lets all host CPUs run the container's threads but only for ``quota/period`` CPUs' worth
of time. Forking more workers than that only queues them. Both cgroup versions are read:

- v2: ``cpu.max`` holds ``"$MAX $PERIOD"`` (``max`` for no limit);
- v1: ``cpu.cfs_quota_us`` (``-1`` for no limit) and ``cpu.cfs_period_us``.

The cgroup of this process comes from ``/proc/self/cgroup``; inside a container its path
is usually ``/`` (a cgroup namespace) and the files are at the mount point itself.
"""

from __future__ import annotations

import functools
import math
import os

CGROUP_ROOT = "/sys/fs/cgroup"


def affinity_cpus() -> int:
    """CPUs this process may be scheduled on (its cpuset)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def parse_cpu_max(text: str) -> float | None:
    """cgroup v2 ``cpu.max``: the CPUs' worth of time allowed, or None if unlimited."""
    fields = text.split()
    if not fields or fields[0] == "max":
        return None
    period = float(fields[1]) if len(fields) > 1 else 100000.0
    return float(fields[0]) / period if period > 0 else None


def parse_cfs(quota_text: str, period_text: str) -> float | None:
    """cgroup v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``, or None if unlimited."""
    quota, period = int(quota_text.strip()), int(period_text.strip())
    if quota <= 0 or period <= 0:
        return None
    return quota / period


def parse_proc_cgroup(text: str) -> dict[str, str]:
    """``/proc/self/cgroup``: controller -> path (``""`` is the v2 unified hierarchy)."""
    paths: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read()
    except OSError:
        return None


def _candidates(mount: str, path: str) -> list[str]:
    """The cgroup's own folder, then the mount point (a namespaced container's view)."""
    own = os.path.join(mount, path.lstrip("/")) if path not in ("", "/") else mount
    return [own, mount] if own != mount else [mount]


def cgroup_quota(root: str = CGROUP_ROOT, proc_cgroup: str | None = None) -> float | None:
    """CPUs' worth of time the CFS quota of this process's cgroup allows; None: no quota."""
    paths = parse_proc_cgroup(proc_cgroup if proc_cgroup is not None
                              else _read("/proc/self/cgroup") or "")
    if "" in paths:
        for folder in _candidates(root, paths[""]):
            text = _read(os.path.join(folder, "cpu.max"))
            if text is not None:
                return parse_cpu_max(text)
    v1 = paths.get("cpu", paths.get("cpuacct", "/"))
    for mount in (os.path.join(root, "cpu"), os.path.join(root, "cpu,cpuacct")):
        for folder in _candidates(mount, v1):
            quota = _read(os.path.join(folder, "cpu.cfs_quota_us"))
            period = _read(os.path.join(folder, "cpu.cfs_period_us"))
            if quota is not None and period is not None:
                return parse_cfs(quota, period)
    return None


@functools.cache  # a container's CPUs are fixed for its life: read its files once
def available_cpus() -> int:
    """Parallel workers worth running here: the cpuset, capped by the CFS quota.

    A fractional quota rounds up (``--cpus 1.5`` gives 2 workers that share 1.5 CPUs'
    time): the half CPU is still worth having, and the profiler measures the real curve.
    """
    cpus = affinity_cpus()
    quota = cgroup_quota()
    if quota is not None:
        cpus = min(cpus, max(1, math.ceil(quota)))
    return max(1, cpus)
