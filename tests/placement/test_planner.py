"""The planner's decisions for workflow shapes, vCPU counts and container limits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deploy.deploy_apps import FINRA
from faastlane.compose.plan import placements
from faastlane.runtime.asl.model import machine_from_asl
from faastlane.runtime.options import (
    CONTAINERS,
    PARALLEL_PROCESSES,
    PARALLEL_THREADS,
    PROCESSES,
    THREADS,
)
from faastlane.runtime.parallel.protocol import find_state, pack_inputs, split, unpack_inputs
from integration.apps import faastlane


def parallel(name: str, width: int, with_task: bool = True) -> dict:
    def branch(i: int) -> dict:
        state = ({"Type": "Task", "Resource": "f", "End": True} if with_task
                 else {"Type": "Pass", "End": True})
        return {"StartAt": f"{name}{i}", "States": {f"{name}{i}": state}}
    return {"Type": "Parallel", "Branches": [branch(i) for i in range(width)], "End": True}


def machine(states: dict) -> object:
    first = next(iter(states))
    return machine_from_asl({"StartAt": first, "States": states})


def where(states: dict, vcpus: int, max_containers: int,
          variant: str = PARALLEL_PROCESSES) -> dict[str, str]:
    return {k: v[0] for k, v in placements(machine(states), vcpus, max_containers,
                                           variant).items()}


@pytest.mark.parametrize("width, vcpus, containers, expected", [
    (4, 4, 8, PROCESSES),     # fits the container
    (8, 4, 8, CONTAINERS),    # wider than the vCPUs, spilling allowed
    (8, 4, 1, PROCESSES),     # wider, but one container: queue on the vCPUs
    (8, 0, 8, CONTAINERS),    # vCPUs known only at run time: may spill then
])
def test_parallel_width_against_vcpus(width: int, vcpus: int, containers: int,
                                      expected: str) -> None:
    assert where({"P": parallel("B", width)}, vcpus, containers) == {"P": expected}


def test_branches_without_functions_run_on_threads() -> None:
    assert where({"P": parallel("B", 8, with_task=False)}, 2, 4) == {"P": THREADS}


def test_threads_only_variant_overrides_everything() -> None:
    assert where({"P": parallel("B", 8)}, 2, 4, PARALLEL_THREADS) == {"P": THREADS}


def test_nested_parallel_states_do_not_spill_again() -> None:
    inner = parallel("I", 6)
    outer = {"Type": "Map", "ItemsPath": "$.items", "End": True,
             "ItemProcessor": {"StartAt": "Inner", "States": {"Inner": inner}}}
    assert where({"M": outer}, 2, 4) == {"M": CONTAINERS,
                                         "M/ItemProcessor/Inner": PROCESSES}


def test_map_spills_only_with_more_than_one_container() -> None:
    body = {"StartAt": "W", "States": {"W": {"Type": "Task", "Resource": "f", "End": True}}}
    state = {"M": {"Type": "Map", "ItemsPath": "$", "ItemProcessor": body, "End": True}}
    assert where(state, 2, 1) == {"M": PROCESSES}
    assert where(state, 2, 3) == {"M": CONTAINERS}


def test_plan_keys_find_their_states_again() -> None:
    workflow = machine({"P": parallel("B", 2), })
    assert find_state(workflow, "P").name == "P"
    assert find_state(workflow, "P/Branches/1/B1").name == "B1"
    with pytest.raises(Exception, match="no state"):
        find_state(workflow, "P/Branches/2/B1")


@pytest.mark.parametrize("count, per, most, sizes", [
    (50, 2, 4, [13, 13, 12, 12]),   # capped at 4 containers: shared out evenly
    (5, 2, 8, [2, 2, 1]),           # as few containers as fit 2 each
    (3, 4, 8, [3]),                 # fits one container
])
def test_split_sizes_groups_to_containers(count: int, per: int, most: int,
                                          sizes: list[int]) -> None:
    groups = split(count, per, most)
    assert [len(g) for g in groups] == sizes
    assert [i for g in groups for i in g] == list(range(count))


def test_finra_plan_changes_with_vcpus_and_max_containers(tmp_path: Path) -> None:
    def plan(*options: str) -> dict:
        out = tmp_path / "-".join(options or ("default",))
        done = faastlane("compose", str(FINRA), "-o", str(out), *options)
        assert done.code == 0, done.stderr
        return json.loads((out / "plan.json").read_text())

    default = plan()  # isolation process: the rules run in their sandboxes
    assert default["states"]["RunAuditRules"]["placement"] == THREADS
    assert "own sandbox" in default["states"]["RunAuditRules"]["reason"]
    assert default["options"]["max_containers"] == 1
    shared = plan("--isolation", "none")
    assert shared["states"]["RunAuditRules"]["placement"] == PROCESSES
    one = plan("--vcpus", "1", "--max-containers", "4")
    assert one["states"]["FetchData"]["placement"] == CONTAINERS  # 2 branches > 1 vCPU
    assert one["states"]["RunAuditRules"]["placement"] == CONTAINERS
    assert "4 containers" in one["states"]["RunAuditRules"]["reason"]
    assert one["states"]["RunAuditRules"]["handoff"]["payload_limit_bytes"]["openwhisk"] \
        == 1024 * 1024
    two = plan("--vcpus", "2", "--max-containers", "4")
    assert two["states"]["FetchData"]["placement"] == THREADS  # sandboxed fetches, 2 fit 2 vCPUs
    assert two["options"]["vcpus"] == 2
    assert two["options"]["placements"] == {"FetchData": PROCESSES,
                                            "RunAuditRules": CONTAINERS}
    assert faastlane("compose", str(FINRA), "-o", str(tmp_path / "x"),
                     "--max-containers", "0").code == 2


def test_group_inputs_send_what_every_iteration_shares_once() -> None:
    book = {"positions": list(range(100))}
    inputs = [{"rule": r, "book": book, "date": "2024-01-02"} for r in range(3)]
    packed = pack_inputs(inputs)
    assert packed == {"shared": {"book": book, "date": "2024-01-02"},
                      "keys": ["rule", "book", "date"],
                      "inputs": [{"rule": 0}, {"rule": 1}, {"rule": 2}]}
    assert unpack_inputs(json.loads(json.dumps(packed)), 3) == inputs


@pytest.mark.parametrize("inputs, packed", [
    ([{"a": 1}] * 3, {"input": {"a": 1}}),  # Parallel: one input for every branch
    ([1, 2], {"inputs": [1, 2]}),  # plain items
    ([{"a": 1, "b": 2}, {"b": 2, "a": 1}], {"inputs": [{"a": 1, "b": 2}, {"b": 2, "a": 1}]}),
    ([{"a": 1}, {"a": True}], {"inputs": [{"a": 1}, {"a": True}]}),  # 1 is not true
    ([{"a": [1]}, {"a": [1]}], {"inputs": [{"a": [1]}, {"a": [1]}]}),  # equal, not shared
])
def test_group_inputs_share_only_what_is_certainly_the_same(inputs: list, packed: dict
                                                              ) -> None:
    assert pack_inputs(inputs) == packed
    assert unpack_inputs(packed, len(inputs)) == inputs
