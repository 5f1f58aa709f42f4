"""``faastlane package``: what goes into each platform's zips, and what is refused."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

from integration.apps import faastlane

from .deploy_apps import FINRA, write_small_app


def names(path: Path) -> set[str]:
    with zipfile.ZipFile(path) as archive:
        return set(archive.namelist())


def test_openwhisk_zip_holds_the_action_and_vendored_packages(small_app: Path, tmp_path: Path):
    out = tmp_path / "action.zip"
    done = faastlane("package", str(small_app), "--target", "openwhisk", "-o", str(out))
    assert done.code == 0, done.stderr
    assert "wsk action create small" in done.stdout and "--kind python:3.11" in done.stdout
    inside = names(out)
    assert {"__main__.py", "orchestrator.py", "plan.json", "workflow.json",
            "faastlane_runtime/platforms/entry.py", "functions/check.py",
            "inflection/__init__.py"} <= inside
    _assert_compiled_for(out, "3.11", done.stderr, tmp_path)
    again = tmp_path / "again.zip"
    assert faastlane("package", str(small_app), "--target", "openwhisk", "-o",
                     str(again)).code == 0
    assert again.read_bytes() == out.read_bytes()  # deterministic


# Run by the target interpreter: each compiled file is for it (its magic number),
# hash-checked, and of the source beside it in the zip.
_CHECK_PYC = """
import importlib.util, sys, zipfile
archive = zipfile.ZipFile(sys.argv[1])
names = set(archive.namelist())
sources = [n for n in names if n.endswith(".py")]
compiled = 0
for name in sources:
    cached = importlib.util.cache_from_source(name)
    if cached not in names:
        continue
    data, source = archive.read(cached), archive.read(name)
    assert data[:4] == importlib.util.MAGIC_NUMBER, cached
    assert int.from_bytes(data[4:8], "little") == 0b11, cached  # checked hash
    assert data[8:16] == importlib.util.source_hash(source), cached
    compiled += 1
print(compiled, len(sources))
"""


def _assert_compiled_for(archive: Path, version: str, stderr: str, tmp_path: Path) -> None:
    from faastlane.deploy.bytecode import interpreter_for

    python = interpreter_for(version)
    pyc = [n for n in names(archive) if n.endswith(".pyc")]
    if python is None:  # the package says so, and ships source only
        assert f"no Python {version} here to compile" in stderr and pyc == []
        return
    assert all(f".cpython-{version.replace('.', '')}.pyc" in n for n in pyc)
    checker = tmp_path / "check_pyc.py"
    checker.write_text(_CHECK_PYC)
    done = subprocess.run([python, str(checker), str(archive)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    compiled, sources = map(int, done.stdout.split())
    assert compiled == sources > 0  # every module, the runtime's and vendored ones too


def test_lambda_function_zip_and_layer(tmp_path: Path):
    done = faastlane("package", str(FINRA), "--target", "lambda", "-o", str(tmp_path))
    assert done.code == 0, done.stderr
    for archive in ("function.zip", "layer.zip"):
        _assert_compiled_for(tmp_path / archive, "3.13", done.stderr, tmp_path)
    function, layer = names(tmp_path / "function.zip"), names(tmp_path / "layer.zip")
    assert {"lambda_function.py", "orchestrator.py", "plan.json",
            "functions/RunAuditRule.py"} <= function
    assert not any(name.startswith("faastlane_runtime/") for name in function)
    assert "python/faastlane_runtime/platforms/entry.py" in layer
    assert all(name.startswith("python/") for name in layer)
    assert "runtime python3.13, handler lambda_function.handler" in done.stdout


@pytest.mark.slow  # vendors large packages to exceed the limits
def test_oversized_packages_are_refused_with_the_limit(tmp_path: Path):
    big = write_small_app(tmp_path / "big", big_string=51 * 1024 * 1024)
    openwhisk = faastlane("package", str(big), "--target", "openwhisk", "-o",
                          str(tmp_path / "a.zip"))
    assert openwhisk.code == 2
    assert "over OpenWhisk's limit for an action's code of 48 MB" in openwhisk.stderr
    assert not (tmp_path / "a.zip").exists() and not (tmp_path / "a.zip.tmp").exists()
    # A zip already at -o (an earlier package) stays as it was.
    earlier = tmp_path / "earlier.zip"
    earlier.write_bytes(b"an earlier package")
    again = faastlane("package", str(big), "--target", "openwhisk", "-o", str(earlier))
    assert again.code == 2 and earlier.read_bytes() == b"an earlier package"
    lam = faastlane("package", str(big), "--target", "lambda", "-o", str(tmp_path / "l"))
    assert lam.code == 2
    assert "function.zip is 51" in lam.stderr
    assert "over Lambda's limit for a directly uploaded zip of 50 MB" in lam.stderr


def test_over_250_mb_unzipped_is_refused(tmp_path: Path):
    app = write_small_app(tmp_path / "huge")
    with open(app / "functions" / "zeros.bin", "wb") as handle:  # compresses to ~250 KB
        handle.truncate(251 * 1024 * 1024)
    done = faastlane("package", str(app), "--target", "lambda", "-o", str(tmp_path / "out"))
    assert done.code == 2
    assert "over Lambda's limit for a function and its layers unzipped of 250 MB" \
        in done.stderr


def test_bad_input_is_one_line(small_app: Path, tmp_path: Path):
    missing = faastlane("package", str(tmp_path / "nope"), "--target", "lambda", "-o",
                        str(tmp_path / "out"))
    assert (missing.code, missing.stderr.strip()) == \
        (2, f"faastlane: error: no app folder at {tmp_path / 'nope'}")
    no_runtime = faastlane("package", str(small_app), "--target", "lambda", "--custom-runtime",
                           "--python-prefix", str(tmp_path / "no-python"), "-o",
                           str(tmp_path / "out"))
    assert no_runtime.code == 2
    assert "the cpython-mpk runtime is not built" in no_runtime.stderr
    assert "make -C cpython-mpk" in no_runtime.stderr


def test_a_requirement_pip_cannot_install_names_the_file(tmp_path: Path):
    app = write_small_app(tmp_path / "app")
    (app / "requirements.txt").write_text("./no-such-local-package\n")
    done = faastlane("package", str(app), "--target", "openwhisk", "-o", str(tmp_path / "a.zip"))
    assert done.code == 2
    progress, line = done.stderr.strip().splitlines()  # the install's progress, the error
    assert progress.startswith(f"faastlane: installing {app / 'requirements.txt'} for Python")
    assert line.startswith(f"faastlane: error: pip could not install {app / 'requirements.txt'}")


def test_an_invalid_workflow_lists_its_problems(tmp_path: Path):
    app = write_small_app(tmp_path / "app")
    (app / "workflow.json").write_text('{"StartAt": "Nowhere", "States": {}}')
    done = faastlane("package", str(app), "--target", "openwhisk", "-o", str(tmp_path / "a.zip"))
    assert done.code == 3  # a workflow refused as invalid (the CLI contract)
    assert "/StartAt" in done.stderr
