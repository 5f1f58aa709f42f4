"""The options of one local run, declared once: the action's own command line
(``python ACTION --input ...``, ``platforms.local``) and ``faastlane run`` (which composes,
then runs the action with them) take the same words with the same meaning.

Only the standard library: this module ships inside every action.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .options import ISOLATION_MODES


class BadInput(ValueError):
    """The execution input cannot be read or is not JSON; the message is one line."""


def add_input(parser: argparse.ArgumentParser) -> None:
    """``--input JSON`` or ``--input-file F`` (``-``: standard input)."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--input", metavar="JSON", help="the execution input (default {})")
    source.add_argument("--input-file", metavar="F",
                        help="a file holding the input JSON ('-': standard input)")


def read_input(args: argparse.Namespace) -> tuple[str, Any]:
    """The input as given (the history's ExecutionStarted keeps the text) and its value;
    :class:`BadInput` if it cannot be read or parsed."""
    if args.input_file == "-":
        text, where = sys.stdin.read(), "the input on stdin"
    elif args.input_file:
        try:
            with open(args.input_file, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise BadInput(f"cannot read --input-file {args.input_file}: "
                           f"{exc.strerror}") from None
        where = args.input_file
    else:
        text = args.input if args.input is not None else "{}"
        where = "--input"
    try:
        return text, json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{where} is not valid JSON: {exc.msg} (line {exc.lineno}, "
                       f"column {exc.colno})") from None
    except RecursionError:  # valid JSON, but deeper than Python's parser goes
        raise BadInput(f"{where} is nested too deeply to read (arrays and objects more "
                       f"than about {sys.getrecursionlimit()} levels deep)") from None


def add_placement(parser: argparse.ArgumentParser) -> None:
    """Where work runs: the isolation mode, the vCPUs and the paper's variants."""
    parser.add_argument("--isolation", choices=ISOLATION_MODES,
                        help="mpk: private heaps per function; process: a process per "
                             "function; none: threads sharing one heap (default: from "
                             "faastlane.json, else process if any function is untrusted, "
                             "else none)")
    parser.add_argument("--vcpus", type=int, metavar="N",
                        help="parallel processes at most (default: the CPUs available)")
    variant = parser.add_mutually_exclusive_group()
    variant.add_argument("--threads-only", action="store_true",
                         help="run Parallel branches and Map iterations as threads "
                              "(the paper's -Th variant)")
    variant.add_argument("--processes-only", action="store_true",
                         help="run every function in its own process (-P)")


def add_recording(parser: argparse.ArgumentParser) -> None:
    """What a run records besides its result: ``--trace`` and ``--history``."""
    parser.add_argument("--trace", nargs="?", const="-", metavar="FILE",
                        help="write a per-state timeline (JSON lines) to FILE, apart from "
                             "the functions' output (without FILE: to stderr)")
    parser.add_argument("--history", metavar="FILE",
                        help="write the execution history to FILE: the events Step "
                             "Functions records, in GetExecutionHistory's JSON shape")
