"""Measured hand-off costs: the profiler's figures, the planner's use of them in
plan.json, and the Orchestrator choosing how many containers pay from them and from the
time a round of jobs took in its container."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from deploy.deploy_apps import FINRA
from deploy.deploy_servers import ActionServer
from deploy.openwhisk_endpoint import OpenWhiskEndpoint, clean_env
from faastlane.compose import costs
from faastlane.runtime.parallel.policy import choose_containers, plan_handoff
from faastlane_profiler import handoff
from integration.apps import chain, faastlane, task, write_app

from .conftest import endpoint
from .spill_cli import AUTH, group_calls, invoke

NOW = 1_795_000_000.0


def profile(target: str, when: float, **figures: float) -> tuple[str, dict[str, Any]]:
    return target, {"measured_at": when, "vcpus": 2, "handoff": figures}


def test_costs_default_when_nothing_was_profiled() -> None:
    loaded = costs.load({})
    assert (loaded.fork_ms, loaded.invoke_ms) == (costs.DEFAULTS["fork_ms"],
                                                  costs.DEFAULTS["invoke_ms"])
    assert set(loaded.sources.values()) == {"default"}


def test_costs_come_from_the_newest_profile_that_measured_each_figure() -> None:
    loaded = costs.load(dict([
        profile("local@default", NOW, fork_ms=2.5, pipe_ms_per_mb=8.0,
                invoke_ms=1.0),  # a local profile never sets invocation costs
        profile("openwhisk/http://x/_/faastlane-profiler@default", NOW - 60, fork_ms=9.0,
                pipe_ms_per_mb=9.0, invoke_ms=12.0, transfer_ms_per_mb=30.0),
        profile("lambda/us-east-1/p@1024", NOW - 3600, invoke_ms=80.0),
    ]))
    assert (loaded.fork_ms, loaded.pipe_ms_per_mb) == (2.5, 8.0)  # the newest
    assert (loaded.invoke_ms, loaded.transfer_ms_per_mb) == (12.0, 30.0)
    assert loaded.sources["fork_ms"].startswith("measured: profile local@default")
    assert loaded.sources["invoke_ms"].startswith("measured: profile openwhisk/")
    only_lambda = costs.load(dict([profile("lambda/us-east-1/p@1024", NOW, invoke_ms=80.0),
                                   profile("openwhisk/x@default", NOW + 1, invoke_ms=5.0)]),
                             platform="lambda")
    assert only_lambda.invoke_ms == 80.0


def test_fork_costs_are_measured_here() -> None:
    measured = handoff.measure_fork(rounds=3)
    assert measured["fork_ms"] > 0 and measured["pipe_ms_per_mb"] >= 0


@pytest.mark.parametrize("count, round_ms, invoke_ms, per_mb, expected", [
    (16, 500.0, 40.0, 20.0, 4),   # long rounds: every container pays
    (16, 5.0, 40.0, 20.0, 1),     # a round is cheaper than an invocation: stay here
    (6, 100.0, 40.0, 20.0, 3),    # 3 containers run 6 jobs in one round; a 4th adds nothing
    (16, 500.0, 40.0, 1e6, 1),    # the payload costs more than the rounds saved
])
def test_containers_are_the_cheapest_estimate(count: int, round_ms: float, invoke_ms: float,
                                              per_mb: float, expected: int) -> None:
    chosen, estimates = choose_containers(
        count, 2, 4, round_ms, {"invoke_ms": invoke_ms, "transfer_ms_per_mb": per_mb},
        lambda jobs: 1000 * jobs)
    assert chosen == expected
    assert estimates[1] == -(-count // 2) * round_ms
    assert min(estimates.values()) == estimates[chosen]


def fake_profiles(tmp_path: Path, **figures: float) -> dict[str, str]:
    """An environment whose profile cache holds these measured hand-off figures."""
    cache = tmp_path / "cache"
    cache.mkdir(exist_ok=True)
    (cache / "profiles.json").write_text(json.dumps(dict([
        profile("openwhisk/test@default", NOW, fork_ms=1.0, pipe_ms_per_mb=5.0, **figures)])))
    return clean_env(tmp_path, FAASTLANE_CACHE=str(cache))


def test_plan_shows_the_measured_costs_and_where_they_came_from(tmp_path: Path) -> None:
    env = fake_profiles(tmp_path, invoke_ms=12.5, transfer_ms_per_mb=33.0)
    out = tmp_path / "finra"
    done = faastlane("compose", str(FINRA), "-o", str(out), "--vcpus", "1",
                     "--max-containers", "4", env=env)
    assert done.code == 0, done.stderr
    state = json.loads((out / "plan.json").read_text())["states"]["RunAuditRules"]
    assert state["handoff"]["invoke_ms"] == 12.5
    assert state["handoff"]["transfer_ms_per_mb"] == 33.0
    assert state["handoff"]["fork_ms"] == 1.0
    assert state["handoff"]["sources"]["invoke_ms"].startswith(
        "measured: profile openwhisk/test@default")
    assert "12.5 ms + 33 ms per MB" in state["reason"]
    assert plan_handoff(str(out / "plan.json"))["RunAuditRules"]["invoke_ms"] == 12.5


WORK = """
import time

def handler(event, context):
    time.sleep(event.get("sleep", 0))
    return event["n"]
"""


def deploy_map(controller: OpenWhiskEndpoint, tmp_path: Path, env: dict[str, str]) -> None:
    workflow = chain(("Each", {"Type": "Map", "ItemsPath": "$.items",
                               "ItemSelector": {"n.$": "$$.Map.Item.Value",
                                                "sleep.$": "$.sleep"},
                               "ItemProcessor": chain(("Work", task("work"))), "End": True}))
    app = write_app(tmp_path / "map", workflow, {"work": WORK})
    done = faastlane("deploy", str(app), "--target", "openwhisk", "--apihost", controller.url,
                     "--auth", AUTH, "--name", "map", "--vcpus", "1", "--max-containers",
                     "2", env=env)
    assert done.code == 0, done.stderr


@dataclass
class SlowGroups(ActionServer):
    """A container whose activations of a spilled group start a second late (a busy
    platform): what a group costs is then certainly more than these jobs' rounds."""

    def run(self, value: Any, **fields: Any) -> tuple[int, Any]:
        if isinstance(value, dict) and "__faastlane_group" in value:
            time.sleep(1.0)
        return super().run(value, **fields)


@pytest.fixture
def slow_platform(server_processes: Callable[[], ActionServer]
                  ) -> Iterator[OpenWhiskEndpoint]:
    def container() -> ActionServer:
        server = server_processes()
        return SlowGroups(server.url, server.stdout, server.stderr)

    yield from endpoint(container)


def test_a_container_that_does_not_pay_is_not_used_once_its_cost_was_seen(
        slow_platform: OpenWhiskEndpoint, tmp_path: Path) -> None:
    # The profile says invocations are free; a warm copy's group shows they are not.
    deploy_map(slow_platform, tmp_path, fake_profiles(tmp_path, invoke_ms=0.001))
    payload = {"items": list(range(2)), "sleep": 0}
    # The first execution stays here to time a round; the second spills, by the profile,
    # to a cold copy (whose time is not a hand-off's); the third to the warm copy, slow.
    for calls in (0, 1, 2, 2, 2):
        code, output = invoke(slow_platform, "map", tmp_path, payload)
        assert code == 0 and output["output"] == list(range(2)), output
        assert len(group_calls(slow_platform)) == calls


def test_once_rounds_are_timed_a_container_that_pays_keeps_being_used(
        controller: OpenWhiskEndpoint, tmp_path: Path) -> None:
    # Half-second jobs: a second container halves the rounds, for far less than a round
    # as the warm copy's groups show (the profile's figure is replaced by theirs).
    deploy_map(controller, tmp_path, fake_profiles(tmp_path, invoke_ms=0.001,
                                                   transfer_ms_per_mb=0.0))
    payload = {"items": list(range(4)), "sleep": 0.5}
    for calls in (0, 1, 2, 3):  # the first execution times a round here
        code, output = invoke(controller, "map", tmp_path, payload)
        assert code == 0 and output["output"] == list(range(4)), output
        assert len(group_calls(controller)) == calls


def test_spill_always_follows_the_plan(controller: OpenWhiskEndpoint, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAASTLANE_SPILL", "always")  # the containers inherit it
    deploy_map(controller, tmp_path, fake_profiles(tmp_path, invoke_ms=60_000.0))
    for calls in (1, 2):
        code, output = invoke(controller, "map", tmp_path, {"items": [1, 2], "sleep": 0})
        assert code == 0, output
        assert len(group_calls(controller)) == calls
    assert os.environ["FAASTLANE_SPILL"] == "always"
