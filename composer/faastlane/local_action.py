"""A composed action run on this machine (``faastlane run``, ``faastlane serve``): where
its temporary folder goes, and how it is stopped with everything it started."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile

from faastlane.runtime.platforms import shutdown


def scratch_parent() -> str | None:
    """Where a run's temporary action goes: ``$TMPDIR`` if set, else not under /tmp,
    which functions in sandboxes may write (as on Lambda), but the action's code they
    must not (runtime.sandbox)."""
    if os.environ.get("TMPDIR") or not os.access("/var/tmp", os.W_OK):
        return None
    return "/var/tmp"


# A run's or serve's temporary folder holds this file: the pid and start time of the
# command that made it. A later command removes a folder whose maker is gone (killed by
# SIGKILL, which nothing can clean up after) -- and only folders that hold it.
OWNER_FILE = ".faastlane-owner"
SCRATCH_PREFIXES = ("faastlane-run-", "faastlane-serve-")


def _started(pid: int) -> str | None:
    """Process ``pid``'s start time (clock ticks after boot), None if there is none:
    with the pid, it names one process, whatever reuses the pid later."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def claim(scratch: str) -> None:
    """Mark ``scratch`` as this process's (see :data:`OWNER_FILE`)."""
    with open(os.path.join(scratch, OWNER_FILE), "w", encoding="ascii") as owner:
        owner.write(f"{os.getpid()} {_started(os.getpid())}\n")


def sweep(parent: str | None) -> None:
    """Remove the temporary folders in ``parent`` (None: the default temporary folder)
    that a faastlane command made and that outlived it."""
    parent = parent or tempfile.gettempdir()
    try:
        entries = os.listdir(parent)
    except OSError:
        return
    for entry in entries:
        if not entry.startswith(SCRATCH_PREFIXES):
            continue
        folder = os.path.join(parent, entry)
        try:
            with open(os.path.join(folder, OWNER_FILE), encoding="ascii") as owner:
                pid, started = owner.read().split()
        except (OSError, ValueError):
            continue  # not claimed (not ours, or being made now): left alone
        if _started(int(pid)) != started:
            shutil.rmtree(folder, ignore_errors=True)


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
