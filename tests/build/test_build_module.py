"""Wiring the _faastlane C sources into the source tree as a builtin module."""

from __future__ import annotations

from pathlib import Path


def prepare(script, fake_source, tmp_path: Path):
    tree = tmp_path / "tree"
    result = script.run("prepare", "--into", str(tree), "--source", str(fake_source))
    return tree, result


def setup_local_lines(tree: Path) -> list[str]:
    path = tree / "Modules" / "Setup.local"
    if not path.exists():
        return []
    return [line for line in path.read_text().splitlines()
            if line and not line.startswith("#")]


def test_every_c_file_is_one_builtin_module(script, fake_source, tmp_path):
    (script.modules / "_faastlanemodule.c").write_text("/* PyInit__faastlane */\n")
    (script.modules / "mpk_x86.c").write_text("/* gates */\n")
    (script.modules / "pycore_mpk.h").write_text("/* API */\n")
    (script.modules / "clinic").mkdir()
    (script.modules / "clinic" / "_faastlanemodule.c.h").write_text("/* clinic */\n")
    (script.modules / "MODULE.md").write_text("docs, not code\n")
    tree, result = prepare(script, fake_source, tmp_path)
    assert result.returncode == 0, result.stderr
    # *static* = linked into the interpreter, not a shared library on sys.path.
    assert setup_local_lines(tree) == ["*static*", "_faastlane _faastlanemodule.c mpk_x86.c"]
    for rel in ("_faastlanemodule.c", "mpk_x86.c", "pycore_mpk.h", "clinic/_faastlanemodule.c.h"):
        assert (tree / "Modules" / rel).read_text() == (script.modules / rel).read_text()
    assert "_faastlane builtin module: _faastlanemodule.c mpk_x86.c" in result.stdout
    # The pristine tree came through untouched.
    assert (tree / "Modules" / "posixmodule.c").read_text() == "/* fake */\n"


def test_without_module_source_the_build_says_so(script, fake_source, tmp_path):
    (script.modules / "helper.c").write_text("/* not the module's entry point */\n")
    tree, result = prepare(script, fake_source, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "WITHOUT the _faastlane module" in result.stdout
    assert setup_local_lines(tree) == []
    assert not (tree / "Modules" / "helper.c").exists()


def test_module_file_may_not_replace_a_cpython_file(script, fake_source, tmp_path):
    (script.modules / "_faastlanemodule.c").write_text("/* ok */\n")
    (script.modules / "posixmodule.c").write_text("/* would shadow CPython's */\n")
    tree, result = prepare(script, fake_source, tmp_path)
    assert result.returncode == 1
    assert "posixmodule.c would overwrite CPython's Modules/posixmodule.c" in result.stderr


def test_prepare_refuses_an_existing_folder(script, fake_source, tmp_path):
    (tmp_path / "tree").mkdir()
    _, result = prepare(script, fake_source, tmp_path)
    assert result.returncode == 1
    assert "already exists" in result.stderr
