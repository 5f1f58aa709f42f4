"""Fixtures for the tests of ``cpython-mpk/build.sh``.

Compiling CPython takes minutes, so these tests drive the real script against
*miniature source trees*: tarballs with CPython's layout whose ``configure``
and ``Makefile`` do almost nothing, and whose installed ``bin/python3`` hands
over to the Python running the tests (it imports ssl, sqlite3, ... and has pip,
so the script's smoke test checks something real).  Every stage of the script
itself - verification, patching, module wiring, keying, locking, staging,
marking complete, linking - runs for real.

Each test gets its own copy of the script folder (so ``build`` links are made
there, never in the checkout) and its own ``FAASTLANE_CACHE``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CPYTHON_MPK = REPO / "cpython-mpk"


def pinned(field: str) -> str:
    """A ``field=value`` line of cpython-mpk/VERSION."""
    for line in (CPYTHON_MPK / "VERSION").read_text().splitlines():
        if line.startswith(field + "="):
            return line.split("=", 1)[1]
    raise KeyError(field)


# configure writes a Makefile that "builds" and installs a venv of the test's
# Python (so sys.prefix is the install prefix, as for the real runtime) that
# sees the test's pip and, when Modules/Setup.local lists _faastlane, a
# stand-in for the builtin module.  FAKE_FAIL=make|install, FAKE_SLEEP and FAKE_BROKEN (an
# interpreter that prints this and fails) let a test break a stage; FAKE_RUNS
# counts configure runs.
FAKE_CONFIGURE = """\
#!/bin/sh
set -eu
prefix=""
for arg in "$@"; do
    case $arg in --prefix=*) prefix=${arg#--prefix=} ;; esac
done
[ -n "$prefix" ] || { echo "configure: no --prefix" >&2; exit 1; }
[ -z "${FAKE_RUNS:-}" ] || echo configure >>"$FAKE_RUNS"
# A real configure takes seconds.  build.sh signals its heartbeat subshell when
# a command ends; a command that ends within the fork can see that TERM run the
# script's own traps in the subshell (the work folder deleted under the build).
# The fix (a heartbeat that polls) changes the runtime's cache key, so it waits
# for the next change that rebuilds the runtime anyway (issue 36's note).
sleep 0.1
printf 'prefix = %s\\n' "$prefix" >Makefile
cat >>Makefile <<'EOF'
all:
\t@sleep $${FAKE_SLEEP:-0.1}
\t@test "$${FAKE_FAIL:-}" != make || { echo "fake make: failing on purpose" >&2; exit 2; }
install:
\tmkdir -p $(DESTDIR)$(prefix)
\t$${FAKE_PYTHON} -m venv --without-pip $(DESTDIR)$(prefix)
\techo "$${FAKE_PIP_PATH}" >$$(echo $(DESTDIR)$(prefix)/lib/python3*/site-packages)/fake-pip.pth
\tcp Modules/Setup.local $(DESTDIR)$(prefix)/Setup.local
\t@# "Compile in" _faastlane exactly when Setup.local asks for it.
\tif grep -q '^_faastlane ' Modules/Setup.local; then \\
\t    cd $$(echo $(DESTDIR)$(prefix)/lib/python3*/site-packages) && \\
\t    echo 'PRESENT = True' >_faastlane.py && \\
\t    echo 'import sys; sys.builtin_module_names += ("_faastlane",)' >fake-builtin.pth; fi
\t@# bin/python3 is a symlink to the test's Python: replace it, never write through it
\t@test -z "$${FAKE_BROKEN:-}" || { rm -f $(DESTDIR)$(prefix)/bin/python3 && \\
\t    printf '#!/bin/sh\\necho "%s" >&2; exit 1\\n' "$${FAKE_BROKEN}" \\
\t        >$(DESTDIR)$(prefix)/bin/python3 && \\
\t    chmod +x $(DESTDIR)$(prefix)/bin/python3; }
\t@test "$${FAKE_FAIL:-}" != install || { echo "fake install: failing on purpose" >&2; exit 2; }
EOF
"""


def make_source_tarball(
    dest: Path,
    *,
    version: tuple[int, int, int] = (3, 13, 5),
    top: str | None = None,
    files: dict[str, str] | None = None,
) -> Path:
    """Write a .tar.gz of a miniature CPython tree and return its path."""
    top = top or "Python-{}.{}.{}".format(*version)
    major, minor, micro = version
    tree = {
        "Include/patchlevel.h": textwrap.dedent(
            f"""\
            #define PY_MAJOR_VERSION        {major}
            #define PY_MINOR_VERSION        {minor}
            #define PY_MICRO_VERSION        {micro}
            """
        ),
        "configure": FAKE_CONFIGURE,
        "Makefile.pre.in": "# fake\n",
        "Python/ceval.c": "/* fake */\n",
        "Modules/Setup.stdlib.in": "# fake\n",
        "Modules/posixmodule.c": "/* fake */\n",
        "Objects/obmalloc.c": "".join(f"line {i}\n" for i in range(1, 41)),
    }
    tree.update(files or {})
    root = dest.parent / (dest.name + ".tree")
    for rel, text in tree.items():
        path = root / top / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if rel == "configure":
            path.chmod(0o755)
    with tarfile.open(dest, "w:gz") as tar:
        tar.add(root / top, arcname=top)
    shutil.rmtree(root)
    return dest


@dataclass
class Script:
    """A private copy of cpython-mpk/ (build.sh + VERSION) and its cache."""

    home: Path
    cache: Path

    @property
    def patches(self) -> Path:
        return self.home / "patches"

    @property
    def modules(self) -> Path:
        return self.home / "Modules"

    def run(self, *args: str, env: dict[str, str] | None = None, timeout: float = 60):
        full_env = dict(os.environ)
        full_env.update(fake_env(self.cache))
        full_env.update(env or {})
        return subprocess.run(
            ["bash", str(self.home / "build.sh"), *args],
            capture_output=True,
            text=True,
            env=full_env,
            timeout=timeout,
        )


def fake_env(cache: Path) -> dict[str, str]:
    """Environment for build.sh runs on miniature trees."""
    try:
        import pip
    except ImportError:  # the smoke test of a build needs `python3 -m pip`
        pytest.fail(f"{sys.executable} has no pip; run the tests from a venv")
    return {"FAASTLANE_CACHE": str(cache), "FAKE_PYTHON": sys.executable,
            "FAKE_PIP_PATH": str(Path(pip.__file__).resolve().parents[1])}


@pytest.fixture
def script(tmp_path: Path) -> Script:
    home = tmp_path / "cpython-mpk"
    home.mkdir()
    for name in ("build.sh", "VERSION"):
        shutil.copy2(CPYTHON_MPK / name, home / name)
    (home / "patches").mkdir()
    (home / "Modules").mkdir()
    return Script(home=home, cache=tmp_path / "cache")


@pytest.fixture
def fake_source(tmp_path: Path) -> Path:
    return make_source_tarball(tmp_path / "Python-3.13.5.tar.gz")


def git(cwd: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org")
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True, env=env).stdout
