"""Derived images: a base image (the Faastlane runtime image by default) plus what an app
needs on top, built on this machine by the local Docker engine, tagged by a hash of
their inputs.

Why build from the base instead of running pip in a ``RUN`` step: the packages are
installed here, with ``pip install --target`` for the *base image's* interpreter (asked
for its version and ``site-packages``), through the same cache the zips use, then copied
into that ``site-packages``. So the build needs no network and no pip inside the image,
and the binary inspector scans exactly the bytes the image will hold, each file
labelled with its path in the image (``/opt/cpython-mpk/lib/python3.13/site-packages/
numpy.libs/...``), which is what a waiver names. The inspection record of what the
image adds is kept in the image at :data:`RECORD_IN_IMAGE`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Any

from faastlane import cache, progress
from faastlane.checkout import checkout_file

from . import docker_cli
from .errors import DeployError

# Only a source checkout has the script that builds the runtime image (None installed).
RUNTIME_BUILD = checkout_file("docker", "build.sh")
RUNTIME_LATEST = "faastlane/runtime:latest"
RECORD_IN_IMAGE = "/opt/faastlane/inspection.json"
_PYTHON_PROBE = ("import json, sys, sysconfig; print(json.dumps({'python': sys.executable, "
                 "'version': '%d.%d' % sys.version_info[:2], "
                 "'site': sysconfig.get_paths()['purelib']}))")


@dataclass(frozen=True)
class BaseImage:
    """An image to build on, and where its Python keeps packages."""

    ref: str  # as given: a tag or an ID
    image_id: str
    python: str  # the interpreter's path in the image
    version: str  # "3.13": the wheels to install
    site: str  # its site-packages directory


@dataclass(frozen=True)
class Layer:
    """A folder on this machine copied to ``target`` in the image."""

    source: str
    target: str


@dataclass(frozen=True)
class BuiltImage:
    tag: str
    size: int  # bytes, uncompressed, all layers (what Lambda's 10 GB limit counts)
    base: str
    built: bool  # False: an image of these exact inputs was there already


@dataclass
class ImageRecipe:
    """What goes on top of the base: layers, an inspection record, image settings."""

    repo: str
    layers: list[Layer]
    record: dict[str, Any]
    settings: list[str] = field(default_factory=list)  # ENV/WORKDIR/ENTRYPOINT/CMD lines


def repository(platform: str, app: str) -> str:
    """A valid image repository for an app: ``faastlane/openwhisk-ml-predict``."""
    name = re.sub(r"[^a-z0-9._-]+", "-", app.lower()).strip("-._") or "app"
    return f"faastlane/{platform}-{name}"


def runtime_image() -> str:
    """The Faastlane runtime image: ``docker/build.sh runtime`` from a source checkout
    (a cache hit when its inputs are unchanged), else a local ``faastlane/runtime``."""
    if RUNTIME_BUILD and os.access(RUNTIME_BUILD, os.X_OK):
        done = subprocess.run([RUNTIME_BUILD, "runtime"], capture_output=True, text=True,
                              timeout=docker_cli.BUILD_TIMEOUT_S)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-3:]
            raise DeployError(f"docker/build.sh runtime failed: {' | '.join(last)}")
        return done.stdout.strip().splitlines()[-1]
    if docker_cli.image_info(RUNTIME_LATEST):
        return RUNTIME_LATEST
    raise DeployError(f"no Faastlane runtime image here ({RUNTIME_LATEST}): build it with "
                      "docker/build.sh runtime in a source checkout of faastlane, or name a "
                      "base image with Python (--docker IMAGE / --image IMAGE)")


def resolve_base(ref: str | None) -> BaseImage:
    """The base image (the runtime image when None) and its interpreter, asked once per
    image ID (cached beside the vendored packages)."""
    ref = ref or runtime_image()
    info = docker_cli.image_info(ref)
    if info is None:
        raise DeployError(f"no image {ref} in the local Docker engine: build it (the "
                          f"runtime image: docker/build.sh runtime in a source checkout) "
                          f"or docker pull it first")
    image_id = str(info["Id"])
    cached = os.path.join(cache.cache_root(), "docker",
                          f"python-{image_id.split(':')[-1][:16]}.json")
    try:
        with open(cached, encoding="utf-8") as handle:
            probe = json.load(handle)
    except (OSError, ValueError):
        try:
            probe = json.loads(docker_cli.run_python(ref, "python3", _PYTHON_PROBE))
        except (docker_cli.DockerFailed, ValueError):
            raise DeployError(f"image {ref} has no python3 on its PATH that can say where "
                              f"packages go; base the action on an image with Python 3") \
                from None
        os.makedirs(os.path.dirname(cached), exist_ok=True)
        with open(cached, "w", encoding="utf-8") as handle:
            json.dump(probe, handle)
    return BaseImage(ref, image_id, probe["python"], probe["version"], probe["site"])


def dockerfile(base: BaseImage, recipe: ImageRecipe) -> str:
    lines = [f"# Built by faastlane: {recipe.repo} on {base.ref}", f"FROM {base.ref}"]
    lines += [f"COPY layer{i}/ {layer.target}/" for i, layer in enumerate(recipe.layers)]
    # Bytecode by the image's own interpreter: Lambda's file system is read-only, so
    # without it every cold start compiles scipy and scikit-learn again (ml-predict's
    # imports, back to back on one loaded host: 24-28 s without, 10-11 s with). A file
    # that does not compile (a package's Python 2 test data) must not fail the build;
    # importing it would.
    targets = " ".join(sorted({layer.target for layer in recipe.layers}))
    lines.append(f"RUN {base.python} -m compileall -q -j0 {targets} >/dev/null || true")
    lines += [f"COPY inspection.json {RECORD_IN_IMAGE}",
              f'LABEL org.faastlane.base="{base.ref}" '
              f'org.faastlane.inspection="{RECORD_IN_IMAGE}"', *recipe.settings]
    return "\n".join(lines) + "\n"


def _link_tree(source: str, target: str) -> None:
    """Hard links where the file system allows (hundreds of MB of packages), else copies.
    Bytecode is left out: pip compiled it for this machine's Python, maybe not the
    image's; the image compiles its own (:func:`dockerfile`)."""
    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)
    shutil.copytree(source, target, symlinks=True, copy_function=link,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def build_image(base: BaseImage, recipe: ImageRecipe, code_layers: frozenset[int] = frozenset()
                ) -> BuiltImage:
    """Build the recipe on the base, tagged ``repo:<hash of the inputs>``; a cache hit
    when an image of that tag exists. ``code_layers`` are hashed by content (small),
    the others by file listing (large package trees)."""
    text = dockerfile(base, recipe)
    record = json.dumps(recipe.record, sort_keys=True)
    tag = f"{recipe.repo}:" + cache.key(
        base.image_id, text, record,
        *(cache.tree_digest(layer.source, contents=i in code_layers)
          for i, layer in enumerate(recipe.layers)))
    info = docker_cli.image_info(tag)
    if info is None:
        contexts = os.path.join(cache.cache_root(), "docker")
        os.makedirs(contexts, exist_ok=True)
        context = tempfile.mkdtemp(prefix=".context-", dir=contexts)
        try:
            for i, layer in enumerate(recipe.layers):
                _link_tree(layer.source, os.path.join(context, f"layer{i}"))
            with open(os.path.join(context, "inspection.json"), "w", encoding="utf-8") as out:
                out.write(record + "\n")
            with open(os.path.join(context, "Dockerfile"), "w", encoding="utf-8") as out:
                out.write(text)
            with progress.step(f"building image {tag}"):
                docker_cli.build(context, tag)
        finally:
            shutil.rmtree(context, ignore_errors=True)
        info = docker_cli.image_info(tag)
        if info is None:
            raise DeployError(f"docker build reported success but {tag} is not there")
        return BuiltImage(tag, int(info["Size"]), base.ref, built=True)
    return BuiltImage(tag, int(info["Size"]), base.ref, built=False)


def push(image: str, registry: str) -> str:
    """Tag the image into ``registry`` (``HOST[:PORT][/PATH]``) and push it there; the
    name the platform pulls."""
    remote = f"{registry.rstrip('/')}/{image.split('/', 1)[-1]}"
    docker_cli.tag(image, remote)
    docker_cli.push(remote)
    return remote
