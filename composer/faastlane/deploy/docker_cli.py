"""The one module that talks to the Docker engine: through the ``docker`` CLI, as
``docker/build.sh`` does, so whatever engine and configuration that CLI uses applies
(``DOCKER_HOST``, contexts, ``~/.docker/config.json`` credentials for ``push``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

from .errors import DeployError

BUILD_TIMEOUT_S = 1800  # copying a few hundred MB of packages into a layer, on a busy host


class DockerUnavailable(DeployError):
    """No ``docker`` CLI, or no engine answering it: nothing was built."""


class DockerFailed(DeployError):
    """A docker command failed: the command and the engine's last words."""


def docker(*args: str, timeout: float = 120) -> str:
    """Run ``docker ARGS``; its standard output, or DockerFailed with its error."""
    if shutil.which("docker") is None:
        raise DockerUnavailable("building an image needs Docker: install docker.io and start "
                                "dockerd (in a source checkout, docker/ensure-dockerd.sh "
                                "does both)")
    try:
        done = subprocess.run(["docker", *args], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise DockerFailed(f"docker {args[0]} did not finish within {timeout:.0f} s") from None
    if done.returncode != 0:
        lines = (done.stderr.strip() or done.stdout.strip() or "(no output)").splitlines()
        raise DockerFailed(f"docker {' '.join(args[:2])} failed: {' | '.join(lines[-3:])}")
    return done.stdout


def require_engine() -> None:
    """DockerUnavailable unless an engine answers (before any slow packaging work)."""
    try:
        docker("version", "--format", "{{.Server.Version}}", timeout=30)
    except DockerFailed:
        raise DockerUnavailable("the Docker engine is not running: start dockerd "
                                "(in a source checkout: docker/ensure-dockerd.sh)") from None


def image_info(ref: str) -> dict[str, Any] | None:
    """``docker image inspect`` of a local image, or None when the engine has none."""
    try:
        info: dict[str, Any] = json.loads(docker("image", "inspect", ref))[0]
    except DockerFailed:
        return None
    return info


def build(context: str, tag: str) -> None:
    """``docker build`` of a prepared context (its Dockerfile names the base by ID)."""
    docker("build", "-q", "-t", tag, context, timeout=BUILD_TIMEOUT_S)


def run_python(image: str, python: str, code: str) -> str:
    """Run ``python -c code`` in a throw-away container of the image; its output."""
    return docker("run", "--rm", "--network", "none", "--entrypoint", python, image,
                  "-c", code)


def tag(source: str, target: str) -> None:
    docker("tag", source, target)


def push(ref: str) -> None:
    docker("push", "-q", ref, timeout=BUILD_TIMEOUT_S)
