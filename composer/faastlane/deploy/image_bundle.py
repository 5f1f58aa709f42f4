"""Stage 1 for apps too big for a zip: the action with its packages in a container image.

OpenWhisk Docker action (``--docker [BASE]``)
    an image derived from BASE (default: the Faastlane runtime image, whose action server
    speaks OpenWhisk's action protocol) with the requirements installed in its Python's
    ``site-packages``, and ``action.zip`` *without* them: the action is created with
    ``exec.kind = "blackbox"``, ``exec.image`` = the image and the zip as its code
    (``wsk action create NAME action.zip --docker IMAGE``). An app without requirements
    runs on BASE itself.
AWS Lambda container image (``--image [BASE]``)
    an image derived from BASE with the requirements, ``awslambdaric`` (the Runtime API
    client) and the whole action in ``/var/task``; its entry point is the base's Python
    running ``awslambdaric lambda_function.handler`` (``PackageType: Image``).

Both are inspected before they are built; the findings are labelled by their path in
the image, and ``faastlane.json`` waivers apply to them as to any shipped file.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from typing import Any

from faastlane.app.requirements import requirement_files
from faastlane.compose.action import prepare, write_action
from faastlane.compose.plan import DEPLOY_TARGET
from faastlane.inspector.report import Report
from faastlane.inspector.shipment import app_waivers, inspect_shipment

from . import limits
from .archive import Archive, write_zip
from .bundle import LAMBDA_HANDLER, RUNTIME_INTERFACE_CLIENT, calls_aws_services
from .docker_cli import require_engine
from .images import (
    BaseImage,
    BuiltImage,
    ImageRecipe,
    Layer,
    build_image,
    repository,
    resolve_base,
    runtime_image,
)
from .vendoring import imports_aws_sdk, vendor, vendor_app

LAMBDA_TASK_ROOT = "/var/task"


@dataclass(frozen=True)
class OpenWhiskImagePackage:
    name: str
    action: Archive  # the action zip, without third-party packages
    image: str  # the image the action names (built, or the base as it is)
    built: BuiltImage | None  # None: no requirements, the base image runs the action
    spills: bool = False
    kind: str = "blackbox"


@dataclass(frozen=True)
class LambdaImagePackage:
    name: str
    image: BuiltImage


def _record(report: Report, prefix: str) -> dict[str, Any]:
    """The part of an inspection about files under ``prefix`` (what the image adds),
    with the waivers that covered them: the record kept in the image."""
    files = [r for r in report.files if r.file.startswith(prefix)]
    used = {id(f.waiver) for r in files for f in r.findings if f.waiver is not None}
    part = Report(report.gate, report.gate_note, files,
                  [w for w in report.waivers if id(w) in used])
    return part.to_json()


def package_openwhisk_image(app_path: str, out_zip: str, base: str | None = None,
                            **planning: Any) -> OpenWhiskImagePackage:
    """action.zip plus, when the app has requirements, the derived image holding them."""
    composition = prepare(app_path, keys=DEPLOY_TARGET, **planning)
    name = composition.app.name
    # The base images' Python has no boto3: vendored when the app needs it.
    app, code = composition.app, list(composition.app.code.values())  # code: a template's
    needs_packages = bool(requirement_files(app.root, code)) or imports_aws_sdk(
        app.root, code) or calls_aws_services(composition)
    waivers = app_waivers(composition.app.settings.inspector_waivers)
    built: BuiltImage | None = None
    if needs_packages or base is None:
        require_engine()
    with tempfile.TemporaryDirectory(prefix="faastlane-package-") as scratch:
        action = write_action(composition, os.path.join(scratch, "action"))
        if needs_packages:
            source = resolve_base(base)
            packages = vendor_app(app.root, source.version, runtime_has_sdk=False,
                                  uses_aws_services=calls_aws_services(composition),
                                  code_dirs=code)
            assert packages is not None
            site = source.site + "/"
            report = inspect_shipment(action, waivers, [(packages, site)])
            built = build_image(source, ImageRecipe(
                repository("openwhisk", name), [Layer(packages, source.site)],
                _record(report, site)))
        else:
            inspect_shipment(action, waivers)
        archive = write_zip(out_zip, [(action, "")])
    limits.OPENWHISK_CODE.check(archive.size, out_zip)
    image = built.tag if built else (base or runtime_image())
    return OpenWhiskImagePackage(name, archive, image, built,
                                 spills=composition.options.max_containers > 1)


def lambda_settings(source: BaseImage) -> list[str]:
    """The image's Lambda entry point: the base's Python running the Runtime API client,
    which polls ``$AWS_LAMBDA_RUNTIME_API`` and calls the handler from /var/task."""
    return [f"ENV LAMBDA_TASK_ROOT={LAMBDA_TASK_ROOT}", f"WORKDIR {LAMBDA_TASK_ROOT}",
            f"ENTRYPOINT {json.dumps([source.python, '-m', 'awslambdaric'])}",
            f"CMD {json.dumps([LAMBDA_HANDLER])}"]


def package_lambda_image(app_path: str, base: str | None = None,
                         **planning: Any) -> LambdaImagePackage:
    """The Lambda container image: requirements, awslambdaric and the action."""
    composition = prepare(app_path, keys=DEPLOY_TARGET, **planning)
    waivers = app_waivers(composition.app.settings.inspector_waivers)
    require_engine()
    source = resolve_base(base)
    with tempfile.TemporaryDirectory(prefix="faastlane-package-") as scratch:
        action = write_action(composition, os.path.join(scratch, "action"))
        app_packages = vendor_app(composition.app.root, source.version, runtime_has_sdk=False,
                                  uses_aws_services=calls_aws_services(composition),
                                  code_dirs=composition.app.code.values())
        trees = [t for t in (app_packages,
                             vendor([], source.version, [RUNTIME_INTERFACE_CLIENT])) if t]
        report = inspect_shipment(action, waivers, [(t, source.site + "/") for t in trees])
        # The big, rarely changing packages first: a code change rebuilds one small layer.
        layers = [Layer(t, source.site) for t in trees] + [Layer(action, LAMBDA_TASK_ROOT)]
        built = build_image(source, ImageRecipe(
            repository("lambda", composition.app.name), layers, _record(report, ""),
            lambda_settings(source)), code_layers=frozenset({len(layers) - 1}))
    limits.LAMBDA_IMAGE.check(built.size, f"image {built.tag}")
    return LambdaImagePackage(composition.app.name, built)
