"""One batch run of every selected conformance case, shared by the whole session.

moto runs all cases at once inside a single mock (its executions are threads), while
``faastlane run`` subprocesses run in a thread pool beside it; tests then only wait for
their own results. Only the cases that pytest actually selected are run.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from . import faastlane_cli, moto_engine
from .cases import Case, all_cases, materialize
from .outcome import Outcome

HERE = Path(__file__).parent


class ConformanceRuns:
    """Futures of every selected case's moto outcome and Faastlane outcomes."""

    def __init__(self, cases: list[Case], runs: set[tuple[str, str]]) -> None:
        workers = max(4, 2 * (os.cpu_count() or 1))
        self._moto_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="moto")
        self._cli_pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="faastlane")
        self._moto = self._moto_thread.submit(moto_engine.run_cases, cases)
        by_name = {case.name: case for case in cases}
        self._faastlane: dict[tuple[str, str], Future[Outcome]] = {
            (name, isolation): self._cli_pool.submit(
                faastlane_cli.run_case, by_name[name], isolation
            )
            for name, isolation in sorted(runs)
        }

    def moto(self, case_name: str) -> Outcome:
        return self._moto.result()[case_name]

    def faastlane(self, case_name: str, isolation: str) -> Outcome:
        return self._faastlane[(case_name, isolation)].result()

    def close(self) -> None:
        self._cli_pool.shutdown(wait=True, cancel_futures=True)
        self._moto_thread.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="session")
def conformance_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                     ) -> Iterator[ConformanceRuns]:
    selected: set[str] = set()
    runs: set[tuple[str, str]] = set()
    for item in request.session.items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "case_name" in params and item.path.parent == HERE:
            selected.add(params["case_name"])
            if "isolation" in params:
                runs.add((params["case_name"], params["isolation"]))
    # moto logs every failed state with a full stack; failures are reported by the tests.
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    apps = tmp_path_factory.mktemp("conformance-apps")
    cases = [materialize(case, apps) for case in all_cases() if case.name in selected]
    conformance = ConformanceRuns(cases, runs)
    yield conformance
    conformance.close()
