"""A function's own files, and the working directory, as a user meets them.

On Lambda a function's working directory is its task root, so ``open("model.json")``
finds a file shipped beside the handler. In a composed action all functions share one
process and its one working directory, the action folder; a function's files sit in
``functions/`` (single file) or ``functions/NAME/`` (folder). Opening them relative to
the module (``__file__``) works in every isolation mode and on both platforms
(tests/deploy/test_function_files.py); a relative ``open`` of a file beside the module
is warned about by ``validate`` and ``compose`` (and ``run``) and fails at run time
naming the state and the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from integration.apps import faastlane

WORKFLOW = {"StartAt": "Read", "States": {
    "Read": {"Type": "Task", "Resource": "reader", "Next": "Single"},
    "Single": {"Type": "Task", "Resource": "single", "End": True}}}

FROM_MODULE = """\
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def {entry}(event, context):
    with open(os.path.join(HERE, {name!r}), encoding="utf-8") as f:
        return dict(event, **json.load(f), task_root=os.environ["LAMBDA_TASK_ROOT"] == HERE)
"""

RELATIVE = """\
import json


def lambda_handler(event, context):
    with open("model.json", encoding="utf-8") as f:
        return json.load(f)
"""


def write_files_app(root: Path, reader_source: str) -> Path:
    """A folder function with model.json beside it, a single-file function with
    single.json beside it."""
    (root / "functions" / "reader").mkdir(parents=True)
    (root / "workflow.json").write_text(json.dumps(WORKFLOW))
    (root / "functions" / "reader" / "model.json").write_text('{"greeting": "hi"}')
    (root / "functions" / "reader" / "lambda_function.py").write_text(reader_source)
    (root / "functions" / "single.json").write_text('{"n": 1}')
    (root / "functions" / "single.py").write_text(
        FROM_MODULE.format(entry="handler", name="single.json"))
    return root


def files_app(root: Path) -> Path:
    return write_files_app(root, FROM_MODULE.format(entry="lambda_handler",
                                                    name="model.json"))


EXPECTED = {"greeting": "hi", "n": 1, "task_root": True}


@pytest.mark.parametrize("isolation", ["none", "process"])
def test_files_opened_from_the_module_are_found_in_every_isolation_mode(
        tmp_path: Path, isolation: str) -> None:
    app = files_app(tmp_path / "app")
    done = faastlane("run", str(app), "--input", "{}", "--isolation", isolation)
    assert done.code == 0, done.stderr
    assert done.json == EXPECTED
    assert "warning" not in done.stderr


def test_a_relative_open_of_a_file_beside_the_function_is_warned_about_then_fails(
        tmp_path: Path) -> None:
    app = write_files_app(tmp_path / "app", RELATIVE)
    warning = (f"faastlane: warning: {app}/functions/reader/lambda_function.py:5: "
               "open('model.json') is relative to the working directory: on Lambda the "
               "function's folder, but in a composed action the action folder, shared by "
               "all functions, where it is not found; use os.path.join(os.path.dirname("
               "os.path.abspath(__file__)), 'model.json')")
    validated = faastlane("validate", str(app))
    assert validated.code == 0, validated.stdout + validated.stderr  # a warning, not a problem
    assert validated.stderr.splitlines() == [warning]
    composed = faastlane("compose", str(app), "-o", str(tmp_path / "action"))
    assert composed.code == 0, composed.stderr
    assert composed.stderr.splitlines() == [warning]
    ran = faastlane("run", str(app), "--input", "{}")
    assert ran.code == 1
    assert ran.stderr.splitlines()[0] == warning
    assert "faastlane: the execution failed in state 'Read': FileNotFoundError: [Errno 2] " \
           "No such file or directory: 'model.json'" in ran.stderr
    assert ran.json["Error"] == "FileNotFoundError"


def test_no_warning_for_paths_that_are_not_beside_the_function(tmp_path: Path) -> None:
    """Writing a new file, /tmp, a path from the action root: nothing to say."""
    source = ('import os\n\n\ndef lambda_handler(event, context):\n'
              '    open("/tmp/out.txt", "w").close()\n'
              '    open("new-file.txt", "w").close()\n'
              '    return {"seen": os.path.exists("functions/reader/model.json")}\n')
    app = write_files_app(tmp_path / "app", source)
    validated = faastlane("validate", str(app))
    assert validated.code == 0 and validated.stderr == "", validated.stderr
