"""Command-line options shared by several commands: placement planning and the input
(the words a local run shares with the action's own command line are declared once, in
``runtime.run_options``)."""

from __future__ import annotations

import argparse
from typing import Any

from faastlane.app.project.parameters import ProjectOptions
from faastlane.runtime import run_options

from .errors import FaastlaneError

_PLANNING = ("isolation", "vcpus", "threads_only", "processes_only", "max_containers",
             "profile_from")


def add_planning(parser: argparse.ArgumentParser) -> None:
    """The options that decide where work runs (compose, run, package, deploy)."""
    run_options.add_placement(parser)
    parser.add_argument("--profile-from", metavar="TRACE",
                        help="weigh where Parallel and Map states run with the compute "
                             "times a `faastlane run --trace TRACE` of this workflow "
                             "measured (threads for short jobs, warm processes for long)")
    parser.add_argument("--max-containers", type=int, metavar="M",
                        help="let parallel work wider than the vCPUs spill to copies of "
                             "the action, M containers in all (default 1: no spilling)")
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


def read_input(args: argparse.Namespace) -> str:
    """The input text from --input or --input-file, checked to be JSON."""
    try:
        return run_options.read_input(args)[0]
    except run_options.BadInput as exc:
        raise FaastlaneError(str(exc)) from None
