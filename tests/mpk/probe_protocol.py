"""The line protocol between the probe runner (``probes.py``) and the tests.

The runner prints one line per probe, ``FAASTLANE-PROBE {json}``, holding how the
probe's child process ended and what it noted on the way.  The runner runs under the
cpython-mpk runtime (often inside QEMU, whose serial console adds noise around the
lines); the tests parse the lines in the pytest process.  Standard library only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

MARKER = "FAASTLANE-PROBE "
# The fault reporter's line (mpk_signal.c): "faastlane-fault: signo=11 code=4 ..."
FAULT_PREFIX = "faastlane-fault:"

SIGSEGV = 11
SEGV_ACCERR = 2
SEGV_PKUERR = 4


@dataclass
class ProbeResult:
    """How one probe's child process ended."""

    name: str
    exit_code: int | None = None  # set when the child exited
    signal: int | None = None  # set when a signal killed it
    fault: dict[str, int] | None = None  # the fault reporter's fields, if it fired
    notes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # a Python exception that ended the probe
    timed_out: bool = False

    def to_line(self) -> str:
        """The protocol line for this result."""
        return MARKER + json.dumps(self.__dict__, sort_keys=True)

    def describe(self) -> str:
        """Everything known about the probe, for assertion messages."""
        return json.dumps(self.__dict__, indent=1, sort_keys=True)


def parse_fault_line(line: str) -> dict[str, int]:
    """The ``key=value`` fields of a fault reporter line, as integers."""
    fields: dict[str, int] = {}
    for item in line[len(FAULT_PREFIX) :].split():
        key, _, value = item.partition("=")
        fields[key] = int(value, 0)
    return fields


def parse_results(output: str) -> dict[str, ProbeResult]:
    """Every probe result found in ``output`` (other lines are ignored)."""
    results: dict[str, ProbeResult] = {}
    for line in output.splitlines():
        start = line.find(MARKER)
        if start < 0:
            continue
        data = json.loads(line[start + len(MARKER) :])
        result = ProbeResult(**data)
        results[result.name] = result
    return results
