"""Build and run gate_bench.c against the _faastlane C layers, then time the Python
gates in the runtime.  Prints what it measured; asserts nothing (a benchmark).

    python tests/mpk/bench/run_bench.py [PYTHON]

PYTHON (default: cpython-mpk/build/bin/python3) must import _faastlane.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODULES = HERE.parents[2] / "cpython-mpk" / "Modules"
RUNTIME = HERE.parents[2] / "cpython-mpk" / "build" / "bin" / "python3"

PYTHON_GATES = """
import timeit, _faastlane
d = _faastlane.Domain()
n = 200000
best = min(timeit.repeat("e(); x()", globals={"e": d.enter, "x": d.exit}, number=n, repeat=7))
print(f"Python d.enter(); d.exit(): {best / n * 1e9:.1f} ns")
best = min(timeit.repeat("with d: pass", globals={"d": d}, number=n, repeat=7))
print(f"Python 'with d: pass': {best / n * 1e9:.1f} ns")
"""


def main(argv: list[str]) -> int:
    """Run both benchmarks; return a process exit status."""
    python = argv[1] if len(argv) > 1 else str(RUNTIME)
    sources = [str(p) for p in sorted(MODULES.glob("mpk_*.c"))]
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "gate_bench"
        subprocess.run(
            [
                "gcc",
                "-O2",
                "-std=gnu11",
                "-I",
                str(MODULES),
                str(HERE / "gate_bench.c"),
                *sources,
                "-o",
                str(exe),
                "-pthread",
            ],
            check=True,
        )
        subprocess.run([str(exe)], check=True)
    subprocess.run([python, "-c", PYTHON_GATES], check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
