"""Deep inputs through the real CLI (issue 18).

An input as deep as the JSON parser reads runs through every kind of state and comes out
equal: the engine's walks over data (copies, JSONata results, the sandbox wire, history)
go iteratively past the Python stack. An input deeper than the parser goes is one line and
exit 2, never a traceback (found while fuzzing: `faastlane run --input-file` died with a
RecursionError from json.loads).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deep_json import needs_json_depth, nested

from .apps import chain, faastlane, task, write_app

ECHO = "def handler(event, context):\n    return event\n"


def test_an_input_nested_too_deeply_is_one_line_exit_2(app_dir: Path, tmp_path: Path) -> None:
    write_app(app_dir, chain(("E", task("echo"))), {"echo": ECHO})
    deep = tmp_path / "deep.json"
    # Past every CPython's parser limit (3.11 refuses ~1,000 levels; 3.13 reads 5,000).
    deep.write_text("[" * 100_000 + "]" * 100_000)
    done = faastlane("run", str(app_dir), "--input-file", str(deep))
    assert done.code == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1
    assert "deep.json is nested too deeply to read" in done.stderr


# Pass, Task, Choice, Map (an iteration per item) and Parallel (a function and a Pass),
# each handing on the whole deep value.
EVERY_KIND = {"StartAt": "P", "States": {
    "P": {"Type": "Pass", "Next": "T"},
    "T": task("echo", Next="C"),
    "C": {"Type": "Choice", "Default": "M", "Choices": [
        {"Variable": "$.deep", "IsPresent": False, "Next": "M"}]},
    "M": {"Type": "Map", "ItemsPath": "$.items", "ResultPath": "$.mapped", "Next": "Par",
          "Iterator": {"StartAt": "E", "States": {"E": task("echo")}}},
    "Par": {"Type": "Parallel", "ResultPath": "$.both", "End": True, "Branches": [
        {"StartAt": "E2", "States": {"E2": task("echo", InputPath="$.deep")}},
        {"StartAt": "Q", "States": {"Q": {"Type": "Pass", "InputPath": "$.deep",
                                          "End": True}}}]},
}}


@pytest.mark.parametrize("isolation", ["none", "process"])
@pytest.mark.parametrize("depth", [1_000, 4_000])
def test_an_input_as_deep_as_json_reads_runs_through_every_state(
        app_dir: Path, tmp_path: Path, depth: int, isolation: str) -> None:
    needs_json_depth(depth)
    write_app(app_dir, EVERY_KIND, {"echo": ECHO})
    deep = nested(depth - 2)  # in {"deep": ..., "items": [...]}: the input is depth deep
    source = tmp_path / "deep.json"
    source.write_text(json.dumps({"deep": deep, "items": [deep, deep]}))
    history = tmp_path / "history.json"
    done = faastlane("run", str(app_dir), "--input-file", str(source), "--isolation",
                     isolation, "--history", str(history))
    assert done.code == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    assert done.json == {"deep": deep, "items": [deep, deep], "mapped": [deep, deep],
                         "both": [deep, deep]}
    events = json.loads(history.read_text())["events"]
    assert events[-1]["type"] == "ExecutionSucceeded"
    assert json.loads(events[-1]["executionSucceededEventDetails"]["output"]) == done.json
