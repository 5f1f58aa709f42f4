"""Stage 1 of a deployment: the artefacts each platform takes, built from an app.

The action folder comes from ``faastlane compose`` (``prepare`` + ``write_action``); this
module only re-arranges it into the platforms' formats and checks their size limits:

OpenWhisk, stock Python kind
    ``action.zip``: the action folder (``__main__.py`` with ``main(args)``) plus the
    functions' third-party packages at its top level, where the launcher's ``sys.path``
    finds them; ``wsk action create NAME action.zip --kind python:3.11``.
AWS Lambda
    ``function.zip``: ``lambda_function.py`` (handler ``lambda_function.handler``),
    ``orchestrator.py``, ``plan.json``, ``functions/``; ``layer.zip``: ``python/`` with the
    runtime library (``faastlane_runtime``) and the third-party packages, which Lambda
    mounts under ``/opt/python`` on ``sys.path``. With a custom runtime also
    ``runtime-layer.zip``: ``bootstrap``, the cpython-mpk interpreter and ``awslambdaric``
    (the Runtime API client) -- for the ``provided.al2023`` runtime, whose glibc (2.34) is
    older than this machine's: the interpreter comes from ``make -C cpython-mpk lambda``
    (built in a Debian bullseye root, glibc 2.31), and every ELF file of the layer is
    checked to need no newer glibc than the target's.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any

from faastlane.checkout import FROM_CHECKOUT, how_to_get_the_runtime, runtime_prefix
from faastlane.compose.action import RUNTIME_PACKAGE, prepare, write_action
from faastlane.compose.plan import DEPLOY_TARGET
from faastlane.inspector.shipment import app_waivers, check_trees, inspect_shipment
from faastlane.inspector.waivers import Waiver
from faastlane.runtime.services import uses_service_integrations

from . import glibc, limits
from .archive import Archive, write_zip
from .bytecode import cache_tag, compile_trees, note
from .errors import RuntimeNotBuilt, TooLarge
from .vendoring import vendor, vendor_app

OPENWHISK_KIND = "python:3.11"
RUNTIME_IMAGE_KIND = "python:3.13"  # the Faastlane runtime image's cpython-mpk
LAMBDA_RUNTIME = "python3.13"
CUSTOM_RUNTIME = "provided.al2023"
LAMBDA_HANDLER = "lambda_function.handler"
RUNTIME_INTERFACE_CLIENT = "awslambdaric==4.2.2"

BOOTSTRAP = """#!/bin/sh
# AWS Lambda custom runtime of a Faastlane action: the cpython-mpk interpreter in this
# layer runs awslambdaric, which speaks the Runtime API at $AWS_LAMBDA_RUNTIME_API and
# calls $_HANDLER (lambda_function.handler) from $LAMBDA_TASK_ROOT.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONPATH="$here/python${PYTHONPATH:+:$PYTHONPATH}"
# The libraries the interpreter was built against besides glibc (libssl, libffi, ...),
# bundled by cpython-mpk/oldroot.sh: the base image may lack them or have other versions.
export LD_LIBRARY_PATH="$here/cpython-mpk/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cd "${LAMBDA_TASK_ROOT:-/var/task}"
exec "$here/cpython-mpk/bin/python3" -m awslambdaric "${_HANDLER:-lambda_function.handler}"
"""

# Parts of a CPython prefix nothing runs at run time.
_PREFIX_UNUSED = ("test", "idlelib", "tkinter", "ensurepip", "lib2to3", "site-packages",
                  "config-")


@dataclass(frozen=True)
class OpenWhiskPackage:
    name: str
    kind: str
    action: Archive
    spills: bool = False  # the plan may invoke copies of the action (--max-containers)


@dataclass(frozen=True)
class LambdaPackage:
    name: str
    runtime: str
    handler: str
    function: Archive
    layer: Archive
    runtime_layer: Archive | None = None

    def layers(self) -> list[Archive]:
        return [a for a in (self.runtime_layer, self.layer) if a is not None]


def _kind_version(kind: str) -> str:
    """``python:3.11`` -> ``3.11``; OpenWhisk's generic ``python:3`` is 3.11 today."""
    version = kind.split(":", 1)[-1]
    return "3.11" if version in ("3", "default") else version


def package_openwhisk(app_path: str, out_zip: str, kind: str = OPENWHISK_KIND,
                      **planning: Any) -> OpenWhiskPackage:
    """The zip for OpenWhisk's stock Python kind."""
    composition = prepare(app_path, keys=DEPLOY_TARGET, **planning)
    with tempfile.TemporaryDirectory(prefix="faastlane-package-") as scratch:
        action = write_action(composition, os.path.join(scratch, "action"))
        trees = [(action, "")]
        vendored = vendor_app(composition.app.root, _kind_version(kind), runtime_has_sdk=False,
                              uses_aws_services=calls_aws_services(composition),
                              code_dirs=composition.app.code.values())
        if vendored:
            trees.append((vendored, ""))
        inspect_shipment(action, _waivers(composition), trees[1:])  # before zipping
        check = functools.partial(limits.OPENWHISK_CODE.check, subject=out_zip)
        # Source only first: an app over the limit is refused before anything is
        # compiled, and bytecode never makes a package too large (it is left out then).
        archive = write_zip(out_zip, trees, check)
        version = _kind_version(kind)
        if compile_trees([tree for tree, _ in trees], version):
            try:
                archive = write_zip(out_zip, trees, check, cache_tag(version))
            except TooLarge:
                note("with its bytecode the zip is over OpenWhisk's limit: it ships "
                     "source only, compiled at each cold start")
    return OpenWhiskPackage(composition.app.name, kind, archive,
                            spills=composition.options.max_containers > 1)


def package_lambda(app_path: str, out_dir: str, custom_runtime: bool = False,
                   python_prefix: str | None = None, **planning: Any) -> LambdaPackage:
    """function.zip and layer.zip (and runtime-layer.zip for the custom runtime)."""
    prefix = None
    if custom_runtime:
        prefix = _python_prefix(python_prefix)
        _check_glibc(prefix, prefix)  # before anything is vendored or written
    composition = prepare(app_path, keys=DEPLOY_TARGET, **planning)
    version = _prefix_version(prefix) if prefix else LAMBDA_RUNTIME.removeprefix("python")
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="faastlane-package-") as scratch:
        action = write_action(composition, os.path.join(scratch, "action"))
        library = os.path.join(scratch, "library")
        os.makedirs(library)
        shutil.move(os.path.join(action, RUNTIME_PACKAGE), library)
        # Checked before compressing anything: zipping 250 MB only to refuse it is slow.
        limits.LAMBDA_UNZIPPED.check(_tree_size(action), f"{composition.app.name}'s function")
        trees = [(library, "python/")]
        # The managed python3.x runtime has boto3; the custom runtime has only our layer.
        vendored = vendor_app(composition.app.root, version,
                              runtime_has_sdk=not custom_runtime,
                              uses_aws_services=calls_aws_services(composition),
                              code_dirs=composition.app.code.values())
        if vendored:
            trees.append((vendored, "python/"))
            # No upload route lifts this limit; say so before scanning and zipping it all.
            limits.LAMBDA_UNZIPPED.check(sum(_tree_size(t) for t in (action, library, vendored)),
                                         f"{composition.app.name} with its layers")
        inspect_shipment(action, _waivers(composition), trees)  # recorded in function.zip
        compiled = compile_trees([action, *(tree for tree, _ in trees)], version, prefix)
        runtime_layer = _runtime_layer(prefix, version, out_dir, scratch,
                                       _waivers(composition)) if prefix else None

        def zipped(tag: str | None) -> LambdaPackage:
            function = write_zip(os.path.join(out_dir, "function.zip"), [(action, "")],
                                 pyc_tag=tag)
            layer = write_zip(os.path.join(out_dir, "layer.zip"), trees, pyc_tag=tag)
            return LambdaPackage(composition.app.name, CUSTOM_RUNTIME if custom_runtime
                                 else LAMBDA_RUNTIME, LAMBDA_HANDLER, function, layer,
                                 runtime_layer)

        package = zipped(cache_tag(version) if compiled else None)
        try:
            check_lambda_limits(package)
        except TooLarge:
            if not compiled:
                raise
            # Bytecode never makes a package too large: without it, or the refusal.
            package = zipped(None)
            check_lambda_limits(package)
            note("with its bytecode the package is over Lambda's limits: it ships "
                 "source only, compiled at each cold start")
    return package


def check_lambda_limits(package: LambdaPackage) -> None:
    for archive in (package.function, *package.layers()):
        limits.LAMBDA_ZIP.check(archive.size, archive.path)
    unzipped = sum(a.unzipped_size for a in (package.function, *package.layers()))
    limits.LAMBDA_UNZIPPED.check(unzipped, f"{package.name} with its layers")


def calls_aws_services(composition: Any) -> bool:
    """Whether the workflow, or a state machine it starts, calls AWS services: the
    runtime makes those calls with boto3, which the action then needs."""
    machines = getattr(composition.app, "state_machines", None) or {}
    return any(uses_service_integrations(definition)
               for definition in (composition.definition, *machines.values()))


def _tree_size(folder: str) -> int:
    return sum(os.path.getsize(os.path.join(directory, name))
               for directory, _, names in os.walk(folder) for name in names)


def _python_prefix(given: str | None) -> str:
    """--python-prefix, else $FAASTLANE_PYTHON_PREFIX, else a checkout's cpython-mpk/build;
    an installed faastlane has no runtime of its own to put in the layer."""
    prefix, source = runtime_prefix(given, build="build-lambda")
    if prefix is None:
        raise RuntimeNotBuilt("--custom-runtime needs the cpython-mpk runtime, which an "
                              "installed faastlane does not include: "
                              + how_to_get_the_runtime("--python-prefix DIR"))
    if not os.access(os.path.join(prefix, "bin", "python3"), os.X_OK):
        fix = "run `make -C cpython-mpk lambda`, or pass --python-prefix" \
            if source == FROM_CHECKOUT \
            else "build one with `make -C cpython-mpk lambda` in a source checkout of " \
                 "faastlane (its prefix is cpython-mpk/build-lambda)"
        raise RuntimeNotBuilt(f"the cpython-mpk runtime is not built ({prefix}/bin/python3 "
                              f"is missing, from {source}): {fix}")
    return prefix


def _prefix_version(prefix: str) -> str:
    found = sorted(glob.glob(os.path.join(prefix, "lib", "python3.*", "os.py")))
    if not found:
        raise RuntimeNotBuilt(f"{prefix} holds no Python standard library (lib/python3.*)")
    return os.path.basename(os.path.dirname(found[-1])).removeprefix("python")


def _waivers(composition: Any) -> list[Waiver]:
    return app_waivers(composition.app.settings.inspector_waivers)


def _runtime_layer(prefix: str, version: str, out_dir: str, scratch: str,
                   waivers: list[Waiver]) -> Archive:
    """bootstrap + the interpreter (pruned) + awslambdaric built for its version."""
    stage = os.path.join(scratch, "runtime")
    os.makedirs(stage)
    bootstrap = os.path.join(stage, "bootstrap")
    with open(bootstrap, "w", encoding="utf-8") as handle:
        handle.write(BOOTSTRAP)
    os.chmod(bootstrap, 0o755)
    shutil.copytree(prefix, os.path.join(stage, "cpython-mpk"), symlinks=True,
                    ignore=_ignore_unused)
    client = vendor([], version, [RUNTIME_INTERFACE_CLIENT])
    assert client is not None
    # The interpreter (its gate included), lib-dynload and awslambdaric's extension.
    check_trees([(stage, ""), (client, "python/")], waivers, "runtime-layer.zip")
    _check_glibc(client, prefix)
    # The interpreter's own standard library too: compiled by that interpreter, unless
    # that makes the zip too large to upload directly.
    trees = [(stage, ""), (client, "python/")]
    path = os.path.join(out_dir, "runtime-layer.zip")
    if compile_trees([stage, client], version, prefix):
        archive = write_zip(path, trees, pyc_tag=cache_tag(version))
        if archive.size <= limits.LAMBDA_ZIP.limit:
            return archive
        note("the runtime layer with its bytecode is over the direct upload limit: it "
             "ships source only, compiled at each cold start")
    return write_zip(path, trees)


def _check_glibc(tree: str, prefix: str) -> None:
    """Refuse a layer with an ELF file the target's loader would reject."""
    target = glibc.LAMBDA_CUSTOM_RUNTIME_GLIBC
    newest = glibc.newest_needed(tree)
    if newest is not None and newest[0] > target:
        version, path = newest
        raise RuntimeNotBuilt(
            f"{os.path.relpath(path, tree)} in the runtime layer needs glibc "
            f"{glibc.dotted(version)}, but {CUSTOM_RUNTIME} has {glibc.dotted(target)}: "
            f"{prefix} was built on a newer system; build the runtime for Lambda with "
            "`make -C cpython-mpk lambda` (in an old-glibc root) and use its "
            "cpython-mpk/build-lambda")


def _ignore_unused(directory: str, names: list[str]) -> set[str]:
    ignored = {n for n in names if n == "__pycache__" or n.endswith((".a", ".pyc"))
               or n == "faastlane-build.log"}
    if os.path.basename(directory).startswith("python3."):
        ignored |= {n for n in names if n.startswith(_PREFIX_UNUSED)}
    if os.path.basename(directory) in ("include", "share"):
        ignored |= set(names)
    return ignored
