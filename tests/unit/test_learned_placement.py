"""A Parallel/Map that compose could not weigh (no ``--profile-from``) is placed by what
the Orchestrator measures: on its threads first; on its warm workers next only when the
jobs held one core and each computed longer than a hand-off; from then on where a job
cost less. The rule is checked with given measurements (no timing in tests), and the
Orchestrator is checked to follow it: whose process a job ran in."""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from faastlane.runtime.asl.model import machine_from_asl
from faastlane.runtime.engine.functions import FunctionSpec
from faastlane.runtime.options import PROCESSES, THREADS, Options
from faastlane.runtime.orchestrator import Orchestrator
from faastlane.runtime.parallel import learned

KEY = "M"


@pytest.fixture(autouse=True)
def fresh_container() -> Iterator[None]:
    learned.forget()
    yield
    learned.forget()


def test_a_section_never_timed_runs_on_threads() -> None:
    assert learned.choose(KEY) == THREADS


@pytest.mark.parametrize(("jobs", "workers", "wall_ms", "cpu_ms"), [
    (50, 2, 52, 50),  # 50 jobs of 1 ms, one core busy: a hand-off (1.5 ms) costs more
    (4, 2, 100, 8),  # 100 ms each but 2 ms of CPU: waiting, not computing (threads overlap)
    (4, 1, 400, 400),  # long and CPU-bound, but one vCPU: nothing to spread them on
], ids=["short", "waiting", "one-vcpu"])
def test_jobs_processes_cannot_speed_up_stay_on_threads(jobs: int, workers: int,
                                                        wall_ms: float, cpu_ms: float) -> None:
    learned.learn(KEY, THREADS, jobs=jobs, workers=workers, handoff_ms=1.5, wall_ms=wall_ms,
                  cpu_ms=cpu_ms)
    assert learned.choose(KEY) == THREADS


def test_long_cpu_bound_jobs_try_processes_and_keep_the_faster() -> None:
    learned.learn(KEY, THREADS, jobs=4, workers=2, handoff_ms=1.5, wall_ms=400, cpu_ms=400)
    assert learned.choose(KEY) == PROCESSES
    learned.learn(KEY, PROCESSES, jobs=4, workers=2, handoff_ms=1.5, wall_ms=210, cpu_ms=1)
    assert learned.choose(KEY) == PROCESSES  # 52 ms a job against 100
    learned.learn(KEY, PROCESSES, jobs=4, workers=2, handoff_ms=1.5, wall_ms=1400, cpu_ms=1)
    assert learned.choose(KEY) == THREADS  # processes turned out slower: (52 + 350) / 2


def test_sections_are_learned_apart() -> None:
    learned.learn(KEY, THREADS, jobs=4, workers=2, handoff_ms=1.5, wall_ms=400, cpu_ms=400)
    assert learned.choose("other") == THREADS


WHOAMI = "import os\n\ndef handler(event, context):\n    return os.getpid()\n"
MAP = {"StartAt": "M", "States": {"M": {
    "Type": "Map", "End": True,
    "ItemProcessor": {"StartAt": "T", "States": {"T": {
        "Type": "Task", "Resource": "whoami", "End": True}}}}}}


@pytest.fixture
def orchestrator(tmp_path: Path) -> Iterator[Orchestrator]:
    (tmp_path / "functions").mkdir()
    (tmp_path / "functions" / "whoami.py").write_text(textwrap.dedent(WHOAMI))
    (tmp_path / "plan.json").write_text(json.dumps({"functions": {"whoami": {}}}))
    made = Orchestrator("wf", machine_from_asl(MAP),
                        {"whoami": FunctionSpec("whoami", "functions/whoami.py", "handler",
                                                "lambda")},
                        str(tmp_path), Options(isolation="none", vcpus=2,
                                               placements={KEY: PROCESSES},
                                               learned={KEY: 1.5}))
    yield made
    made.close()


def test_the_orchestrator_runs_a_learned_section_where_the_measurements_say(
        orchestrator: Orchestrator) -> None:
    first = orchestrator.execute([1, 2, 3, 4])
    assert first.output == [os.getpid()] * 4  # on its threads
    assert orchestrator.pool.wanted(orchestrator.options)  # the workers are warm anyway
    # What a run of four long CPU-bound jobs would have measured here.
    learned.learn(KEY, THREADS, jobs=4, workers=2, handoff_ms=1.5, wall_ms=400, cpu_ms=400)
    second = orchestrator.execute([1, 2, 3, 4])
    assert second.status == "SUCCEEDED", second.cause
    assert os.getpid() not in second.output  # on the warm workers
    assert len(set(second.output)) <= 2
