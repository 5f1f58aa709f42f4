"""function.json's handler, checked by parsing the module (never importing it): refused
only when the module certainly does not bind the name."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from faastlane.app.sources import load_app


def _app(root: Path, source: str, handler: str = "app.handle") -> Path:
    (root / "workflow.json").write_text(json.dumps(
        {"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "f", "End": True}}}))
    folder = root / "functions" / "f"
    folder.mkdir(parents=True)
    (folder / "function.json").write_text(json.dumps({"handler": handler}))
    (folder / "app.py").write_text(textwrap.dedent(source))
    return root


@pytest.mark.parametrize("source", [
    "def handle(event, context):\n    return event\n",
    "async def handle(event, context):\n    return event\n",
    "handle = lambda event, context: event\n",
    "from impl import work as handle\n",
    "class handle:\n    pass\n",
    "try:\n    from fast import handle\nexcept ImportError:\n    def handle(e, c):\n        pass\n",
    "import os\nif os.environ.get('X'):\n    def handle(e, c):\n        pass\n",
    "def setup():\n    global handle\n    handle = print\nsetup()\n",
    "globals()['handle'] = print\n",
    "from impl import *\n",
    "import sys\nsetattr(sys.modules[__name__], 'handle', print)\n",
    "def __getattr__(name):\n    return print\n",
    "for handle in [print]:\n    pass\n",
    "(handle := print)\n",
], ids=["def", "async", "assign", "import-as", "class", "try-import", "if-def", "global",
        "globals", "star-import", "setattr", "module-getattr", "for", "walrus"])
def test_a_name_the_module_may_bind_is_accepted(tmp_path: Path, source: str) -> None:
    app = load_app(str(_app(tmp_path, source)))
    assert app.problems == [] and set(app.functions) == {"f"}


@pytest.mark.parametrize("source", [
    "def handler(event, context):\n    return event\n",
    "def outer():\n    def handle(e, c):\n        pass\n",
    "class C:\n    handle = print\n",
    "def f():\n    handle = print\n",
    "'handle'\n",
], ids=["other-name", "nested-def", "class-attribute", "local", "string"])
def test_a_name_the_module_certainly_does_not_bind_is_refused_in_function_json(
        tmp_path: Path, source: str) -> None:
    app = load_app(str(_app(tmp_path, source)))
    assert [(p.file, p.pointer) for p in app.problems] == [("functions/f/function.json",
                                                            "/handler")]
    assert "functions/f/app.py defines no 'handle'" in app.problems[0].message
    assert "f" not in app.functions


def test_a_missing_module_and_bad_json_are_located_in_function_json(tmp_path: Path) -> None:
    app = load_app(str(_app(tmp_path, "", handler="nowhere.handle")))
    assert [(p.file, p.pointer) for p in app.problems] == [("functions/f/function.json",
                                                            "/handler")]
    (tmp_path / "functions" / "f" / "function.json").write_text('{"handler": ')
    (problem,) = load_app(str(tmp_path)).problems
    assert (problem.file, problem.line) == ("functions/f/function.json", 1)
