"""``faastlane bench APP`` and ``faastlane cost APP``: a user's own workflow, measured.

The same harness as the examples' benchmark (:func:`harness.run_workload`), on one
workload: the user's app with the user's input. Systems, side by side in one run and
interleaved: Faastlane with no isolation (-NS), with process isolation, with the app's
own isolation if it is another, with MPK where this interpreter has ``_faastlane`` and
the CPU has protection keys; the OpenWhisk-style and Step Functions-style baselines.
Nothing here needs the checkout: the baselines' S3 (claim checks of large states) is a
``moto_server`` started for the run on 127.0.0.1, with dummy credentials, so a function
that calls AWS reaches that local endpoint, never an account.
"""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from faastlane import progress
from faastlane.app_source import load
from faastlane.errors import FaastlaneError
from faastlane.runtime.cpus import affinity_cpus

from . import cost, machine, report, stats
from .catalogue import BASELINE_OPENWHISK, BASELINE_STEP_FUNCTIONS, SystemSpec, Workload, mpk_system
from .catalogue import systems_for as catalogue_systems
from .claimcheck import S3Store
from .harness import Config, run_workload

DEFAULT_ROUNDS = 30
HOST = "127.0.0.1"
# Figures are unreliable when the machine was busier than its CPUs, or samples spread
# widely (p99 over this many medians), or the two halves of the rounds disagree.
SPREAD_LIMIT = 3.0
HALVES_LIMIT_PCT = 20.0


def app_config(rounds: int | None, quick: bool) -> Config:
    """Latency rounds only (no throughput phase): a user's run should take a minute."""
    if quick:
        return Config.quick_run()
    return Config(rounds=rounds or DEFAULT_ROUNDS, warmup=2, slow_rounds=rounds or 10,
                  throughput_seconds=-1.0, pool_size=1)


def systems_for(workload: Workload) -> tuple[list[SystemSpec], list[str]]:
    """The systems of a user's run, and notes on what was left out or is unenforced."""
    _, note = mpk_system()
    return catalogue_systems(workload, variants=False), [note] if note else []


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def local_s3(scratch: Path) -> Iterator[None]:
    """moto_server on 127.0.0.1 as this process's (and its workers') S3 endpoint, and
    every service's where the environment names no local endpoint of its own, with
    dummy credentials and none of the host's other AWS settings; stopped and restored
    after."""
    saved = dict(os.environ)
    port = _free_port()
    log = scratch / "moto_server.log"
    with open(log, "wb") as out:
        server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", HOST,
                                   "-p", str(port)], stdin=subprocess.DEVNULL, stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = f"http://{HOST}:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/moto-api/", timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise FaastlaneError("the local S3 endpoint (moto_server) did not start: "
                                         + log.read_text(errors="replace")[-300:]) from None
                time.sleep(0.1)
        # The app's own local endpoints (examples/local-aws/start's, say) stay its; the
        # claim-check store is S3 here; any other service goes here too where none is
        # set. Dummy credentials always: nothing reaches a real account.
        endpoints = {k: v for k, v in os.environ.items() if k.startswith("AWS_ENDPOINT_URL")}
        for key in [k for k in os.environ if k.startswith("AWS_")]:
            del os.environ[key]
        os.environ.update(endpoints or {"AWS_ENDPOINT_URL": url})
        os.environ.update({"AWS_ENDPOINT_URL_S3": url, "AWS_ACCESS_KEY_ID": "testing",
                           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                           "AWS_CONFIG_FILE": os.devnull,
                           "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                           "AWS_EC2_METADATA_DISABLED": "true"})
        S3Store().create_bucket()
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


class _Bar:
    """The harness's progress sink (``say``), drawn as a bar of rounds."""

    def __init__(self, bar: progress.Steps) -> None:
        self.bar = bar

    def say(self, message: str) -> None:
        self.bar.note(message)

    def round_done(self, index: int, rounds: int) -> None:
        self.bar.advance(f"round {index + 1}/{rounds}")


def measure(app: str, input_text: str, config: Config) -> dict[str, Any]:
    """The results document of one run of the user's app (results.json's shape)."""
    # The CLI's one loader (what APP may name); a bad app is one line, before any worker.
    composition = load(app, {})
    name = composition.app.name
    began = datetime.now(UTC)
    document: dict[str, Any] = {"machine": machine.describe(), "config": asdict(config),
                                "started": began.isoformat(timespec="seconds"),
                                "workloads": [], "notes": []}
    with tempfile.TemporaryDirectory(prefix="faastlane-bench-app-") as folder:
        scratch = Path(folder)
        input_file = scratch / "input.json"
        input_file.write_text(input_text, encoding="utf-8")
        workload = Workload(name, os.path.abspath(app), str(input_file), "apps")
        systems, notes = systems_for(workload)
        document["notes"] += notes
        with local_s3(scratch), open(scratch / "workers.log", "w", encoding="utf-8") as log, \
                progress.steps(f"bench {name}: {len(systems)} systems x {config.rounds} rounds",
                               total=config.rounds) as bar:
            sink = _Bar(bar)
            try:
                document["workloads"].append(run_workload(
                    workload, systems, config, config.rounds, sink, log, throughput=False,
                    on_round=sink.round_done))
            except Exception as error:  # a worker that failed: its log says why
                log.flush()
                tail = (scratch / "workers.log").read_text(errors="replace")[-1500:]
                raise FaastlaneError(f"the benchmark of {app} failed: {error}\n"
                                     f"last lines of the workers' log:\n{tail}") from None
    document["duration_s"] = (datetime.now(UTC) - began).total_seconds()
    document["machine"]["load_average_at_end"] = list(os.getloadavg())
    report.enrich(document)
    document["notes"] += reliability_notes(document)
    return document


def reliability_notes(document: dict[str, Any]) -> list[str]:
    """Why the figures of this run may not be trusted (empty: no reason seen)."""
    notes = []
    cpus = document["machine"].get("usable_cpus") or affinity_cpus()
    loads = [document["machine"]["load_average_at_start"][0],
             document["machine"].get("load_average_at_end", [0])[0]]
    if max(loads) > cpus:
        notes.append(f"machine busy: 1-min load average {max(loads):.1f} over {cpus} usable "
                     "CPUs; ratios are more trustworthy than times, and both are rough")
    for workload in document["workloads"]:
        for name, system in workload["systems"].items():
            e2e = system["end_to_end_ms"]
            if e2e["n"] >= 10 and e2e["median"] and e2e["p99"] / e2e["median"] > SPREAD_LIMIT:
                notes.append(f"{name}: high variance (p99 {e2e['p99']:.1f} ms is "
                             f"{e2e['p99'] / e2e['median']:.1f}x the median)")
            halves = system.get("halves_end_to_end_ms", [])
            if e2e["n"] >= 10 and len(halves) == 2 and min(halves) > 0 and \
                    abs(halves[0] - halves[1]) / min(halves) * 100 > HALVES_LIMIT_PCT:
                notes.append(f"{name}: the first and second half of the rounds differ by "
                             f"{abs(halves[0] - halves[1]) / min(halves) * 100:.0f}%")
    return notes


def _ms(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.2f}"


def _x(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.2f}x"


def summary_table(document: dict[str, Any]) -> str:
    """The terminal summary: per system, median/p99 end to end, interaction, and speed
    against each baseline measured in the same run (baseline median / this median)."""
    (workload,) = document["workloads"]
    systems = workload["systems"]
    header = ["system", "median ms", "p99 ms", "interaction ms", "vs OpenWhisk-style",
              "vs StepFunctions-style", "output"]
    rows = []
    for name, system in systems.items():
        e2e = system["end_to_end_ms"]
        ratios = [stats.ratio(systems[b]["end_to_end_ms"]["median"], e2e["median"])
                  if b in systems else math.nan
                  for b in (BASELINE_OPENWHISK, BASELINE_STEP_FUNCTIONS)]
        checks = system["checks"]
        agrees = "same" if checks.get("matches_reference") else (
            "known divergence" if checks.get("known_divergence") else "DIFFERS")
        failed = f", {system['failed_runs']} failed" if system["failed_runs"] else ""
        rows.append([name, _ms(e2e["median"]), _ms(e2e["p99"]),
                     _ms(system["interaction_ms"]["median"]), _x(ratios[0]), _x(ratios[1]),
                     agrees + failed])
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[Any]) -> str:  # every row has a cell per column
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True))

    out = [f"{workload['name']}: {workload['rounds']} rounds per system, interleaved "
           "(ratios: the baseline's median / the system's; above 1x is faster)",
           line(header), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    out.append(f"machine: {report.machine_line(document['machine'])}")
    out += [f"note: {n}" for n in document.get("notes", [])]
    return "\n".join(out) + "\n"


def cost_table(document: dict[str, Any], memory_mb: int, faastlane_memory_mb: int) -> str:
    """Dollars per million executions of the measured workflow (cost.py's method)."""
    prices = cost.load_prices()
    rows = cost.estimate_all(document, prices, memory_mb, faastlane_memory_mb)
    if not rows:
        return "cost: not priced (no baseline timed the functions)\n"
    return cost.markdown(rows, prices, memory_mb, faastlane_memory_mb)


def write_results(document: dict[str, Any], folder: Path) -> Path:
    """results.json (what ``faastlane cost --results`` reads) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "results.json"
    path.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    return path
