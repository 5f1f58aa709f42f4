"""A composed action run on this machine (``faastlane run``, ``faastlane serve``): where
its temporary folder goes, and how it is stopped with everything it started."""

from __future__ import annotations

import os
import signal
import subprocess

from faastlane.runtime.platforms import shutdown


def scratch_parent() -> str | None:
    """Where a run's temporary action goes: ``$TMPDIR`` if set, else not under /tmp,
    which functions in sandboxes may write (as on Lambda), but the action's code they
    must not (runtime.sandbox)."""
    if os.environ.get("TMPDIR") or not os.access("/var/tmp", os.W_OK):
        return None
    return "/var/tmp"


def stop(process: subprocess.Popen[bytes], grace_seconds: float = 5.0) -> None:
    """SIGTERM the Orchestrator (its handler stops what it started); whatever is left
    after the grace period is killed, its descendants first."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(grace_seconds)
            return
        except subprocess.TimeoutExpired:
            pass
    for pid in [*shutdown.descendants(process.pid), process.pid]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()
