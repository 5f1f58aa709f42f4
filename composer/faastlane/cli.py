"""The ``faastlane`` command: thin commands over compose/validate/run.

Exit codes: 0 success; 1 a failed execution (whose ``{"Error", "Cause"}`` is printed on
stdout, as Step Functions reports it), or problems found by ``validate``; 2 bad usage or
input (one line on stderr, no traceback unless ``--debug``); 3 a workflow refused as
invalid (every problem listed on stderr); 128 + N stopped by signal N (SIGINT: 130), after
stopping every process the command started and removing its temporary files. When the
reader of standard output goes away (``faastlane validate --json | head -1``), the
command ends quietly as Unix tools do: no traceback, exit 141 (128 + SIGPIPE).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from types import ModuleType
from typing import TextIO

from faastlane.app.folder import WORKFLOW_FILE
from faastlane.app.project.local_aws import local_resources
from faastlane.app.sources import load_app
from faastlane.compose.action import check_app, compose, prepare, shown_root, warn, write_action
from faastlane.deploy.commands import COMMANDS as DEPLOY_COMMANDS
from faastlane.deploy.commands import register as register_deploy
from faastlane.graph.commands import COMMANDS as GRAPH_COMMANDS
from faastlane.graph.commands import register as register_graph
from faastlane.inspector.commands import COMMANDS as INSPECT_COMMANDS
from faastlane.inspector.commands import register as register_inspect
from faastlane.runtime.engine import flight
from faastlane.runtime.run_options import add_input, add_recording
from faastlane.scaffold.commands import COMMANDS as INIT_COMMANDS
from faastlane.scaffold.commands import register as register_init
from faastlane.serve.commands import COMMANDS as SERVE_COMMANDS
from faastlane.serve.commands import register as register_serve
from faastlane.validation.problem import Problem, summary

from . import __version__
from .cli_options import (
    add_planning,
    add_project,
    planning,
    project_options,
    read_input,
)
from .errors import FaastlaneError, InvalidWorkflow
from .local_action import claim, sweep
from .local_action import scratch_parent as _scratch_parent
from .local_action import stop as _stop

Handler = Callable[[argparse.Namespace], int]
APP_HELP = ("the app folder, or a SAM / CloudFormation template (YAML or JSON) holding the "
            "state machine and its functions")

# Commands that other parts of the distribution add without this module importing them
# (they import faastlane, never the reverse): a module named in the entry-point group
# has ``register(subparsers)`` and ``COMMANDS`` (name -> handler), as deploy and inspect.
PLUGIN_GROUP = "faastlane.commands"


def _plugins() -> list[ModuleType]:
    # Once per module: an environment can hold two distributions naming the same one
    # (faastlane_bench moved from faastlane-bench into faastlane).
    modules = {entry.value: entry for entry in entry_points(group=PLUGIN_GROUP)}
    return [entry.load() for entry in modules.values()]


def _parser(
    plugins: list[ModuleType],
) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The CLI's parser, and each command's own parser (its usage for its errors)."""
    parser = argparse.ArgumentParser(
        prog="faastlane",
        description="Compose a Step Functions workflow of Python functions into one "
                    "fast, isolated action, and run it.")
    parser.add_argument("--version", action="version", version=f"faastlane {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    validate = commands.add_parser(
        "validate", help="report every problem in an app's workflow",
        description="Check APP/workflow.json (Amazon States Language) and the functions it "
                    "names; list every problem with its JSON pointer. Exit 1 if any.")
    validate.add_argument("app", metavar="APP", help=APP_HELP)
    validate.add_argument("--json", action="store_true", help="print problems as JSON")
    add_project(validate)

    comp = commands.add_parser(
        "compose", help="write the action folder for an app",
        description="Validate APP, plan where each state runs, and write a self-contained "
                    "action folder: orchestrator.py, plan.json, the runtime, the functions "
                    "and the OpenWhisk and Lambda entry points.")
    comp.add_argument("app", metavar="APP", help=APP_HELP)
    comp.add_argument("-o", "--output", required=True, metavar="OUT",
                      help="the action folder to write")
    add_planning(comp)

    run = commands.add_parser(
        "run", help="compose and run a workflow locally",
        description="Compose APP and run one execution on this machine. Prints the output "
                    "JSON on stdout (exit 0), or {\"Error\", \"Cause\"} of a failed "
                    "execution (exit 1; stderr names the failing state). A workflow refused "
                    "as invalid exits 3, bad usage 2. Functions' own output goes to stderr. "
                    "Example: faastlane run examples/finra --input-file "
                    "examples/finra/input.json; a template's tables, topics, queues and "
                    "buckets are created on the loopback endpoint of AWS_ENDPOINT_URL "
                    "(with none set, on an embedded local AWS the run starts and stops): "
                    "faastlane run examples/stock-trader/template.yaml")
    run.add_argument("app", metavar="APP", help=APP_HELP)
    add_input(run)
    add_recording(run)
    run.add_argument("--keep", metavar="DIR",
                     help="compose into DIR and keep it (default: a temporary folder)")
    run.add_argument("--create-resources", action="store_true",
                     help="a template's resources: create the missing ones even on an "
                          "endpoint that is not this machine's (never without this flag)")
    add_planning(run)
    register_deploy(commands, add_planning)
    register_graph(commands, add_planning)
    register_serve(commands, add_planning)
    register_init(commands)
    register_inspect(commands)
    for plugin in plugins:
        plugin.register(commands)
    for command in commands.choices.values():  # --debug before or after the command
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help="show tracebacks")
    return parser, commands.choices


def _print_problems(problems: list[Problem], app: str, stream: TextIO) -> None:
    """Each problem on one line, in its file: ``APP/workflow.json: /States/A/Next: ...``."""
    for problem in problems:
        stream.write(problem.render(app) + "\n")


def cmd_validate(args: argparse.Namespace) -> int:
    app = load_app(args.app, project_options(args))
    shown = shown_root(args.app)
    warn(app, shown)
    _, problems = check_app(app)
    if args.json:
        print(json.dumps([problem.as_json() for problem in problems], indent=2))
    elif problems:
        _print_problems(problems, shown, sys.stdout)
        print(summary(problems, shown))
    elif os.path.isfile(args.app):
        print(f"{args.app} is valid (state machine {app.name})")
    else:
        origin = app.workflow_origin
        print(f"{os.path.join(args.app, origin.file if origin else WORKFLOW_FILE)} is valid")
    return 1 if problems else 0


def cmd_compose(args: argparse.Namespace) -> int:
    out = compose(args.app, args.output, **planning(args))
    print(f"wrote {out}: orchestrator.py, plan.json, faastlane_runtime/, functions/")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    text = read_input(args)
    if args.history and not os.path.isdir(os.path.dirname(os.path.abspath(args.history))):
        raise FaastlaneError(f"--history {args.history}: its folder does not exist")
    sweep(_scratch_parent())
    with tempfile.TemporaryDirectory(prefix="faastlane-run-", dir=_scratch_parent()) as scratch:
        claim(scratch)
        out = args.keep or os.path.join(scratch, "action")
        composition = prepare(args.app, **planning(args))
        write_action(composition, out)
        input_file = os.path.join(scratch, "input.json")
        with open(input_file, "w", encoding="utf-8") as handle:
            handle.write(text)
        flight_file = os.path.join(scratch, "flight")
        flight.prepare(flight_file)
        command = [sys.executable, out, "--input-file", input_file,
                   "--source-root", os.path.abspath(shown_root(args.app)),
                   "--parent", str(os.getpid()), "--flight", flight_file]
        command += [f"--source-folder={folder}={source}"  # a template's code folders
                    for folder, source in composition.app.code.items()]
        if args.trace:
            command += ["--trace", args.trace if args.trace == "-"
                        else os.path.abspath(args.trace)]
        if args.history:
            command += ["--history", os.path.abspath(args.history)]
        # The composed action is its own program: the same one OpenWhisk or Lambda loads.
        # A template's tables, topics, ...: created on the local endpoint (or an embedded
        # one, for this run only) before its workflow runs.
        with local_resources(args.app, project_options(args), args.create_resources) as env:
            if args.isolation is None:  # what was chosen for the user, said once
                isolation = composition.plan["isolation"]
                sys.stderr.write(f"faastlane: isolation {isolation['mode']}: "
                                 f"{isolation['reason']}\n")
            code = _run_action(command, env)
            if code in (0, 1, 2):
                return code
            # The Orchestrator itself died (a function crashed the shared process, say):
            # a failed execution, as Lambda reports a runtime that exited, naming what
            # was running.
            how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
            cause = f"the Orchestrator process exited with {how}" + flight.while_running(
                flight_file)
    print(json.dumps({"Error": "Runtime.ExitError", "Cause": cause}))
    sys.stderr.write(f"faastlane: the execution failed: Runtime.ExitError: {cause}\n")
    return 1


class Interrupted(Exception):
    """SIGTERM or SIGHUP: unwinds like Ctrl-C, so that temporary files are removed."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _interrupted(signum: int, _frame: object) -> None:
    raise Interrupted(signum)


def _run_action(command: list[str], env: dict[str, str] | None = None) -> int:
    """Run the composed action; if this command is stopped, stop it and its children."""
    process = subprocess.Popen(command, env=env)
    try:
        return process.wait()
    except BaseException:
        _stop(process)
        raise


def _drop_stdout() -> None:
    """Standard output's reader is gone: send what is still buffered, and anything later,
    to /dev/null, so that the interpreter's final flush does not complain (the recipe of
    Python's documentation on SIGPIPE)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


_COMMANDS: dict[str, Handler] = {"validate": cmd_validate, "compose": cmd_compose,
                                  "run": cmd_run, **DEPLOY_COMMANDS, **INSPECT_COMMANDS,
                                  **GRAPH_COMMANDS, **SERVE_COMMANDS,
                                  **INIT_COMMANDS}


def main(argv: Sequence[str] | None = None) -> int:
    plugins = _plugins()
    parser, commands = _parser(plugins)
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # the command's own usage, not the top-level one
        commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    handlers = dict(_COMMANDS)
    for plugin in plugins:
        handlers.update(plugin.COMMANDS)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupted)
    try:
        code = handlers[args.command](args)
        sys.stdout.flush()  # a reader that went away shows here, not at exit
        return code
    except BrokenPipeError:
        _drop_stdout()
        return 128 + signal.SIGPIPE
    except InvalidWorkflow as exc:
        _print_problems(exc.problems, exc.app, sys.stderr)
        sys.stderr.write(f"faastlane: {exc}\n")
        return exc.exit_code
    except FaastlaneError as exc:
        if args.debug:
            raise
        sys.stderr.write(f"faastlane: error: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("faastlane: interrupted\n")
        return 128 + signal.SIGINT
    except Interrupted as exc:
        sys.stderr.write(f"faastlane: stopped by {exc}\n")
        return 128 + exc.signum


if __name__ == "__main__":
    sys.exit(main())
