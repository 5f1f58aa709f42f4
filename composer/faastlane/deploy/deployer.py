"""Stages 2 and 3 of a deployment: decide which platform calls a package needs, then make
them, reporting each. The platform clients (``openwhisk``, ``aws_lambda``) are passed in,
so the same plan runs against the real service or a local endpoint."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from . import images
from .aws_lambda import FunctionSpec, LambdaClient
from .bundle import LambdaPackage, OpenWhiskPackage
from .image_bundle import LambdaImagePackage, OpenWhiskImagePackage
from .limits import MB
from .openwhisk import ActionSpec, OpenWhiskClient

Report = Callable[[str], None]
RUNTIME_LAYER = "faastlane-cpython-mpk"


@dataclass
class Deployed:
    name: str
    platform: str
    created: bool
    layers: list[str] = field(default_factory=list)


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def deploy_openwhisk(package: OpenWhiskPackage, client: OpenWhiskClient, name: str,
                     image: str | None, memory_mb: int | None, timeout_s: int | None,
                     report: Report) -> Deployed:
    """One PUT: the action zip as a stock-kind action, or as the code of a --docker one."""
    spec = ActionSpec(name, _read(package.action.path), package.kind, image,
                      memory_mb=memory_mb, timeout_ms=timeout_s * 1000 if timeout_s else None,
                      provide_api_key=package.spills)
    runs_on = f"image {image}" if image else f"kind {package.kind}"
    report(f"PUT action {client.config.namespace}/{name} ({runs_on}, "
           f"{package.action.size} bytes zipped)")
    client.put_action(spec)
    return Deployed(name, "openwhisk", created=True)


def deploy_lambda(package: LambdaPackage, client: LambdaClient, name: str, role: str | None,
                  memory_mb: int, timeout_s: int, report: Report) -> Deployed:
    """Publish the layers, then create the function or update its code and settings."""
    layers = []
    if package.runtime_layer is not None:
        report(f"publish layer {RUNTIME_LAYER} ({package.runtime_layer.size} bytes)")
        layers.append(client.publish_layer(RUNTIME_LAYER, _read(package.runtime_layer.path),
                                           package.runtime))
    layer_name = f"{name}-faastlane"
    report(f"publish layer {layer_name} ({package.layer.size} bytes)")
    layers.append(client.publish_layer(layer_name, _read(package.layer.path), package.runtime))
    spec = FunctionSpec(name, _read(package.function.path), package.runtime, package.handler,
                        role, layers, memory_mb, timeout_s)
    exists = client.exists(name)
    report(f"{'update' if exists else 'create'} function {name} ({package.runtime}, "
           f"handler {package.handler})")
    if exists:
        client.update_function(spec)
    else:
        client.create_function(spec)
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
                           timeout_s: int | None, report: Report) -> Deployed:
    """A Docker (blackbox) action: the image pushed if asked, then one PUT naming it,
    with the small action zip as its code."""
    image = publish_image(package.image, registry, package.built is not None, report)
    spec = ActionSpec(name, _read(package.action.path), package.kind, image,
                      memory_mb=memory_mb, timeout_ms=timeout_s * 1000 if timeout_s else None,
                      provide_api_key=package.spills)
    report(f"PUT action {client.config.namespace}/{name} (blackbox, image {image}, "
           f"{package.action.size} bytes zipped)")
    client.put_action(spec)
    return Deployed(name, "openwhisk", created=True)


def deploy_lambda_image(package: LambdaImagePackage, client: LambdaClient, name: str,
                        role: str | None, registry: str | None, memory_mb: int,
                        timeout_s: int, report: Report) -> Deployed:
    """A container-image function (``PackageType: Image``): push, then create or update."""
    uri = publish_image(package.image.tag, registry, True, report)
    spec = FunctionSpec(name, b"", "", "", role, [], memory_mb, timeout_s, image_uri=uri)
    exists = client.exists(name)
    report(f"{'update' if exists else 'create'} function {name} (image {uri}, "
           f"{package.image.size / MB:.0f} MB)")
    if exists:
        client.update_function(spec)
    else:
        client.create_function(spec)
    return Deployed(name, "lambda", created=not exists)
