"""Protection keys emulated with mprotect, for native tests of process-wide caches.

No keys on this host: a test's snippet uses a library on a thread inside a private heap,
then :func:`revoke` makes the heap's pages inaccessible (``PROT_NONE``: what the owner's
key does to every other thread), and the snippet uses the library again outside. A cache
the first use left in the heap kills the process with SIGSEGV; a shared one does not.
:func:`run` starts such a snippet (host side); the snippet imports this module too.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Not from probe_runs: the snippets import this module, and pytest is not theirs.
HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def use_inside_then_revoke(domain: Any, body: Callable[[], object]) -> None:
    """Run ``body`` on a thread inside ``domain``, then revoke every access to its heap."""

    def inside() -> None:
        with domain:
            body()

    thread = threading.Thread(target=inside)
    thread.start()
    thread.join()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    assert libc.mprotect(domain.base, domain.committed, 0) == 0  # the owner's key


def run(python: str, snippet: str, mode: str) -> subprocess.CompletedProcess[str]:
    """``snippet`` under ``python`` with ``mode`` as its argument, the runtime's sources
    and this folder importable."""
    path = os.pathsep.join(filter(None, [str(REPO / "composer"), str(HERE),
                                         os.environ.get("PYTHONPATH")]))
    return subprocess.run([python, "-c", textwrap.dedent(snippet), mode],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=path, FAASTLANE_MPK="off"))
