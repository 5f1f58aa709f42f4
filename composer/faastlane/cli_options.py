"""Command-line options shared by several commands: placement planning and the input."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from faastlane.app.project.parameters import ProjectOptions
from faastlane.runtime.options import ISOLATION_MODES

from .errors import FaastlaneError

_PLANNING = ("isolation", "vcpus", "threads_only", "processes_only", "max_containers")


def add_planning(parser: argparse.ArgumentParser) -> None:
    """The options that decide where work runs (compose, run, package, deploy)."""
    parser.add_argument("--isolation", choices=ISOLATION_MODES,
                        help="mpk: private heaps per function; process: a process per "
                             "function; none: threads sharing one heap (default: from "
                             "faastlane.json, else process if any function is untrusted, "
                             "else none)")
    parser.add_argument("--vcpus", type=int, metavar="N",
                        help="parallel processes at most (default: the CPUs available)")
    parser.add_argument("--max-containers", type=int, metavar="M",
                        help="let parallel work wider than the vCPUs spill to copies of "
                             "the action, M containers in all (default 1: no spilling)")
    variant = parser.add_mutually_exclusive_group()
    variant.add_argument("--threads-only", action="store_true",
                         help="run Parallel branches and Map iterations as threads "
                              "(the paper's -Th variant)")
    variant.add_argument("--processes-only", action="store_true",
                         help="run every function in its own process (-P)")
    add_project(parser)


def planning(args: argparse.Namespace) -> dict[str, Any]:
    """The planning options (and a template's) as keyword arguments of
    ``compose.prepare``."""
    return {**{key: getattr(args, key) for key in _PLANNING}, "project": project_options(args)}


def add_project(parser: argparse.ArgumentParser) -> None:
    """The options of an APP that is a SAM / CloudFormation template."""
    group = parser.add_argument_group("when APP is a SAM or CloudFormation template")
    group.add_argument("--parameter-overrides", nargs="+", action="extend", default=[],
                       metavar="KEY=VALUE",
                       help="template parameters, as sam takes them: Key=Value ... or "
                            "ParameterKey=Key,ParameterValue=Value ...")
    group.add_argument("--state-machine", metavar="ID",
                       help="the state machine's logical id, when the template has several")
    group.add_argument("--stack-name", metavar="NAME",
                       help="the stack's name (AWS::StackName, and the prefix of local "
                            "resources' names; default: the template's folder name)")


def project_options(args: argparse.Namespace) -> ProjectOptions:
    return ProjectOptions(tuple(getattr(args, "parameter_overrides", None) or ()),
                          getattr(args, "state_machine", None),
                          getattr(args, "stack_name", None))


def add_input(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--input", metavar="JSON", help="the execution input (default {})")
    source.add_argument("--input-file", metavar="F",
                        help="a file holding the input JSON ('-': standard input)")


def read_input(args: argparse.Namespace) -> str:
    """The input text from --input or --input-file, checked to be JSON."""
    if args.input_file == "-":
        text, where = sys.stdin.read(), "the input on stdin"
    elif args.input_file:
        try:
            with open(args.input_file, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise FaastlaneError(f"cannot read --input-file {args.input_file}: "
                                 f"{exc.strerror}") from None
        where = args.input_file
    else:
        text = args.input if args.input is not None else "{}"
        where = "--input"
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise FaastlaneError(f"{where} is not valid JSON: {exc.msg} (line {exc.lineno}, "
                             f"column {exc.colno})") from None
    except RecursionError:  # valid JSON, but deeper than Python's parser goes
        raise FaastlaneError(f"{where} is nested too deeply to read (arrays and objects "
                             f"more than about {sys.getrecursionlimit()} levels deep)") from None
    return text
