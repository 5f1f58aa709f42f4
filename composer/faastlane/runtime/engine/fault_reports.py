"""Protection-key faults as workflow errors that name the functions involved.

With ``--isolation mpk`` a thread that touches another function's private heap dies of
``SIGSEGV`` (``SEGV_PKUERR``), and its whole process with it: one thread of an
interpreter cannot be killed alone, and nothing it half-did can be trusted. So the
process running functions in domains is supervised: it appends to a *fault log* one line
per domain it creates (slot, key, function) and, from ``_faastlane``'s async-signal-safe
fault reporter, one line per fault (address, key, owner and faulting slots). The
supervisor, seeing its child die of a signal, reads the log and reports
``Faastlane.IsolationViolation`` naming the function that faulted and the function whose
memory it touched -- never a silent leak, never a hang.

The log is an unlinked temporary file opened ``O_APPEND``: forked Parallel branches
inherit it and write to the same place. Standard library only, and no imports of the
runtime's other modules: the action server (a script in the runtime image) reads logs too.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass

ISOLATION_VIOLATION = "Faastlane.IsolationViolation"
_FAULT = re.compile(r"faastlane-fault: (?P<fields>.*)")
_DOMAIN = re.compile(r"faastlane-domain: slot=(?P<slot>\d+) key=(?P<key>\S+) "
                     r"function=(?P<function>.*)")

LOG_VARIABLE = "FAASTLANE_FAULT_LOG"  # the log's descriptor, handed to a launched action

_log_fd: int | None = None


def open_log() -> int:
    """Create a fault log (an unlinked ``O_APPEND`` file) and use it in this process."""
    global _log_fd
    _log_fd = new_log()
    return _log_fd


def new_log() -> int:
    """An unlinked temporary file, open for appending and reading."""
    path = os.path.join(tempfile.gettempdir(), f"faastlane-faults-{os.getpid()}-"
                                               f"{os.urandom(6).hex()}")
    handle = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
    os.unlink(path)
    return handle


def adopt_log(environ: dict[str, str] | None = None) -> None:
    """Use the log a supervising process handed over in ``FAASTLANE_FAULT_LOG``."""
    global _log_fd
    value = (os.environ if environ is None else environ).get(LOG_VARIABLE)
    if value and value.isdigit():
        _log_fd = int(value)
        install_reporter()


def install_reporter() -> None:
    """Send this process's faults to the log (a no-op without one)."""
    if _log_fd is None:
        return
    try:
        import _faastlane
    except ImportError:
        return  # a stock interpreter has no domains: loading them says so
    _faastlane.install_fault_reporter(_log_fd)


def announce(slot: int, key: int | None, function: str) -> None:
    """Record which function owns a domain (before any thread enters it)."""
    if _log_fd is not None:
        os.write(_log_fd, f"faastlane-domain: slot={slot} key={key} "
                          f"function={function}\n".encode())


@dataclass(frozen=True)
class Fault:
    address: str
    pkey: int
    owner: str | None  # the function whose slot was touched, if any
    thread: str | None  # the function running on the faulting thread, if any

    def error(self) -> tuple[str, str]:
        """The ASL error and cause to report."""
        who = f"function {self.thread!r}" if self.thread else "the Orchestrator"
        whose = (f"the private heap of function {self.owner!r}" if self.owner
                 else "memory of no live domain")
        return ISOLATION_VIOLATION, (f"{who} touched {whose} at {self.address} (protection "
                                     f"key {self.pkey}): protection-key fault, the workflow "
                                     "was stopped")


def read_fault(log_fd: int | None = None) -> Fault | None:
    """The latest fault in the log (default: this process's), slots mapped to functions:
    a process dies of its first fault, so the latest is the one just reported."""
    log_fd = _log_fd if log_fd is None else log_fd
    if log_fd is None:
        return None
    text = os.pread(log_fd, 1 << 20, 0).decode(errors="replace")
    owners: dict[int, str] = {}
    latest: Fault | None = None
    for line in text.splitlines():
        domain = _DOMAIN.match(line)
        if domain:
            owners[int(domain["slot"])] = domain["function"]
            continue
        fault = _FAULT.match(line)
        if fault:
            fields = dict(f.split("=", 1) for f in fault["fields"].split() if "=" in f)
            latest = Fault(address=fields.get("addr", "?"), pkey=int(fields.get("pkey", -1)),
                           owner=owners.get(int(fields.get("owner_slot", -1))),
                           thread=owners.get(int(fields.get("thread_slot", -1))))
    return latest


def died_of(signal_number: int) -> tuple[str, str]:
    """The error and cause to report for a process that died of a signal: the isolation
    violation the fault log explains, else the signal."""
    fault = read_fault() if signal_number in (signal.SIGSEGV, signal.SIGBUS) else None
    if fault is not None:
        return fault.error()
    return "Runtime.ExitError", (f"the Orchestrator process died of "
                                 f"{signal.Signals(signal_number).name}")


def supervise(child: Callable[[], int], on_fault: Callable[[str, str], None]) -> int:
    """Run ``child`` in a forked process holding a fault log; return its exit status.

    If it dies of a signal, ``on_fault`` gets the error and cause to report: the
    isolation violation the log explains, else the signal itself.
    """
    open_log()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            install_reporter()
            code = child()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001 - reported as the unsupervised run would
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    on_fault(*died_of(os.WTERMSIG(status)))
    return 1
