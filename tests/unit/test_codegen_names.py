"""The generated orchestrator works for any state names (a property test).

State names are arbitrary strings of up to 80 characters: any Unicode, spaces, quotes.
A state named after a class the generated module uses ("Pass", "Task", "Map") or after
one of its own globals ("WORKFLOW") once broke the generated ``orchestrator.py``; names
that Python folds to one identifier (NFKC: "ﬁ" and "fi") must stay two states. Each
example composes a real action's ``orchestrator.py``, imports it as the action would and
runs the workflow, which must visit every state in order.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faastlane.compose.action import prepare, write_action
from faastlane.compose.codegen import render

TRICKY = ["Pass", "Task", "Map", "Parallel", "Choice", "Wait", "Fail", "Succeed", "Machine",
          "Retrier", "Catcher", "FunctionSpec", "Orchestrator", "WORKFLOW", "FUNCTIONS",
          "ORCHESTRATOR", "ROOT", "os", "ﬁ", "fi", "class", "match", "_", "1st", "a b",
          "it's \"quoted\"", "ünïcödé", "状态", "\u212b", "\u00c5", "x" * 80]
NAMES = st.one_of(st.sampled_from(TRICKY),
                  st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=80))


def _app(root: Path, names: list[str]) -> Path:
    states = {}
    for i, name in enumerate(names):
        state = {"Type": "Pass", "Result": i, "ResultPath": f"$.visited[{i}]"}
        if i + 1 < len(names):
            state["Next"] = names[i + 1]
        else:
            state["End"] = True
        states[name] = state
    (root / "functions").mkdir(parents=True, exist_ok=True)
    (root / "workflow.json").write_text(json.dumps({"StartAt": names[0], "States": states}))
    return root


@pytest.fixture(scope="module")
def action(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A real composed action: its faastlane_runtime is what generated code imports."""
    folder = tmp_path_factory.mktemp("names")
    out = folder / "action"
    write_action(prepare(str(_app(folder / "app", ["Start"]))), str(out))
    sys.path.insert(0, str(out))
    yield out
    sys.path.remove(str(out))
    for name in [m for m in sys.modules if m == "faastlane_runtime"
                 or m.startswith("faastlane_runtime.")]:
        del sys.modules[name]


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(NAMES, min_size=1, max_size=6, unique=True))
def test_any_state_names_compose_and_run(names: list[str], action: Path,
                                         tmp_path_factory: pytest.TempPathFactory) -> None:
    app = _app(tmp_path_factory.mktemp("app"), names)
    composition = prepare(str(app))
    source = render("wf", composition.workflow, {}, composition.plan)
    namespace = {"__file__": str(action / "orchestrator.py"), "__name__": "orchestrator"}
    exec(compile(source, "orchestrator.py", "exec"), namespace)  # noqa: S102 - the test
    orchestrator = namespace["build"]()
    try:
        result = orchestrator.execute({"visited": [None] * len(names)})
    finally:
        orchestrator.close()
    assert result.status == "SUCCEEDED", (names, result)
    assert result.output == {"visited": list(range(len(names)))}
    assert list(namespace["WORKFLOW"].states) == names
