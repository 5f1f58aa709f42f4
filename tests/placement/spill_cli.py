"""The real CLI deploying and invoking apps on the local OpenWhisk endpoint, and the
sub-workflow requests it recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from deploy.openwhisk_endpoint import OpenWhiskEndpoint, clean_env
from integration.apps import faastlane

AUTH = "23bc46b1-71f6-4ed5-8c54-816aa4f8c502:placement-tests-key"
GROUP_KEY = "__faastlane_group"
ACTION = "_/finra"


def deploy(controller: OpenWhiskEndpoint, app: Path, name: str, tmp_path: Path,
           *planning: str) -> None:
    done = faastlane("deploy", str(app), "--target", "openwhisk", "--apihost", controller.url,
                     "--auth", AUTH, "--name", name, *planning, env=clean_env(tmp_path))
    assert done.code == 0, done.stderr


def invoke(controller: OpenWhiskEndpoint, name: str, tmp_path: Path, payload: Any
           ) -> tuple[int, Any]:
    source = tmp_path / "input.json"
    source.write_text(json.dumps(payload))
    done = faastlane("invoke", name, "--target", "openwhisk", "--apihost", controller.url,
                     "--auth", AUTH, "--input-file", str(source), env=clean_env(tmp_path))
    return done.code, json.loads(done.stdout)


def group_calls(controller: OpenWhiskEndpoint) -> list[dict[str, Any]]:
    """The sub-workflow requests the Orchestrator sent through the REST API."""
    return [call.body[GROUP_KEY] for call in controller.calls
            if call.method == "POST" and isinstance(call.body, dict) and GROUP_KEY in call.body]
