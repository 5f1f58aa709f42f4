"""FINRA spread over Docker containers of the runtime image, each limited to one CPU
(``--cpus 1``): every Orchestrator counts its vCPUs from its own cgroup quota, so the
groups are sized by what the containers really get, not by a --vcpus flag."""

from __future__ import annotations

import json
from pathlib import Path

from deploy.deploy_apps import FINRA
from deploy.openwhisk_endpoint import OpenWhiskEndpoint

from .spill_cli import deploy, group_calls, invoke
from .test_spilling import spill_as_planned  # noqa: F401  (autouse: groups as planned)


def test_finra_over_one_cpu_containers_equals_the_expected_report(
        docker_controller: OpenWhiskEndpoint, runtime_image: str, tmp_path: Path) -> None:
    deploy(docker_controller, FINRA, "finra", tmp_path, "--docker", runtime_image,
           "--max-containers", "3")
    code, output = invoke(docker_controller, "finra", tmp_path,
                          json.loads((FINRA / "input.json").read_text()))
    assert code == 0, output
    assert output == json.loads((FINRA / "expected.json").read_text())
    groups = group_calls(docker_controller)
    # FetchData: 2 branches > 1 vCPU -> one remote branch; RunAuditRules: 50 rules in
    # 3 containers (17, 17, 16), two groups remote.
    assert sorted(len(g["jobs"]) for g in groups) == [1, 16, 17]
    assert {g["state"] for g in groups} == {"FetchData", "RunAuditRules"}
