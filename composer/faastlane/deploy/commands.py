"""``faastlane package | deploy | invoke``: thin commands over the deployment stages.

``cli.py`` calls :func:`register` to add the subcommands and dispatches to
:data:`COMMANDS`; everything here raises FaastlaneError subclasses, which the CLI turns
into one line and an exit code.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from faastlane import progress
from faastlane.app.sources import load_app
from faastlane.cli_options import planning, project_options, read_input

from . import bundle, image_bundle
from .archive import Archive
from .aws_lambda import LambdaClient
from .deployer import (
    check_lambda,
    deploy_lambda,
    deploy_lambda_image,
    deploy_openwhisk,
    deploy_openwhisk_image,
)
from .environment import parse_environment, shadowed
from .errors import DeployError, InvocationFailed
from .images import BuiltImage
from .openwhisk import OpenWhiskClient
from .wskprops import resolve

TARGETS = ("openwhisk", "lambda")
def _add_target(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", choices=TARGETS, required=True,
                        help="the platform: an OpenWhisk action or an AWS Lambda function")


def _add_packaging(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", default=bundle.OPENWHISK_KIND,
                        help=f"OpenWhisk: the Python kind (default {bundle.OPENWHISK_KIND})")
    parser.add_argument("--custom-runtime", action="store_true",
                        help="Lambda: add a runtime layer (bootstrap + cpython-mpk + "
                             f"awslambdaric) for {bundle.CUSTOM_RUNTIME}")
    parser.add_argument("--python-prefix", metavar="DIR",
                        help="Lambda custom runtime: the cpython-mpk prefix (default "
                             "$FAASTLANE_PYTHON_PREFIX, in a checkout cpython-mpk/build)")
    parser.add_argument("--docker", nargs="?", const="", metavar="BASE",
                        help="OpenWhisk: a Docker (blackbox) action; the requirements go "
                             "into an image built FROM BASE (default: the Faastlane runtime "
                             "image, docker/build.sh runtime), not into the zip")
    parser.add_argument("--image", nargs="?", const="", metavar="BASE",
                        help="Lambda: a container-image function built FROM BASE (default: "
                             "the Faastlane runtime image) with the requirements, "
                             "awslambdaric and the action (up to 10 GB)")


def add_connection(parser: argparse.ArgumentParser) -> None:
    """The options that reach a platform (OpenWhisk host and key, AWS profile and region);
    public because ``faastlane profile`` reaches the same platforms with them."""
    ow = parser.add_argument_group("OpenWhisk (default: as wsk, from ~/.wskprops)")
    ow.add_argument("--apihost", help="the API host, e.g. https://openwhisk.example.com")
    ow.add_argument("--auth", help="the key, UUID:KEY")
    ow.add_argument("--namespace", help="the namespace (default: your own, _)")
    ow.add_argument("-i", "--insecure", action="store_true",
                    help="do not check the API host's TLS certificate")
    aws = parser.add_argument_group("AWS Lambda (default: the usual AWS configuration)")
    aws.add_argument("--profile", help="an AWS profile from ~/.aws")
    aws.add_argument("--region", help="the AWS region")


def register(commands: Any, add_planning: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add the package, deploy and invoke subcommands to the CLI's subparsers."""
    package = commands.add_parser(
        "package", help="build the zip(s) a platform takes",
        description="Compose APP and package it: for OpenWhisk one action zip (stock Python "
                    "kind); for Lambda function.zip and layer.zip (and runtime-layer.zip "
                    "with --custom-runtime). Dependencies from requirements.txt files are "
                    "vendored.")
    package.add_argument("app", metavar="APP",
                         help="the app folder, or a SAM / CloudFormation template")
    _add_target(package)
    package.add_argument("-o", "--output", metavar="OUT",
                         help="OpenWhisk: the zip to write; Lambda: the folder for the zips "
                              "(not used with --image: the image is in the Docker engine)")
    _add_packaging(package)
    add_planning(package)

    deploy = commands.add_parser(
        "deploy", help="create or update the action / function",
        description="Package APP and create or update it on the platform: an OpenWhisk "
                    "action (PUT ...?overwrite=true) or a Lambda function with its layers.")
    deploy.add_argument("app", metavar="APP",
                        help="the app folder, or a SAM / CloudFormation template")
    _add_target(deploy)
    deploy.add_argument("--name", help="the action / function name (default: the app's)")
    _add_packaging(deploy)
    deploy.add_argument("--registry", metavar="HOST[:PORT][/PATH]",
                        help="--docker/--image: push the image there (after docker login) "
                             "and name it so; without it the image stays in this machine's "
                             "Docker engine")
    deploy.add_argument("--role", default=os.environ.get("FAASTLANE_LAMBDA_ROLE"),
                        help="Lambda: the execution role ARN (needed to create a function)")
    deploy.add_argument("--memory", type=int, metavar="MB", help="memory (default: a new "
                        "action's platform default, Lambda 1024; an update keeps the current)")
    deploy.add_argument("--timeout", type=int, metavar="S", help="time limit in seconds "
                        "(default: a new action's platform default, Lambda 300; an update "
                        "keeps the current)")
    deploy.add_argument("--env", action="append", metavar="NAME[=VALUE]",
                        help="a variable of the action's own environment, seen by every "
                             "function under its faastlane.json environment (Lambda: "
                             "Environment.Variables; OpenWhisk: an init parameter, given to "
                             "the container's /init as its env); NAME alone takes this "
                             "shell's value; repeat for more. Given, they replace the "
                             "action's variables; an update without --env keeps them")
    add_connection(deploy)
    add_planning(deploy)

    invoke = commands.add_parser(
        "invoke", help="run the deployed workflow once and print its output",
        description="Invoke a deployed action / function synchronously. Prints the output "
                    "JSON (exit 0), or the error result of a failed workflow (exit 1).")
    invoke.add_argument("name", metavar="NAME", help="the action / function name")
    _add_target(invoke)
    source = invoke.add_mutually_exclusive_group()
    source.add_argument("--input", metavar="JSON", help="the execution input (default {})")
    source.add_argument("--input-file", metavar="F", help="a file holding the input JSON")
    add_connection(invoke)


def _say(message: str) -> None:
    sys.stderr.write(f"faastlane: {message}\n")


def _describe(archive: Archive) -> str:
    return f"{archive.path} ({archive.size:,} bytes, {archive.unzipped_size:,} unzipped)"


def _check_image_options(args: argparse.Namespace) -> None:
    """--docker is OpenWhisk's, --image Lambda's; one line (exit 2) for a mix-up."""
    if args.target == "lambda" and args.docker is not None:
        raise DeployError("--docker makes an OpenWhisk Docker action; for a Lambda "
                          "container image use --image")
    if args.target == "openwhisk" and args.image is not None:
        raise DeployError("--image makes a Lambda container image; for an OpenWhisk "
                          "Docker action use --docker")
    if args.image is not None and args.custom_runtime:
        raise DeployError("--image and --custom-runtime exclude each other: the image "
                          "carries its own runtime")


def _describe_image(image: BuiltImage) -> str:
    how = "built" if image.built else "up to date (same inputs)"
    return f"image {image.tag} {how}: {image.size / (1024 * 1024):.0f} MB, FROM {image.base}"


def cmd_package(args: argparse.Namespace) -> int:
    _check_image_options(args)
    if args.target == "lambda" and args.image is not None:
        if args.output:
            _say("-o is not used with --image: the image is in the local Docker engine")
        image = image_bundle.package_lambda_image(args.app, args.image or None,
                                                  **planning(args)).image
        print(f"{_describe_image(image)}; entry point awslambdaric "
              f"{bundle.LAMBDA_HANDLER}")
        return 0
    if not args.output:
        raise DeployError("package needs -o OUT: the zip (OpenWhisk) or the folder for the "
                          "zips (Lambda)")
    if args.target == "openwhisk" and args.docker is not None:
        docker = image_bundle.package_openwhisk_image(args.app, args.output,
                                                      args.docker or None, **planning(args))
        print(f"wrote {_describe(docker.action)}")
        if docker.built:
            print(_describe_image(docker.built))
        print(f"wsk action create {docker.name} {args.output} --docker {docker.image}")
        return 0
    if args.target == "openwhisk":
        package = bundle.package_openwhisk(args.app, args.output, args.kind, **planning(args))
        print(f"wrote {_describe(package.action)}: wsk action create {package.name} "
              f"{args.output} --kind {package.kind}")
        return 0
    lam = bundle.package_lambda(args.app, args.output, args.custom_runtime,
                                args.python_prefix, **planning(args))
    for archive in (lam.function, *lam.layers()):
        print(f"wrote {_describe(archive)}")
    print(f"runtime {lam.runtime}, handler {lam.handler}")
    return 0


def _checked_lambda(args: argparse.Namespace) -> LambdaClient:
    """The Lambda client, once the deployment's inputs (a role for a new function, the
    settings' bounds) are known to be complete: before packaging, which can take long.
    The deployer checks again before it creates anything."""
    client = LambdaClient(args.profile, args.region)
    check_lambda(client, args.name or load_app(args.app, project_options(args)).name,
                 args.role, args.memory, args.timeout)
    return client


def cmd_deploy(args: argparse.Namespace) -> int:
    _check_image_options(args)
    environment = parse_environment(args.env, args.target, os.environ)
    if environment:
        for line in shadowed(environment, load_app(args.app, project_options(args)).functions):
            _say(line)
    # Progress covers the talking to the platform, once its configuration was checked.
    def deploying(name: str) -> AbstractContextManager[progress.Steps]:
        return progress.step(f"deploying {name} to {args.target}")

    with tempfile.TemporaryDirectory(prefix="faastlane-deploy-") as scratch:
        if args.target == "openwhisk":
            client = OpenWhiskClient(resolve(args.apihost, args.auth, args.namespace),
                                     args.insecure)  # configuration checked before packaging
            zip_path = os.path.join(scratch, "action.zip")
            if args.docker is not None:
                docker = image_bundle.package_openwhisk_image(
                    args.app, zip_path, args.docker or None, **planning(args))
                if docker.built:
                    _say(_describe_image(docker.built))
                with deploying(args.name or docker.name):
                    done = deploy_openwhisk_image(docker, client, args.name or docker.name,
                                                  args.registry, args.memory, args.timeout,
                                                  _say, environment)
            else:
                package = bundle.package_openwhisk(args.app, zip_path, args.kind,
                                                   **planning(args))
                with deploying(args.name or package.name):
                    done = deploy_openwhisk(package, client, args.name or package.name, None,
                                            args.memory, args.timeout, _say, environment)
        elif args.image is not None:
            lam_client = _checked_lambda(args)
            image = image_bundle.package_lambda_image(args.app, args.image or None,
                                                      **planning(args))
            _say(_describe_image(image.image))
            with deploying(args.name or image.name):
                done = deploy_lambda_image(image, lam_client, args.name or image.name,
                                           args.role, args.registry, args.memory,
                                           args.timeout, _say, environment)
        else:
            lam_client = _checked_lambda(args)
            lam = bundle.package_lambda(args.app, scratch, args.custom_runtime,
                                        args.python_prefix, **planning(args))
            with deploying(args.name or lam.name):
                done = deploy_lambda(lam, lam_client, args.name or lam.name, args.role,
                                     args.memory, args.timeout, _say, environment)
    print(f"deployed {done.name} to {done.platform}: faastlane invoke {done.name} "
          f"--target {done.platform} --input '{{...}}'")
    return 0


def cmd_invoke(args: argparse.Namespace) -> int:
    payload = json.loads(read_input(args))
    try:
        if args.target == "openwhisk":
            client = OpenWhiskClient(resolve(args.apihost, args.auth, args.namespace),
                                     args.insecure)
            result = client.invoke(args.name, payload)
        else:
            result = LambdaClient(args.profile, args.region).invoke(args.name, payload)
    except InvocationFailed as failed:
        print(json.dumps(failed.result))
        return failed.exit_code
    print(json.dumps(result))
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "package": cmd_package, "deploy": cmd_deploy, "invoke": cmd_invoke}
