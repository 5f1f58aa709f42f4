"""The ``_faastlane`` C sources stay portable: they build warning-free as an ordinary
extension against the headers of the interpreter running pytest (3.11 on a stock host,
3.13 on the cpython-mpk runtime), and that extension works."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from build_extension import build


def test_sources_build_with_warnings_as_errors_and_the_extension_works(tmp_path: Path) -> None:
    extension = build(tmp_path)  # raises CalledProcessError with gcc's diagnostics
    # Loaded by path: a runtime with the builtin _faastlane would otherwise shadow it.
    code = textwrap.dedent(
        f"""
        import importlib.machinery, importlib.util
        loader = importlib.machinery.ExtensionFileLoader("_faastlane", {str(extension)!r})
        spec = importlib.util.spec_from_loader("_faastlane", loader)
        f = importlib.util.module_from_spec(spec)
        loader.exec_module(f)
        d = f.Domain()
        address = d.alloc(64)
        with d:
            assert f.current_domain() is d
        d.destroy()
        print(f.slot_of(address) == d.slot, f.counters()["enters"],
              f.__file__ == {str(extension)!r})
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "1", "True"]
