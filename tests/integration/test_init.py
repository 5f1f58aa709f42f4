"""``faastlane init`` through the CLI: a new app runs at once; nothing is overwritten."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from .apps import faastlane


def test_a_new_folder_app_runs_at_once(tmp_path: Path) -> None:
    app = tmp_path / "orders"
    done = faastlane("init", str(app))
    assert done.code == 0, done.stderr
    for name in ("workflow.json", "faastlane.json", "input.json", "README.md",
                 "functions/ValidateOrder.py", "functions/ReviewLargeOrder.py",
                 "functions/MakeReceipt.py"):
        assert (app / name).is_file(), name
    assert faastlane("validate", str(app)).code == 0
    run = faastlane("run", str(app), "--input-file", str(app / "input.json"))
    assert run.code == 0, run.stderr
    assert run.json == {"risk": "low",
                        "receipt": "order A-1001: 2 item(s), total 288.00"}
    small = faastlane("run", str(app), "--input", '{"order_id": "B", "items": [{"price": 3}]}')
    assert small.json == {"receipt": "order B: 1 item(s), total 3.00"}
    empty = faastlane("run", str(app), "--input", "{}")
    assert (empty.code, empty.json["Error"]) == (1, "InvalidOrder")


def test_name_option_names_the_workflow(tmp_path: Path) -> None:
    app = tmp_path / "x"
    assert faastlane("init", str(app), "--name", "checkout").code == 0
    assert json.loads((app / "faastlane.json").read_text())["name"] == "checkout"
    bad = faastlane("init", str(tmp_path / "y"), "--name", "no spaces")
    assert bad.code == 2 and "--name no spaces" in bad.stderr
    assert not (tmp_path / "y").exists()


def test_sam_form_runs_at_once_and_its_files_agree(tmp_path: Path) -> None:
    app = tmp_path / "orders-sam"
    done = faastlane("init", str(app), "--template", "sam")
    assert done.code == 0, done.stderr
    template = yaml.load((app / "template.yaml").read_text(), Loader=yaml.BaseLoader)
    resources = template["Resources"]
    machine = resources["StateMachine"]["Properties"]
    assert resources["StateMachine"]["Type"] == "AWS::Serverless::StateMachine"
    assert machine["DefinitionUri"] == "statemachine/workflow.asl.json"
    definition = json.loads((app / machine["DefinitionUri"]).read_text())
    used = {state["Resource"] for state in _tasks(definition)}
    assert used == {f"${{{key}}}" for key in machine["DefinitionSubstitutions"]}
    for logical, resource in resources.items():
        if resource["Type"] == "AWS::Serverless::Function":
            code = app / resource["Properties"]["CodeUri"] / "app.py"
            assert code.is_file() and "def handler(event, context)" in code.read_text()
            assert f"{logical}Arn" in machine["DefinitionSubstitutions"]
    assert faastlane("validate", str(app / "template.yaml")).code == 0
    run = faastlane("run", str(app / "template.yaml"), "--input-file", str(app / "input.json"))
    assert run.code == 0, run.stderr
    assert run.json == {"risk": "low",
                        "receipt": "order A-1001: 2 item(s), total 288.00"}


def _tasks(machine: dict) -> list[dict]:
    found = []
    for state in machine["States"].values():
        if state["Type"] == "Task":
            found.append(state)
        for branch in state.get("Branches", []):
            found += _tasks(branch)
    return found


def test_an_existing_non_empty_folder_is_refused_untouched(tmp_path: Path) -> None:
    app = tmp_path / "mine"
    app.mkdir()
    (app / "notes.txt").write_text("keep me")
    done = faastlane("init", str(app))
    assert done.code == 2 and "not an empty folder" in done.stderr
    assert "Traceback" not in done.stderr
    assert [p.name for p in app.iterdir()] == ["notes.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert faastlane("init", str(empty)).code == 0


def test_each_new_command_has_an_example_in_its_help() -> None:
    for command in ("graph", "serve", "init"):
        done = faastlane(command, "--help")
        assert done.code == 0 and "Example: faastlane" in done.stdout, command
