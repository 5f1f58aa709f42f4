"""Stages 2 and 3 of a deployment: decide which platform calls a package needs, then make
them, reporting each. The platform clients (``openwhisk``, ``aws_lambda``) are passed in,
so the same plan runs against the real service or a local endpoint."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import images
from .aws_lambda import MEMORY_MB_RANGE, TIMEOUT_S_RANGE, FunctionSpec, LambdaClient
from .bundle import LambdaPackage, OpenWhiskPackage
from .environment import describe
from .errors import DeployError, MissingConfiguration
from .image_bundle import LambdaImagePackage, OpenWhiskImagePackage
from .limits import MB
from .openwhisk import ActionSpec, OpenWhiskClient

Report = Callable[[str], None]
RUNTIME_LAYER = "faastlane-cpython-mpk"
SHARED = "*"  # the owner of a layer that several functions use (the runtime layer)
# How a layer version says that this tool published it, for which function, with what
# content: Lambda layers cannot be tagged, so the description carries it. Only versions
# that carry it are ever reused or deleted.
_LAYER_MARK = re.compile(r"\[faastlane sha256:(?P<digest>[0-9a-f]{64}) "
                         r"runtime:(?P<runtime>\S+) for:(?P<owner>\S+)\]")


@dataclass
class Deployed:
    name: str
    platform: str
    created: bool
    layers: list[str] = field(default_factory=list)


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _environment_note(environment: dict[str, str] | None) -> str:
    """For the report: the action's own variables a deployment sets (names only)."""
    return "" if environment is None else f"; environment: {describe(environment)}"


def deploy_openwhisk(package: OpenWhiskPackage, client: OpenWhiskClient, name: str,
                     image: str | None, memory_mb: int | None, timeout_s: int | None,
                     report: Report, environment: dict[str, str] | None = None) -> Deployed:
    """One PUT: the action zip as a stock-kind action, or as the code of a --docker one."""
    spec = ActionSpec(name, _read(package.action.path), package.kind, image,
                      memory_mb=memory_mb, timeout_ms=timeout_s * 1000 if timeout_s else None,
                      provide_api_key=package.spills, environment=environment)
    runs_on = f"image {image}" if image else f"kind {package.kind}"
    report(f"PUT action {client.config.namespace}/{name} ({runs_on}, "
           f"{package.action.size} bytes zipped{_environment_note(environment)})")
    client.put_action(spec)
    return Deployed(name, "openwhisk", created=True)


def check_lambda(client: LambdaClient, name: str, role: str | None, memory_mb: int | None,
                 timeout_s: int | None) -> dict[str, Any] | None:
    """Every input a Lambda deployment needs, checked before anything is created in the
    account: the settings' bounds, and a role if the function does not exist yet. The
    function's configuration, or None if it is new."""
    for value, (low, high), what in ((memory_mb, MEMORY_MB_RANGE, "--memory (MB)"),
                                     (timeout_s, TIMEOUT_S_RANGE, "--timeout (seconds)")):
        if value is not None and not low <= value <= high:
            raise DeployError(f"{what} {value} is outside Lambda's range {low}-{high}")
    current = client.configuration(name)
    if current is None and not role:
        raise MissingConfiguration(
            f"creating Lambda function {name} needs an execution role: pass --role "
            f"arn:aws:iam::ACCOUNT:role/NAME (or export FAASTLANE_LAMBDA_ROLE)")
    return current


def _kept(current: dict[str, Any] | None, memory_mb: int | None, timeout_s: int | None,
          environment: dict[str, str] | None = None) -> str:
    """For the report: the settings an update keeps, and the variables it sets."""
    kept = [f"{label} {current[key]}{unit}" for key, given, label, unit in (
        ("MemorySize", memory_mb, "memory", " MB"), ("Timeout", timeout_s, "timeout", " s"))
        if current and given is None and key in current]
    variables = ((current or {}).get("Environment") or {}).get("Variables") or {}
    if current and environment is None and variables:
        kept.append(f"environment ({describe(variables)})")
    return (f"; keeps its {' and '.join(kept)}" if kept else "") + \
        _environment_note(environment)


def _layer_mark(code: bytes, runtime: str, owner: str) -> str:
    return f"[faastlane sha256:{hashlib.sha256(code).hexdigest()} runtime:{runtime} for:{owner}]"


def ensure_layer(client: LambdaClient, layer: str, code: bytes, runtime: str, owner: str,
                 what: str, report: Report) -> str:
    """The ARN of a version of ``layer`` with exactly ``code``: the latest version if this
    tool published it with the same content, else a new version."""
    mark = _layer_mark(code, runtime, owner)
    versions = client.layer_versions(layer)
    if versions and mark in versions[0].get("Description", ""):
        report(f"layer {layer} unchanged: version {versions[0]['Version']}")
        arn: str = versions[0]["LayerVersionArn"]
        return arn
    report(f"publish layer {layer} ({len(code)} bytes)")
    return client.publish_layer(layer, code, runtime, f"Faastlane: {what} {mark}")


def prune_layer(client: LambdaClient, layer: str, owner: str, keep: str,
                report: Report) -> None:
    """Delete the versions of ``layer`` this tool published for ``owner`` other than
    ``keep`` (once the function uses ``keep``). Versions without the tool's mark, or
    marked for another function, are never touched; a deletion that fails is reported
    and the deployment stands."""
    stale = [v for v in client.layer_versions(layer) if v["LayerVersionArn"] != keep
             and (found := _LAYER_MARK.search(v.get("Description", "")))
             and found["owner"] == owner]
    deleted = []
    for version in reversed(stale):  # oldest first
        try:
            client.delete_layer_version(layer, version["Version"])
        except DeployError as err:
            report(f"could not delete superseded layer {layer} version "
                   f"{version['Version']}: {err}")
            break
        deleted.append(str(version["Version"]))
    if deleted:
        report(f"deleted superseded layer {layer} version(s) {', '.join(deleted)}")


def deploy_lambda(package: LambdaPackage, client: LambdaClient, name: str, role: str | None,
                  memory_mb: int | None, timeout_s: int | None, report: Report,
                  environment: dict[str, str] | None = None) -> Deployed:
    """Check the inputs; publish the layers whose content changed; create the function or
    update its code and settings (memory and time limit only when given); then delete the
    function's own layer versions it no longer uses."""
    current = check_lambda(client, name, role, memory_mb, timeout_s)
    layers = []
    if package.runtime_layer is not None:  # shared by every custom-runtime function
        layers.append(ensure_layer(client, RUNTIME_LAYER, _read(package.runtime_layer.path),
                                   package.runtime, SHARED, "cpython-mpk runtime", report))
    layer_name = f"{name}-faastlane"
    layers.append(ensure_layer(client, layer_name, _read(package.layer.path), package.runtime,
                               name, f"runtime library and dependencies of {name}", report))
    spec = FunctionSpec(name, _read(package.function.path), package.runtime, package.handler,
                        role, layers, memory_mb, timeout_s, environment=environment)
    exists = current is not None
    report(f"{'update' if exists else 'create'} function {name} ({package.runtime}, "
           f"handler {package.handler}{_kept(current, memory_mb, timeout_s, environment)})")
    if exists:
        client.update_function(spec)
    else:
        client.create_function(spec)
    prune_layer(client, layer_name, name, layers[-1], report)
    return Deployed(name, "lambda", created=not exists, layers=layers)


def publish_image(image: str, registry: str | None, built: bool, report: Report) -> str:
    """Push the image to ``registry`` and return the name there; with no registry, the
    local name (and, for an image built here, why the platform may not find it)."""
    if registry:
        report(f"push {image} to {registry}")
        return images.push(image, registry)
    if built:
        report(f"not pushed (no --registry): {image} is only in this machine's Docker "
               f"engine; a platform pulls images by name, so pass --registry "
               f"HOST[:PORT][/PATH] (after docker login) unless it runs on this engine")
    return image


def deploy_openwhisk_image(package: OpenWhiskImagePackage, client: OpenWhiskClient, name: str,
                           registry: str | None, memory_mb: int | None,
                           timeout_s: int | None, report: Report,
                           environment: dict[str, str] | None = None) -> Deployed:
    """A Docker (blackbox) action: the image pushed if asked, then one PUT naming it,
    with the small action zip as its code."""
    image = publish_image(package.image, registry, package.built is not None, report)
    spec = ActionSpec(name, _read(package.action.path), package.kind, image,
                      memory_mb=memory_mb, timeout_ms=timeout_s * 1000 if timeout_s else None,
                      provide_api_key=package.spills, environment=environment)
    report(f"PUT action {client.config.namespace}/{name} (blackbox, image {image}, "
           f"{package.action.size} bytes zipped{_environment_note(environment)})")
    client.put_action(spec)
    return Deployed(name, "openwhisk", created=True)


def deploy_lambda_image(package: LambdaImagePackage, client: LambdaClient, name: str,
                        role: str | None, registry: str | None, memory_mb: int | None,
                        timeout_s: int | None, report: Report,
                        environment: dict[str, str] | None = None) -> Deployed:
    """A container-image function (``PackageType: Image``): check the inputs, push, then
    create or update."""
    current = check_lambda(client, name, role, memory_mb, timeout_s)
    uri = publish_image(package.image.tag, registry, True, report)
    spec = FunctionSpec(name, b"", "", "", role, [], memory_mb, timeout_s, image_uri=uri,
                        environment=environment)
    exists = current is not None
    report(f"{'update' if exists else 'create'} function {name} (image {uri}, "
           f"{package.image.size / MB:.0f} MB"
           f"{_kept(current, memory_mb, timeout_s, environment)})")
    if exists:
        client.update_function(spec)
    else:
        client.create_function(spec)
    return Deployed(name, "lambda", created=not exists)
