"""The built runtime itself: cpython-mpk/build/bin/python3.

These need `make -C cpython-mpk` to have run (CI does it first); a missing or
stale runtime is a failure with the command to fix it, never a skip.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from build_support import CPYTHON_MPK, pinned

BUILD = CPYTHON_MPK / "build"
PYTHON = BUILD / "bin" / "python3"


def run(*args: str, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, **kwargs)


@pytest.fixture(scope="module")
def python() -> Path:
    if not PYTHON.exists():
        pytest.fail(f"{PYTHON} does not exist: run `make -C cpython-mpk` first")
    return PYTHON


def assert_up_to_date() -> None:
    key = run("bash", str(CPYTHON_MPK / "build.sh"), "key")
    assert key.returncode == 0, key.stderr
    linked = BUILD.resolve()
    assert linked.name == key.stdout.strip(), (
        f"{BUILD} -> {linked} is stale (inputs now give key {key.stdout.strip()}): "
        "run `make -C cpython-mpk`")
    assert (linked / ".faastlane-build-complete").is_file()


def test_runtime_is_built_from_the_current_inputs(python):
    assert_up_to_date()


def test_unchanged_rebuild_is_a_cache_hit(python):
    assert_up_to_date()  # else the "rebuild" below would compile CPython
    started = time.monotonic()
    result = run("bash", str(CPYTHON_MPK / "build.sh"), "build", "--no-deps")
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert "cache hit" in result.stdout
    assert took < 15, f"a cache hit took {took:.1f}s"


def test_is_the_pinned_cpython_with_its_prefix_in_the_cache(python):
    out = run(str(python), "-c",
              "import sys, sysconfig; print(sys.version.split()[0]); print(sys.prefix);"
              "print(sysconfig.get_config_var('CONFIG_ARGS'))")
    assert out.returncode == 0, out.stderr
    version, prefix, config_args = out.stdout.splitlines()
    assert version == pinned("version")
    assert Path(prefix).resolve() == BUILD.resolve()
    assert "--enable-optimizations" not in config_args and "--with-lto" not in config_args


def test_standard_extension_modules_import(python):
    mods = "ssl, sqlite3, lzma, bz2, ctypes, readline, zlib, uuid, curses, decimal, dbm.gnu, venv"
    out = run(str(python), "-c",
              f"import {mods}, ssl, sqlite3\n"
              "ssl.create_default_context()\n"
              "sqlite3.connect(':memory:').execute('select 1')\n"
              "import ctypes; assert ctypes.CDLL(None).getpid() > 0")
    assert out.returncode == 0, out.stderr


def test_faastlane_is_builtin_when_its_source_exists(python):
    out = run(str(python), "-c", "import sys; print('_faastlane' in sys.builtin_module_names)")
    assert out.returncode == 0, out.stderr
    expected = (CPYTHON_MPK / "Modules" / "_faastlanemodule.c").is_file()
    assert out.stdout.strip() == str(expected)
    if expected:
        avail = run(str(python), "-c", "import _faastlane; print(_faastlane.available())")
        assert avail.returncode == 0, avail.stderr  # never SIGILL, with or without keys


def test_installs_numpy_and_pillow_wheels_from_pypi(python, tmp_path):
    # In a venv, so the shared cached runtime stays pristine.
    venv = tmp_path / "venv"
    made = run(str(python), "-m", "venv", str(venv))
    assert made.returncode == 0, made.stderr
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
    pip = run(str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--only-binary=:all:",
              "numpy", "Pillow", env=env, timeout=600)
    assert pip.returncode == 0, pip.stderr
    out = run(str(venv / "bin" / "python"), "-c",
              "import numpy, PIL.Image\n"
              "a = numpy.arange(12, dtype=numpy.uint8).reshape(3, 4)\n"
              "img = PIL.Image.fromarray(a)\n"
              "assert numpy.array_equal(numpy.asarray(img), a)\n"
              "print(numpy.__version__, PIL.__version__)")
    assert out.returncode == 0, out.stderr
    print(out.stdout, file=sys.stderr)
