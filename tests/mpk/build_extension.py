"""Build ``cpython-mpk/Modules/*.c`` as an ordinary ``_faastlane`` extension.

The cpython-mpk runtime compiles these sources into the interpreter as a builtin
module.  This helper builds the very same files as a shared extension for the
interpreter that runs it, with warnings as errors, so the C code is checked
against another CPython's headers and can be tried before the runtime exists:

    python tests/mpk/build_extension.py OUTDIR
    PYTHONPATH=OUTDIR FAASTLANE_TEST_PYTHON=$(command -v python) pytest tests/mpk
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

MODULES_DIR = Path(__file__).resolve().parents[2] / "cpython-mpk" / "Modules"
# CPython's own warning set (configure.ac), plus -Werror.
WARNINGS = (
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wno-unused-parameter",
    "-Wno-missing-field-initializers",
    "-Wstrict-prototypes",
)


def compile_command(out_dir: Path) -> list[str]:
    """The gcc command line that builds the extension into ``out_dir``."""
    sources = sorted(str(p) for p in MODULES_DIR.glob("*.c"))
    target = out_dir / ("_faastlane" + sysconfig.get_config_var("EXT_SUFFIX"))
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    return [
        *cc,
        "-shared",
        "-fPIC",
        "-O2",
        # Only PyInit__faastlane is exported, as in the runtime: the _PyMPK_* symbols
        # must never bind to another copy (e.g. the runtime's builtin one).
        "-fvisibility=hidden",
        "-std=c11",  # what CPython builds builtin modules with
        *WARNINGS,
        "-I",
        sysconfig.get_paths()["include"],
        "-I",
        str(MODULES_DIR),
        *sources,
        "-o",
        str(target),
        "-pthread",
    ]


def build(out_dir: Path) -> Path:
    """Compile the extension; return its path.  Raises CalledProcessError."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cmd = compile_command(out_dir)
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return Path(cmd[cmd.index("-o") + 1])


def main(argv: list[str]) -> int:
    """Command-line entry: ``build_extension.py OUTDIR``."""
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        print(build(Path(argv[1])))
    except subprocess.CalledProcessError as exc:
        sys.stderr.write(exc.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
