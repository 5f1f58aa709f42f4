"""Compiled code in what is shipped: every ``.py`` of an action's trees compiled for the
target interpreter, so that a cold start imports bytecode instead of compiling the
action, its runtime and its vendored libraries again (a Lambda's ``/var/task`` is
read-only: there it would compile at every cold start).

The ``.pyc`` files are hash-checked (PEP 552): valid whatever the files' times after
unzipping, and the same bytes for the same sources (the zips stay reproducible). They
are compiled by an interpreter of the target's version -- its magic number is in every
file -- found here (:func:`interpreter_for`); where there is none, the package ships
source only, and says so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from faastlane.checkout import runtime_python


def note(message: str) -> None:
    sys.stderr.write(f"faastlane: note: {message}\n")


def _version_of(python: str) -> str | None:
    try:
        done = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def interpreter_for(version: str, prefix: str | None = None) -> str | None:
    """A Python ``version`` (``3.13``) here: the runtime's own (``prefix``), this one,
    the cpython-mpk runtime (``$FAASTLANE_PYTHON_PREFIX``, a checkout's build), or
    ``python3.13`` on the PATH."""
    candidates = [os.path.join(prefix, "bin", "python3")] if prefix else []
    candidates.append(sys.executable)
    runtime = runtime_python()
    if runtime:
        candidates.append(runtime)
    on_path = shutil.which(f"python{version}")
    if on_path:
        candidates.append(on_path)
    for python in candidates:
        if os.access(python, os.X_OK) and _version_of(python) == version:
            return python
    return None


def cache_tag(version: str) -> str:
    """The ``__pycache__`` tag of CPython ``version``: ``cpython-313``."""
    return "cpython-" + version.replace(".", "")


def compile_trees(folders: list[str], version: str, prefix: str | None = None) -> bool:
    """Compile every ``.py`` under ``folders`` in place for Python ``version``; False
    (and a note on stderr) where no such interpreter is here."""
    python = interpreter_for(version, prefix)
    if python is None:
        note(f"no Python {version} here to compile the package's bytecode with: it ships "
             f"source only, compiled at each cold start (install python{version}, or set "
             "FAASTLANE_PYTHON_PREFIX to one)")
        return False
    for folder in folders:
        # -s/-p: the recorded file names do not hold this scratch folder (the same bytes
        # every time; an import puts the real path in anyway). -f: pip's own .pyc of
        # a vendored package are timestamp-checked, and rewritten here.
        done = subprocess.run(
            [python, "-m", "compileall", "-q", "-f", "-j", "0",
             "--invalidation-mode", "checked-hash", "-s", folder, "-p", "/", folder],
            capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            # A file the target cannot compile (test data of a vendored package written
            # for another version, say) stays source only; the others are compiled.
            failed = [line for line in done.stdout.splitlines() if line.startswith("***")]
            note(f"{len(failed) or 'some'} file(s) under {os.path.basename(folder)} did not "
                 f"compile for Python {version}; they ship as source")
    return True
