"""Third-party packages the functions import, installed next to them (``pip --target``).

Requirements come from ``APP/requirements.txt`` and ``APP/functions/NAME/requirements.txt``.
Installs are cached under ``$FAASTLANE_CACHE/vendor/<hash>`` keyed by the requirements'
text and the target interpreter, so re-packaging an unchanged app does not call pip.
When the target Python differs from this one (an OpenWhisk ``python:3.11`` kind, the
cpython-mpk 3.13 runtime), pip is asked for that version's Linux wheels only: building
from source on this machine could produce extensions the target cannot load.

The AWS SDK: Lambda's managed Python runtimes carry boto3 and its own dependencies on
``sys.path``, so a layer for them leaves those out (boto3 + botocore are ~17 MB); a
target without it (the custom runtime, OpenWhisk's Python kinds) gets boto3 when the app
needs it -- a function imports boto3/botocore, or the workflow calls AWS services -- even
if no requirements file lists it. :func:`vendor_app` decides; :func:`vendor` installs.
"""

from __future__ import annotations

import ast
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable

from faastlane import cache, progress
from faastlane.app.folder import FUNCTIONS_DIR
from faastlane.app.requirements import requirement_files

from .errors import VendoringFailed

# The Linux wheels both platforms' x86_64 hosts load.
WHEEL_PLATFORM = "manylinux2014_x86_64"

AWS_SDK = "boto3"
# What the managed Lambda Python runtimes provide (boto3 and the packages only it uses).
# Its other dependencies (urllib3, python-dateutil, six) stay vendored when something
# asks for them: other packages may need versions the runtime's copy does not have.
RUNTIME_SDK_PACKAGES = frozenset({"boto3", "botocore", "s3transfer", "jmespath"})
_SDK_MODULES = frozenset({"boto3", "botocore"})


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


def imports_aws_sdk(app_root: str, code_dirs: Iterable[str] = ()) -> bool:
    """Whether any function's Python source imports boto3 or botocore (anywhere in it)."""
    folders = list(code_dirs) or [os.path.join(app_root, FUNCTIONS_DIR)]
    paths = [path for folder in folders
             for path in glob.glob(os.path.join(folder, "**", "*.py"), recursive=True)]
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                tree = ast.parse(handle.read(), path)
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue  # validation reports unreadable functions; here they import nothing
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom)
                     and node.level == 0 and node.module else [])
            if any(name.split(".")[0] in _SDK_MODULES for name in names):
                return True
    return False


def vendor_app(app_root: str, python_version: str, runtime_has_sdk: bool,
               uses_aws_services: bool = False, code_dirs: Iterable[str] = ()) -> str | None:
    """The app's requirements installed for a target: without the AWS SDK when the
    target's runtime has it (``runtime_has_sdk``), with it when the runtime lacks it and
    the app needs it (a function imports it, or ``uses_aws_services``: the workflow's
    service integrations, which the runtime calls through boto3)."""
    code_dirs = list(code_dirs)
    requirements = requirement_files(app_root, code_dirs)
    if runtime_has_sdk:
        return vendor(requirements, python_version, exclude=RUNTIME_SDK_PACKAGES)
    needs_sdk = uses_aws_services or imports_aws_sdk(app_root, code_dirs)
    return vendor(requirements, python_version, [AWS_SDK] if needs_sdk else None)


def _drop_distributions(folder: str, names: frozenset[str]) -> None:
    """Remove installed distributions (their files as their RECORD lists them, and the
    .dist-info) from a ``pip --target`` folder."""
    for info in glob.glob(os.path.join(folder, "*.dist-info")):
        name = os.path.basename(info).split("-", 1)[0].lower().replace("_", "-")
        if name not in names:
            continue
        record = os.path.join(info, "RECORD")
        tops = set()
        if os.path.isfile(record):
            with open(record, encoding="utf-8") as handle:
                tops = {line.split(",", 1)[0].split("/", 1)[0] for line in handle if line.strip()}
        for top in tops | {os.path.basename(info)}:
            path = os.path.join(folder, top)
            if top in ("..", "bin") or not os.path.exists(path):
                continue
            if os.path.isdir(path):
                shutil.rmtree(path)
            else:
                os.remove(path)


def _shown(path: str) -> str:
    """A path as a progress line shows it: relative below the working directory."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def vendor(requirements: list[str], python_version: str | None = None,
           packages: list[str] | None = None,
           exclude: frozenset[str] = frozenset()) -> str | None:
    """Install requirements files (and extra package specs) for python_version, less the
    distributions named in ``exclude`` (what the target provides); the folder holding
    them (cached), or None when there is nothing to install."""
    if not requirements and not packages:
        return None
    version = python_version or _this_python()
    texts = []
    for path in requirements:
        with open(path, encoding="utf-8") as handle:
            texts.append(os.path.abspath(os.path.dirname(path)) + "\n" + handle.read())
    texts += packages or []
    if exclude:
        texts.append("exclude:" + ",".join(sorted(exclude)))
    folder = os.path.join(cache.cache_root(), "vendor", cache.key(version, *texts))
    if os.path.isdir(folder):
        return folder
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".vendor-", dir=os.path.dirname(folder))
    command = _pip_command(requirements, staging, version) + list(packages or [])
    # Relative paths in a requirements file are relative to pip's working directory.
    cwd = os.path.dirname(os.path.abspath(requirements[0])) if requirements else None
    what = ", ".join([_shown(r) for r in requirements] + list(packages or []))
    with progress.step(f"installing {what} for Python {version}"):
        done = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise VendoringFailed(f"pip could not install "
                                  f"{', '.join(requirements + (packages or []))} "
                                  f"for Python {version}: {last}")
    for junk in ("bin", "__pycache__"):
        shutil.rmtree(os.path.join(staging, junk), ignore_errors=True)
    _drop_distributions(staging, exclude)
    try:
        os.rename(staging, folder)
    except OSError:  # another process vendored the same set meanwhile
        shutil.rmtree(staging, ignore_errors=True)
    return folder
