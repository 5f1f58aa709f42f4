"""The benchmark run: every workload on every system, interleaved, then summarised.

For each workload, every system gets its own worker process tree (warm: functions
imported, containers initialised). Then:

1. warm-up runs, whose outputs are checked against the app's expected output and
   against Faastlane-NS's (every baseline must compute the same workflow output);
2. latency rounds: one execution per system per round, systems taking turns (A, B, C,
   A, B, C, ... with the order rotating every round), each traced for the breakdown;
   the process trees' page faults are read around the rounds;
3. throughput: ``clients`` concurrent clients per system (Faastlane: one container
   each; the baselines: their shared controller and containers), requests per minute.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TextIO

from faastlane.runtime.cpus import affinity_cpus

from . import machine, procstats, stats
from .catalogue import (
    BASELINE_OPENWHISK,
    CHAIN_PAYLOADS,
    FAASTLANE_NS,
    SystemSpec,
    Workload,
    comparable,
    contains,
    example_workloads,
    finra_scalability,
    handoff_workloads,
    systems_for,
)
from .local_aws import local_aws
from .systems.base import RunResult
from .timeline import breakdown, group_handoffs, handoffs
from .worker import WorkerClient


@dataclass(frozen=True)
class Config:
    rounds: int = 100  # latency samples per system and app (the paper's >= 100)
    scalability_rounds: int = 10
    handoff_rounds: int = 100
    warmup: int = 3
    slow_rounds: int = 20  # for a system whose warm-up took more than slow_seconds
    slow_seconds: float = 1.0
    clients: int = 0  # 0: the usable CPUs
    throughput_seconds: float = 6.0
    pool_size: int = 0  # containers per function in the baselines; 0: the usable CPUs
    quick: bool = False

    @classmethod
    def quick_run(cls) -> Config:
        # The output check is the only warm-up: a smoke run measures nothing.
        return cls(rounds=2, scalability_rounds=0, handoff_rounds=2, warmup=0,
                   slow_rounds=2, throughput_seconds=-1.0, pool_size=1, quick=True)


class ProgressSink(Protocol):
    """Where a run says how it goes: :class:`Progress`, or own_app's bar."""

    def say(self, message: str) -> None: ...


class Progress:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.began = time.monotonic()

    def say(self, message: str) -> None:
        elapsed = time.monotonic() - self.began
        self.stream.write(f"[bench {elapsed:7.1f}s] {message}\n")
        self.stream.flush()


def load_json(path: str | None) -> Any:
    if path is None:
        return None
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


class SystemRun:
    """One system's worker(s) and samples for one workload."""

    def __init__(self, spec: SystemSpec, workload: Workload, config: Config,
                 log: TextIO) -> None:
        self.spec = spec
        self.worker_spec = {"system": spec.kind, "app": workload.app,
                            "inputs": {"main": workload.input_file},
                            "planning": spec.planning,
                            "pool_size": config.pool_size or affinity_cpus()}
        self.log = log
        self.worker = WorkerClient(self.worker_spec, log)
        self.samples: list[dict[str, Any]] = []
        self.edges: list[tuple[str, float]] = []
        self.function_ms: dict[str, list[float]] = {}
        self.checks: dict[str, Any] = {}
        self.tree: dict[str, Any] = {}
        self.throughput: dict[str, Any] = {}

    def sample(self, round_index: int) -> None:
        result = self.worker.run("main")
        parts = breakdown(result.start, result.end, result.spans, result.external)
        self.samples.append({"round": round_index, "status": result.status,
                             "states": result.states, **asdict(parts)})
        self.edges.extend(handoffs(result.start, result.spans))
        for span in result.spans:
            self.function_ms.setdefault(span.function, []).append(
                (span.end - span.start) * 1000)

    def close(self) -> None:
        self.worker.close()


def _check_outputs(runs: list[SystemRun], workload: Workload, together: bool) -> None:
    """Every system's output against the expected one and Faastlane-NS's; ``together``
    runs the systems at once (a smoke run: nothing is timed here)."""
    expected = load_json(workload.expected_file)
    app = Path(workload.app).name
    reference: RunResult | None = None
    with ThreadPoolExecutor(max_workers=len(runs) if together else 1) as checker:
        results = list(checker.map(lambda r: r.worker.run("main", output=True), runs))
    for run, result in zip(runs, results, strict=True):
        result.output = comparable(app, result.output)
        if run.spec.name == FAASTLANE_NS:
            reference = result
        run.checks = {"status": result.status, "output": result.output,
                      "matches_expected": None if expected is None
                      else contains(result.output, expected)}
    for run in runs:
        run.checks["matches_reference"] = (reference is not None
                                           and run.checks["status"] == reference.status
                                           and run.checks["output"] == reference.output)
        output = run.checks.pop("output")
        if not run.checks["matches_reference"]:
            run.checks["output"] = output  # kept in the results, to see the difference


def _throughput(run: SystemRun, config: Config) -> dict[str, Any]:
    """Requests per minute with ``clients`` concurrent clients, warm: each client sends
    requests back to back until ``throughput_seconds`` have passed (at least one)."""
    clients = config.clients or affinity_cpus()
    workers = [run.worker]
    if not run.spec.is_baseline:
        # Faastlane: one container per concurrent request, as the platform would scale it.
        workers += [WorkerClient(run.worker_spec, run.log) for _ in range(clients - 1)]
    try:
        def client(index: int) -> tuple[int, int]:
            worker = workers[index % len(workers)]
            sent = succeeded = 0
            while sent == 0 or time.perf_counter() < stop:
                result = worker.run("main", traced=False)
                sent += 1
                succeeded += result.status == "SUCCEEDED"
            return sent, succeeded

        began = time.perf_counter()
        stop = began + config.throughput_seconds
        with ThreadPoolExecutor(max_workers=clients) as pool:
            counts = list(pool.map(client, range(clients)))
        seconds = time.perf_counter() - began
    finally:
        for extra in workers[1:]:
            extra.close()
    succeeded = sum(c[1] for c in counts)
    return {"clients": clients, "containers": len(workers) if not run.spec.is_baseline
            else None, "requests": sum(c[0] for c in counts), "succeeded": succeeded,
            "seconds": seconds, "rpm": succeeded / seconds * 60 if seconds else math.nan}


def _summarise(run: SystemRun) -> dict[str, Any]:
    samples = run.samples

    def column(key: str) -> list[float]:
        return [s[key] for s in samples]

    half = len(samples) // 2
    edges = {name: {"median_ms": stats.median(gaps), "p99_ms": stats.percentile(gaps, 99),
                    "n": len(gaps)} for name, gaps in group_handoffs(run.edges).items()}
    executions = max(1, len(samples))
    return {
        "kind": run.spec.kind, "planning": run.spec.planning,
        "checks": run.checks,
        "failed_runs": sum(1 for s in samples if s["status"] != "SUCCEEDED"),
        "end_to_end_ms": stats.summary(column("end_to_end_ms")),
        "compute_ms": stats.summary(column("compute_ms")),
        "external_ms": stats.summary(column("external_ms")),
        "interaction_ms": stats.summary(column("interaction_ms")),
        "halves_end_to_end_ms": [stats.median(column("end_to_end_ms")[:half]),
                                 stats.median(column("end_to_end_ms")[half:])],
        "halves_interaction_ms": [stats.median(column("interaction_ms")[:half]),
                                  stats.median(column("interaction_ms")[half:])],
        "states_per_execution": stats.median(column("states")),
        "handoffs": edges,
        "functions": {name: {"median_ms": stats.median(ms), "calls_per_execution":
                             len(ms) / executions} for name, ms in run.function_ms.items()},
        **run.tree,
        "throughput": run.throughput,
    }


def run_workload(workload: Workload, systems: list[SystemSpec], config: Config,
                 rounds: int, progress: ProgressSink, log: TextIO,
                 throughput: bool, started: list[SystemRun] | None = None,
                 on_round: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """One workload on ``systems`` (``started``: their workers, if already running;
    ``on_round(index, rounds)``: called after each round, for a progress bar)."""
    progress.say(f"{workload.name}: starting {len(systems)} systems")
    runs: list[SystemRun] = list(started or [])
    try:
        if started is None:
            runs += _start_all(systems, workload, config, log)
        caps = {}
        for run in runs:
            began = time.perf_counter()
            for _ in range(config.warmup):
                run.worker.run("main", traced=False)
            slow = (time.perf_counter() - began) / max(1, config.warmup) > config.slow_seconds
            # A slow system gets fewer rounds (the first ones, still interleaved).
            caps[run.spec.name] = min(rounds, config.slow_rounds) if slow else rounds
        _check_outputs(runs, workload, together=config.quick)
        before = {run.spec.name: procstats.tree_stats(run.worker.pid) for run in runs}
        for index in range(rounds):
            shift = index % len(runs)
            turn = [run for run in runs[shift:] + runs[:shift]
                    if index < caps[run.spec.name]]
            if config.quick:  # a smoke run: the systems take their turns at once
                with ThreadPoolExecutor(max_workers=max(1, len(turn))) as sampler:
                    list(sampler.map(SystemRun.sample, turn, [index] * len(turn)))
            else:
                for run in turn:
                    run.sample(index)
            if on_round is not None:
                on_round(index, rounds)
            elif (index + 1) % max(1, rounds // 5) == 0 or index + 1 == rounds:
                progress.say(f"{workload.name}: round {index + 1}/{rounds}")
        for run in runs:
            after = procstats.tree_stats(run.worker.pid)
            start = before[run.spec.name]
            done = max(1, caps[run.spec.name])
            run.tree = {"page_faults_per_instance":
                        (after.minor_faults - start.minor_faults) / done,
                        "major_faults_per_instance":
                        (after.major_faults - start.major_faults) / done,
                        "peak_rss_mb": after.peak_rss_kb / 1024,
                        "processes": after.processes}
        if throughput and config.throughput_seconds >= 0:
            order = runs if len(runs) % 2 else list(reversed(runs))
            for run in order:
                run.throughput = _throughput(run, config)
                progress.say(f"{workload.name}: {run.spec.name} throughput "
                             f"{run.throughput['rpm']:.0f} rpm")
        return {"name": workload.name, "group": workload.group, "size": workload.size,
                "app": Path(workload.app).name, "rounds": rounds,
                "systems": {run.spec.name: _summarise(run) for run in runs}}
    finally:
        _close_all(runs)


def _start_all(systems: list[SystemSpec], workload: Workload, config: Config,
               log: TextIO) -> list[SystemRun]:
    """Start every system's worker at once: start-up (imports, model training, action
    servers) is not measured and mostly waits, so it need not be serial."""
    futures: list[Future[SystemRun]] = []
    try:
        with ThreadPoolExecutor(max_workers=max(1, len(systems))) as starter:
            for spec in systems:
                futures.append(starter.submit(SystemRun, spec, workload, config, log))
    except BaseException:  # interrupted while they start: stop those that did
        wait(futures)
        _close_all([f.result() for f in futures if f.exception() is None])
        raise
    started = [f.result() for f in futures if f.exception() is None]
    failure = next((f.exception() for f in futures if f.exception() is not None), None)
    if failure is not None:
        _close_all(started)
        raise failure
    return started


def _close_all(runs: list[SystemRun]) -> None:
    with ThreadPoolExecutor(max_workers=max(1, len(runs))) as closer:
        list(closer.map(SystemRun.close, runs))


def plan_workloads(config: Config, scratch: Path, only: list[str] | None
                   ) -> list[tuple[Workload, list[SystemSpec], int, bool]]:
    """Every (workload, systems, rounds, with throughput) of this run."""
    planned = []
    for workload in example_workloads(scratch):
        planned.append((workload, systems_for(workload), config.rounds, True))
    rules = () if config.quick else (100, 150, 200)
    for workload in finra_scalability(scratch, rules):
        # Figure 9: Faastlane (threads for the rules, or processes) against OpenWhisk.
        chosen = [s for s in systems_for(workload, variants=True)
                  if s.name in (FAASTLANE_NS, "Faastlane-Th", BASELINE_OPENWHISK)]
        planned.append((workload, chosen, config.scalability_rounds, False))
    payloads = {"1KB": 1_000} if config.quick else CHAIN_PAYLOADS
    for workload in handoff_workloads(scratch, payloads):
        chosen = [s for s in systems_for(workload) if s.name != "Faastlane-Th"]  # no fan-out
        planned.append((workload, chosen, config.handoff_rounds, False))
    if only:
        planned = [p for p in planned if any(p[0].name.startswith(o) for o in only)]
    return planned


def run(config: Config, only: list[str] | None = None,
        progress_stream: TextIO = sys.stderr,
        log_path: str | None = None) -> dict[str, Any]:
    """Run the whole benchmark; the results document (see report.py)."""
    progress = Progress(progress_stream)
    began = datetime.now(UTC)
    document: dict[str, Any] = {"machine": machine.describe(), "config": asdict(config),
                                "started": began.isoformat(timespec="seconds"),
                                "workloads": []}
    with tempfile.TemporaryDirectory(prefix="faastlane-bench-") as scratch, \
            open(log_path or Path(scratch) / "workers.log", "w", encoding="utf-8") as log, \
            local_aws():
        planned = plan_workloads(config, Path(scratch), only)
        # A smoke run starts the next workload's systems while this one runs: nothing
        # is measured, and start-up is most of a smoke run's time.
        with ThreadPoolExecutor(max_workers=1) as ahead:
            upcoming: Future[list[SystemRun]] | None = None
            try:
                for index, (workload, systems, rounds, throughput) in enumerate(planned):
                    started = None if upcoming is None else upcoming.result()
                    upcoming = None
                    if config.quick and index + 1 < len(planned):
                        following = planned[index + 1]
                        upcoming = ahead.submit(_start_all, following[1], following[0],
                                                config, log)
                    document["workloads"].append(run_workload(
                        workload, systems, config, rounds, progress, log, throughput,
                        started))
            finally:
                if upcoming is not None and upcoming.exception() is None:
                    _close_all(upcoming.result())
    document["duration_s"] = (datetime.now(UTC) - began).total_seconds()
    document["machine"]["load_average_at_end"] = list(os.getloadavg())
    progress.say(f"done in {document['duration_s']:.0f} s")
    return document


