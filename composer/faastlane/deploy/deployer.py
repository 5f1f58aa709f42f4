"""Stages 2 and 3 of a deployment: decide which platform calls a package needs, then make
them, reporting each. The platform clients (``openwhisk``, ``aws_lambda``) are passed in,
so the same plan runs against the real service or a local endpoint."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .aws_lambda import FunctionSpec, LambdaClient
from .bundle import LambdaPackage, OpenWhiskPackage
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
