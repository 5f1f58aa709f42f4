"""Extensions' process-wide caches stay shared when a function grows them.

No keys here, so the test emulates them: after a thread inside a private heap has used
numpy, the heap's pages are made inaccessible (``mprotect PROT_NONE``, what the owner's
protection key does to every other thread) and the same numpy calls run outside. numpy's
ufunc dispatch cache reallocates its bucket table as it fills; grown inside the domain,
the table would be private and the outside calls would die of SIGSEGV -- the control
shows exactly that, with the cache code not registered as shared.
"""

from __future__ import annotations

import signal
import subprocess

import key_emulation
from probe_runs import runtime_with_packages

SNIPPET = """
import json, sys
import numpy as np
import _faastlane
from faastlane.runtime.isolation import library_caches
from key_emulation import use_inside_then_revoke

warnings = library_caches.share_loaded() if sys.argv[1] == "register" else None
domain = _faastlane.Domain(private_heap=True)
TYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
         np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128]

def use_numpy():
    # Dtype combinations this process has not used: each adds dispatch-cache entries.
    total = 0.0
    for a in TYPES:
        for b in TYPES:
            total += float(np.add(np.ones(2, a), np.ones(2, b)).real.sum())
        total += float(np.maximum.reduce(np.arange(3, dtype=a)).real)
    return total

use_inside_then_revoke(domain, use_numpy)
print(json.dumps({"total": use_numpy(), "warnings": warnings}), flush=True)
"""


def run(runtime: str, mode: str) -> subprocess.CompletedProcess[str]:
    return key_emulation.run(runtime_with_packages(runtime, ("numpy",)), SNIPPET, mode)


def test_numpy_dispatch_cache_grown_inside_a_domain_stays_shared(runtime: str) -> None:
    done = run(runtime, "register")
    assert done.returncode == 0, done.stderr
    assert '"warnings": []' in done.stdout


def test_control_unregistered_cache_is_private_and_faults_outside(runtime: str) -> None:
    done = run(runtime, "control")
    assert done.returncode == -signal.SIGSEGV, (done.returncode, done.stdout, done.stderr)
