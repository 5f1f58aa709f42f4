"""``faastlane inspect``: scan a runtime, an app, an action or any files for native code
that can change PKRU outside the runtime's gate.

Exit 0 when every occurrence is the gate or waived, 1 when there are findings (each
listed with its file, offset, address and disassembly), 2 when the inspection itself
could not be done.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from faastlane.app.requirements import requirement_files
from faastlane.checkout import FROM_CHECKOUT, how_to_get_the_runtime, runtime_prefix

from .errors import InspectionError
from .scanner import Target, inspect_targets
from .targets import folder_targets, is_app, python_targets, waivers_in
from .waivers import Waiver


def register(commands: Any) -> None:
    """Add the inspect subcommand to the CLI's subparsers."""
    parser = commands.add_parser(
        "inspect", help="check native code for WRPKRU/XRSTOR outside the runtime's gate",
        description="Scan every executable byte, at every offset, of ELF files for "
                    "WRPKRU and XRSTOR: an action folder (with the waivers it records), "
                    "an app's functions/ (with faastlane.json's waivers), any file or "
                    "folder, and with --python an interpreter with everything it loads. "
                    "Without arguments: the cpython-mpk runtime. Exit 1 on findings.")
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="an action folder, an app folder, ELF files or folders")
    parser.add_argument("--python", metavar="EXE",
                        help="an interpreter: its binary, lib-dynload, site-packages and "
                             "the system libraries they load (default without PATHs: "
                             "the cpython-mpk runtime: $FAASTLANE_PYTHON_PREFIX, "
                             "a checkout's cpython-mpk/build, or this interpreter if it "
                             "is that runtime)")
    parser.add_argument("--no-system-libraries", action="store_true",
                        help="with --python, leave out libraries outside its prefix")
    parser.add_argument("--waivers", metavar="FILE",
                        help="JSON with an inspector_waivers list, added to those the "
                             "targets carry")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def default_python() -> str:
    """The cpython-mpk runtime ``faastlane inspect`` looks at without arguments: the
    prefix named or built (:func:`faastlane.checkout.runtime_prefix`), else this
    interpreter when it is that runtime; InspectionError (one line) when there is none."""
    prefix, source = runtime_prefix()
    if prefix:
        python = os.path.join(prefix, "bin", "python3")
        if os.access(python, os.X_OK):
            return python
        if source != FROM_CHECKOUT:
            raise InspectionError(f"no cpython-mpk runtime at {python} ({source})")
    if "_faastlane" in sys.builtin_module_names:
        return sys.executable
    if prefix:
        raise InspectionError(f"the cpython-mpk runtime is not built ({prefix}/bin/python3 "
                              f"is missing): run `make -C cpython-mpk`, or name an "
                              f"interpreter with --python EXE")
    raise InspectionError("no cpython-mpk runtime to inspect: name an interpreter with "
                          f"--python EXE or files with PATH, or {how_to_get_the_runtime()}")


def cmd_inspect(args: argparse.Namespace) -> int:
    targets: list[Target] = []
    waivers: list[Waiver] = waivers_in(args.waivers) if args.waivers else []
    for path in args.paths:
        found, carried = folder_targets(path)
        targets.extend(found)
        waivers.extend(carried)
    python = args.python or (None if args.paths else default_python())
    if python:
        targets.extend(python_targets(os.path.abspath(python),
                                      not args.no_system_libraries))
    report = inspect_targets(targets, waivers)
    # An app's third-party packages are vendored only when it is packaged: say so, lest
    # "0 ELF files" read as clean for an app that ships numpy.
    unscanned = [f for path in args.paths if is_app(path) for f in requirement_files(path)]
    if args.json:
        print(json.dumps(dict(report.to_json(), not_scanned=unscanned), indent=2))
    else:
        print(report.text())
        if unscanned:
            print(f"not scanned: the packages that {', '.join(unscanned)} list(s) -- "
                  "`faastlane package APP --target openwhisk|lambda` vendors them and "
                  "scans what it ships (refusing unwaived findings)")
    return 1 if report.unwaived else 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"inspect": cmd_inspect}
