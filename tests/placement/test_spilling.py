"""Spilling parallel work to copies of the action: real action servers behind the
OpenWhisk REST endpoint, the action deployed and invoked with the real CLI.

Each container is an action server (a process here; a one-CPU Docker container in
test_spilling_docker.py); the Orchestrator in the first invokes the same action through
the endpoint for every further group, and the endpoint starts a container per
concurrent activation, as OpenWhisk's invoker does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deploy.deploy_apps import FINRA
from deploy.openwhisk_endpoint import OpenWhiskEndpoint
from integration.apps import chain, faastlane, task, write_app

from .spill_cli import deploy, group_calls, invoke

ACTION = "_/finra"


@pytest.fixture(autouse=True)
def spill_as_planned(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about how groups travel, not whether they pay (test_costs.py): the
    containers (started later, inheriting this) spill as planned on every attempt."""
    monkeypatch.setenv("FAASTLANE_SPILL", "always")


def one_container(app: Path, payload: Any, tmp_path: Path) -> Any:
    """The same workflow run in one container (no spilling), for comparison."""
    source = tmp_path / "one.json"
    source.write_text(json.dumps(payload))
    done = faastlane("run", str(app), "--input-file", str(source))
    assert done.code == 0, done.stderr
    return json.loads(done.stdout)


def finra_input(rules: int) -> dict[str, Any]:
    big = json.loads((FINRA / "input-200.json").read_text())
    return dict(big, rules=big["rules"][:rules])


@pytest.mark.parametrize("rules, containers", [(50, 4), (100, 4), (200, 2)])
def test_finra_spread_over_containers_equals_one_container(
        controller: OpenWhiskEndpoint, tmp_path: Path, rules: int, containers: int) -> None:
    payload = (json.loads((FINRA / "input.json").read_text()) if rules == 50
               else finra_input(rules))
    deploy(controller, FINRA, "finra", tmp_path, "--vcpus", "2", "--max-containers",
           str(containers))
    code, output = invoke(controller, "finra", tmp_path, payload)
    assert code == 0, output
    assert output == one_container(FINRA, payload, tmp_path)
    if rules in (50, 200):  # the example's own expected reports
        expected = "expected.json" if rules == 50 else "expected-200.json"
        assert output == json.loads((FINRA / expected).read_text())

    # Map RunAuditRules: groups of rules/containers iterations, all but one remote.
    groups = group_calls(controller)
    assert len(groups) == containers - 1
    assert len(controller.warm[ACTION]) == containers
    # Each group carries its own rules and, once, the book and market snapshot that
    # ItemSelector adds to every rule (not 100 copies of them: 200 rules once needed
    # the store to pass OpenWhisk's 1 MB limit).
    assert not [g for g in groups if "stored" in g]
    jobs = sorted(j for g in groups for j in g["jobs"])
    share = -(-rules // containers)
    assert jobs == list(range(share, rules))  # the first group stays here
    assert all(len(g["jobs"]) in (share - 1, share) for g in groups)
    assert all(g["state"] == "RunAuditRules" for g in groups)
    rules_sent = [r for g in sorted(groups, key=lambda g: g["jobs"][0]) for r in g["inputs"]]
    assert rules_sent == [{"rule": r} for r in payload["rules"][share:]]
    assert all(set(g["shared"]) == {"portfolio", "market"} for g in groups)
    assert all(g["keys"] == ["rule", "portfolio", "market"] for g in groups)


WHO = """
import os

def handler(event, context):
    return {"pid": os.getpid(), "event": event}
"""


def test_parallel_branches_get_outer_variables_and_context_in_other_containers(
        controller: OpenWhiskEndpoint, tmp_path: Path) -> None:
    branches = [chain((f"Who{i}", task("who", Parameters={
        "greeting.$": "$greeting", "execution.$": "$$.Execution.Name",
        "input.$": "$.n"}))) for i in range(3)]
    workflow = chain(
        ("Start", {"Type": "Pass", "Assign": {"greeting": "hello"}}),
        ("Fan", {"Type": "Parallel", "Branches": branches, "End": True}))
    app = write_app(tmp_path / "fan", workflow, {"who": WHO})
    deploy(controller, app, "fan", tmp_path, "--vcpus", "1", "--max-containers", "3")
    code, output = invoke(controller, "fan", tmp_path, {"n": 7})
    assert code == 0, output
    results = output["output"]  # OpenWhisk wraps a non-object result
    assert [r["event"]["greeting"] for r in results] == ["hello"] * 3
    assert [r["event"]["input"] for r in results] == [7] * 3
    # One execution, one $$.Execution.Name, in every container.
    assert len({r["event"]["execution"] for r in results}) == 1
    assert len({r["pid"] for r in results}) == 3
    assert sorted(g["jobs"][0] for g in group_calls(controller)) == [1, 2]


FLAKY = """
import os, signal

def handler(event, context):
    item = event["item"]
    if item == "raise":
        raise ValueError("rule " + item + " is broken")
    if item == "kill-container" and not os.path.exists(event["marker"]):
        open(event["marker"], "w").close()
        os.kill(os.getppid(), signal.SIGKILL)  # the Orchestrator of that container
    return {"item": item}
"""


def map_app(tmp_path: Path, **map_fields: Any) -> Path:
    workflow = chain(("Each", {
        "Type": "Map", "ItemsPath": "$.items",
        "ItemSelector": {"item.$": "$$.Map.Item.Value", "marker.$": "$.marker"},
        "ItemProcessor": chain(("Work", task("flaky"))), "End": True, **map_fields}))
    return write_app(tmp_path / "map", workflow, {"flaky": FLAKY})


def test_an_error_in_a_remote_group_is_the_branch_error_and_catch_sees_it(
        controller: OpenWhiskEndpoint, tmp_path: Path) -> None:
    app = map_app(tmp_path, Catch=[{"ErrorEquals": ["ValueError"],
                                    "ResultPath": "$.caught", "Next": "Caught"}])
    workflow = json.loads((app / "workflow.json").read_text())
    workflow["States"]["Caught"] = {"Type": "Pass", "End": True}
    (app / "workflow.json").write_text(json.dumps(workflow))
    deploy(controller, app, "map", tmp_path, "--vcpus", "1", "--max-containers", "3")
    items = ["a", "b", "c", "d", "e", "raise"]  # "raise" is in the last, remote group
    code, output = invoke(controller, "map", tmp_path, {"items": items, "marker": "unused"})
    assert code == 0, output
    assert output["caught"]["Error"] == "ValueError"
    assert "rule raise is broken" in output["caught"]["Cause"]
    assert any(4 in g["jobs"] or 5 in g["jobs"] for g in group_calls(controller))


def test_a_container_that_dies_fails_its_group_and_retry_runs_it_again(
        controller: OpenWhiskEndpoint, tmp_path: Path) -> None:
    app = map_app(tmp_path, Retry=[{"ErrorEquals": ["Runtime.ExitError"], "MaxAttempts": 1,
                                    "IntervalSeconds": 1}])
    # --isolation none: the function kills its parent, the container's Orchestrator (in a
    # sandbox, its parent would be the zygote and its writes confined to /tmp).
    deploy(controller, app, "map", tmp_path, "--vcpus", "1", "--max-containers", "2",
           "--isolation", "none")
    marker = tmp_path / "killed-once"
    items = ["a", "b", "c", "kill-container"]
    code, output = invoke(controller, "map", tmp_path, {"items": items, "marker": str(marker)})
    assert code == 0, output
    assert marker.exists()  # the remote container's Orchestrator was killed once
    assert output["output"] == [{"item": i} for i in items]
    assert len(group_calls(controller)) == 2  # the group, then its retry


def test_without_retry_a_dead_container_fails_the_execution(
        controller: OpenWhiskEndpoint, tmp_path: Path) -> None:
    app = map_app(tmp_path)
    deploy(controller, app, "map", tmp_path, "--vcpus", "1", "--max-containers", "2",
           "--isolation", "none")  # the function kills the Orchestrator (as above)
    code, output = invoke(controller, "map", tmp_path,
                          {"items": ["a", "kill-container"],
                           "marker": str(tmp_path / "marker")})
    assert code == 1
    assert output["error"]["Error"] == "Runtime.ExitError"
    assert "OpenWhisk action /_/map" in output["error"]["Cause"]


MAKE = """
def handler(event, context):
    return {"items": [{"n": i, "blob": f"{i:04d}" * 10_000} for i in range(event["n"])]}
"""
BIG = """
def handler(event, context):
    return {"n": event["n"], "size": len(event["blob"])}
"""


def test_a_group_over_the_payload_limit_travels_through_the_store(
        controller: OpenWhiskEndpoint, tmp_path: Path) -> None:
    workflow = chain(("Make", task("make")),
                     ("Each", {"Type": "Map", "ItemsPath": "$.items", "End": True,
                               "ItemProcessor": chain(("Big", task("big")))}))
    app = write_app(tmp_path / "big", workflow, {"make": MAKE, "big": BIG})
    deploy(controller, app, "big", tmp_path, "--vcpus", "1", "--max-containers", "2")
    # 60 different items of 40 KB: the remote half (1.2 MB) passes OpenWhisk's 1 MB limit.
    code, output = invoke(controller, "big", tmp_path, {"n": 60})
    assert code == 0, output
    assert output["output"] == [{"n": i, "size": 40_000} for i in range(60)]
    groups = group_calls(controller)
    assert len(groups) == 1 and groups[0]["stored"].startswith("run-")
