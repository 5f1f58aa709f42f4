"""What the binary inspector reports to users: one line each, what and where."""

from __future__ import annotations

from faastlane.errors import FaastlaneError


class InspectionError(FaastlaneError):
    """The inspector could not do its job (unreadable file, no gate, bad waiver)."""


class GateUnavailable(InspectionError):
    """The runtime's gate bytes could be obtained from nowhere: every WRPKRU is then a
    finding, and a caller that needs the gate says so."""


class InvalidWaiver(InspectionError):
    """An ``inspector_waivers`` entry is malformed: its JSON pointer and what is wrong."""


class InspectionFailed(FaastlaneError):
    """Native code that can change PKRU, outside the runtime's gate and not waived.

    The message is the first finding (file, offset, disassembly) and how many more; the
    report holds them all.
    """

    exit_code = 1

    def __init__(self, message: str, report: object) -> None:
        super().__init__(message)
        self.report = report
