"""What the example apps' end-to-end tests share: importing an example's files, running
an example through the CLI, and checking its functions are plain Lambda handlers."""

from __future__ import annotations

import ast
import importlib.util
import json
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from .apps import ROOT, Completed, faastlane

EXAMPLES = ROOT / "examples"


def load_module(path: Path, name: str) -> ModuleType:
    """Import the file at ``path`` as module ``name``, afresh on every call.

    It is registered in ``sys.modules`` before it runs, as a normal import is, so that
    dataclasses and pickling inside it can find their module.
    """
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run_example(app: str, *args: str, env: dict[str, str] | None = None,
                console_script: bool = False) -> Completed:
    """``faastlane run examples/APP ARGS`` as a user runs it."""
    return faastlane("run", str(EXAMPLES / app), *args, env=env,
                     console_script=console_script)


def run_example_ok(app: str, *args: str, env: dict[str, str] | None = None,
                   console_script: bool = False) -> Completed:
    """:func:`run_example`, which must succeed."""
    done = run_example(app, *args, env=env, console_script=console_script)
    assert done.code == 0, f"faastlane run failed:\n{done.stdout}\n{done.stderr}"
    return done


def copy_example(app: str, into: Path, without_environment: bool = False) -> Path:
    """A copy of ``examples/APP`` in ``into``; ``without_environment`` drops the
    ``environment`` its faastlane.json gives each function."""
    copy = Path(shutil.copytree(EXAMPLES / app, into / app))
    if without_environment:
        settings_file = copy / "faastlane.json"
        settings = json.loads(settings_file.read_text(encoding="utf-8"))
        for config in settings.get("functions", {}).values():
            config.pop("environment", None)
        settings_file.write_text(json.dumps(settings), encoding="utf-8")
    return copy


def _imported_packages(tree: ast.Module) -> set[str]:
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    return imported


def assert_plain_lambda_handlers(sources: Iterable[Path],
                                 requirements: Iterable[str] = ()) -> None:
    """Each file is a function as written for Lambda, which Faastlane runs unmodified.

    One top-level ``handler(event, context)``; imports only from the standard library
    and ``requirements`` (the packages the app's requirements.txt provides); no
    ``endpoint_url``: which endpoint a client reaches is the environment's choice.
    """
    allowed = set(sys.stdlib_module_names) | set(requirements)
    for source in sources:
        text = source.read_text(encoding="utf-8")
        tree = ast.parse(text)
        imported = _imported_packages(tree)
        assert imported <= allowed, (source, imported)
        assert "endpoint_url" not in text, source
        handlers = [node for node in tree.body
                    if isinstance(node, ast.FunctionDef) and node.name == "handler"]
        assert [[a.arg for a in h.args.args] for h in handlers] == [["event", "context"]], \
            source
