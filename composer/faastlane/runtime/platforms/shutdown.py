"""Stopping a local run on SIGTERM, SIGINT or SIGHUP: every process it started goes too.

``faastlane run``, ``timeout``, CI runners and supervisors stop a run with a signal. The
Orchestrator has children of its own -- warm pool workers, a forked child per Parallel
branch or per function under process isolation, the supervised child under mpk -- and a
signal to it alone would leave them running. So the local entry point installs a
handler that kills every descendant (found through ``/proc``: they may belong to any
process group) and then exits with 128 + the signal's number, as a shell reports it.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from types import FrameType

SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid``, parents before their children."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue  # gone meanwhile
        # The command name may hold spaces and parentheses: the fields follow the last ')'.
        fields = stat[stat.rfind(b")") + 2:].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    queue = [pid]
    while queue:
        for child in children.get(queue.pop(0), []):
            found.append(child)
            queue.append(child)
    return found


_PR_SET_CHILD_SUBREAPER = 36


def kill_descendants(reap_seconds: float = 2.0) -> None:
    """SIGKILL every process this one started, directly or not (a stopped child too),
    and reap them: none is left behind, not even as a zombie waiting for init.

    This process becomes a child subreaper first, so that the children of a killed
    parent (a zygote's sandboxes) are handed to it rather than to init, whose reaping
    is late or, in a container whose first process is not an init, never."""
    _become_subreaper()
    for child in descendants(os.getpid()):
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + reap_seconds
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # every one reaped
        if pid == 0:
            time.sleep(0.005)


def _become_subreaper() -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: orphans go to init, as before


def _stop(signum: int, _frame: FrameType | None) -> None:
    kill_descendants()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(128 + signum)


def install() -> None:
    """Stop this process and everything it started on SIGTERM, SIGINT and SIGHUP."""
    for signum in SIGNALS:
        signal.signal(signum, _stop)


_PR_SET_PDEATHSIG = 1


def stop_with(parent: int) -> None:
    """Be sent SIGTERM (and so stop everything this process started, as :func:`install`
    does) when process ``parent`` -- the ``faastlane`` command that started this run --
    dies, even by SIGKILL; if it is gone already, stop now."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return  # not Linux
    if os.getppid() != parent:  # it died before the link was made
        os.kill(os.getpid(), signal.SIGTERM)
