"""The sandbox's view of an action (``runtime/sandbox/view.py``) hides what compose
writes for the workflow: checked against what compose writes, so that a file added
there is not left in every sandbox's view. (The view itself is tested through the CLI:
``tests/integration/test_sandboxes.py``.)"""

from __future__ import annotations

import os
from pathlib import Path

from faastlane.compose.action import prepare, write_action
from faastlane.runtime.action_plan import PLAN_FILE
from faastlane.runtime.engine.functions import FunctionSpec
from faastlane.runtime.isolation.hardening import INSPECTION_RECORD
from faastlane.runtime.sandbox.view import WORKFLOW_FILES, hidden_paths
from faastlane.runtime.services.executions import STATE_MACHINES_FILE

ROOT = Path(__file__).resolve().parents[2]


def test_every_file_compose_writes_beside_the_code_is_hidden(tmp_path: Path) -> None:
    action = write_action(prepare(str(ROOT / "examples" / "finra"), isolation="process"),
                          str(tmp_path / "action"))
    files = {e for e in os.listdir(action) if os.path.isfile(os.path.join(action, e))}
    assert files and files <= set(WORKFLOW_FILES), files - set(WORKFLOW_FILES)
    assert {PLAN_FILE, STATE_MACHINES_FILE, INSPECTION_RECORD} <= set(WORKFLOW_FILES)


def test_a_function_sees_its_own_code_and_not_its_siblings() -> None:
    own = FunctionSpec("a", "functions/a.py", "handler", "lambda")
    folder = FunctionSpec("b", "functions/b/app.py", "handler", "lambda", "functions/b")
    other = FunctionSpec("c", "functions/c.py", "handler", "lambda")
    hidden = hidden_paths(own, [own, folder, other])
    assert {"functions/b", "functions/c.py"} <= hidden
    assert "functions/a.py" not in hidden
    assert "functions/a.py" not in hidden_paths(own, [own])
    assert "functions/a.py" in hidden_paths(folder, [own, folder])
    assert "functions/b" not in hidden_paths(folder, [own, folder])
