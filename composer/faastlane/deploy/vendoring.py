"""Third-party packages the functions import, installed next to them (``pip --target``).

Requirements come from ``APP/requirements.txt`` and ``APP/functions/NAME/requirements.txt``.
Installs are cached under ``$FAASTLANE_CACHE/vendor/<hash>`` keyed by the requirements'
text and the target interpreter, so re-packaging an unchanged app does not call pip.
When the target Python differs from this one (an OpenWhisk ``python:3.11`` kind, the
cpython-mpk 3.13 runtime), pip is asked for that version's Linux wheels only: building
from source on this machine could produce extensions the target cannot load.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable

from faastlane import cache
from faastlane.compose.app import FUNCTIONS_DIR, App

from .errors import VendoringFailed

REQUIREMENTS = "requirements.txt"
# The Linux wheels both platforms' x86_64 hosts load.
WHEEL_PLATFORM = "manylinux2014_x86_64"


def app_requirements(app: App) -> list[str]:
    """The requirements files of an app folder or of a template's code folders."""
    return requirement_files(app.root, app.code.values())


def requirement_files(app_root: str, code_dirs: Iterable[str] = ()) -> list[str]:
    """The app's requirements files, the app-wide one first, then per function by name;
    for a template, those of its functions' code folders (``code_dirs``)."""
    found = []
    top = os.path.join(app_root, REQUIREMENTS)
    if os.path.isfile(top):
        found.append(top)
    functions = os.path.join(app_root, FUNCTIONS_DIR)
    folders = list(code_dirs) or ([os.path.join(functions, name)
                                   for name in sorted(os.listdir(functions))]
                                  if os.path.isdir(functions) else [])
    for folder in folders:
        candidate = os.path.join(folder, REQUIREMENTS)
        if os.path.isfile(candidate) and candidate not in found:
            found.append(candidate)
    return found


def _this_python() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def _pip_command(files: list[str], target: str, python_version: str) -> list[str]:
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
               "--no-warn-script-location", "--target", target]
    if python_version != _this_python():
        command += ["--python-version", python_version, "--platform", WHEEL_PLATFORM,
                    "--implementation", "cp", "--only-binary=:all:"]
    for path in files:
        command += ["-r", path]
    return command


def vendor(requirements: list[str], python_version: str | None = None,
           packages: list[str] | None = None) -> str | None:
    """Install requirements files (and extra package specs) for python_version; the
    folder holding them (cached), or None when there is nothing to install."""
    if not requirements and not packages:
        return None
    version = python_version or _this_python()
    texts = []
    for path in requirements:
        with open(path, encoding="utf-8") as handle:
            texts.append(os.path.abspath(os.path.dirname(path)) + "\n" + handle.read())
    texts += packages or []
    folder = os.path.join(cache.cache_root(), "vendor", cache.key(version, *texts))
    if os.path.isdir(folder):
        return folder
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".vendor-", dir=os.path.dirname(folder))
    command = _pip_command(requirements, staging, version) + list(packages or [])
    # Relative paths in a requirements file are relative to pip's working directory.
    cwd = os.path.dirname(os.path.abspath(requirements[0])) if requirements else None
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise VendoringFailed(f"pip could not install {', '.join(requirements + (packages or []))} "
                              f"for Python {version}: {last}")
    for junk in ("bin", "__pycache__"):
        shutil.rmtree(os.path.join(staging, junk), ignore_errors=True)
    try:
        os.rename(staging, folder)
    except OSError:  # another process vendored the same set meanwhile
        shutil.rmtree(staging, ignore_errors=True)
    return folder
