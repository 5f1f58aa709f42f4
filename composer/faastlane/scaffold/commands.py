"""``faastlane init DIR [--template folder|sam] [--name N]``."""

from __future__ import annotations

import argparse
import os
import re

from faastlane.errors import FaastlaneError

from .templates import folder_files, sam_files

FOLDER, SAM = "folder", "sam"
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}\Z")  # also a Lambda/OpenWhisk name


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    init = commands.add_parser(
        "init", help="make a new app that runs at once",
        description="Write a new app into DIR (new or empty; nothing is overwritten): a "
                    "small order workflow with a Choice, a Parallel and a Catch, its "
                    "functions and an input. --template folder (default): workflow.json, "
                    "functions/NAME.py, faastlane.json, input.json, README.md; --template "
                    "sam: template.yaml, statemachine/workflow.asl.json, "
                    "functions/NAME/app.py. Example: faastlane init orders && faastlane "
                    "run orders --input-file orders/input.json")
    init.add_argument("dir", metavar="DIR", help="the folder to create")
    init.add_argument("--template", choices=(FOLDER, SAM), default=FOLDER,
                      help="the app's form (default: folder)")
    init.add_argument("--name", metavar="N",
                      help="the workflow's name (default: DIR's name)")


def cmd_init(args: argparse.Namespace) -> int:
    target = os.path.abspath(args.dir)
    name = args.name or os.path.basename(target.rstrip(os.sep))
    if not NAME.match(name):
        raise FaastlaneError(f"{'--name ' + name if args.name else args.dir}: a workflow name "
                             f"is a letter, then letters, digits, '-' or '_' (at most 64); "
                             f"give one with --name")
    if os.path.exists(target) and (not os.path.isdir(target) or os.listdir(target)):
        raise FaastlaneError(f"{args.dir} exists and is not an empty folder; init writes "
                             f"only into a new or empty one")
    files = sam_files(name) if args.template == SAM else folder_files(name)
    for relative, text in files.items():
        path = os.path.join(target, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "x", encoding="utf-8") as handle:  # "x": never replace a file
            handle.write(text)
    print(f"wrote {args.dir}: {', '.join(sorted(files))}")
    if args.template == SAM:
        print(f"run it: faastlane run {os.path.join(args.dir, 'template.yaml')} "
              f"--input-file {os.path.join(args.dir, 'input.json')}")
    else:
        print(f"run it: faastlane run {args.dir} --input-file "
              f"{os.path.join(args.dir, 'input.json')}")
    return 0


COMMANDS = {"init": cmd_init}
