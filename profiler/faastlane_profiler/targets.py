"""Running the probe where the profile is wanted: here, in a Docker container with CPU
limits, or as an action on OpenWhisk or AWS Lambda (deployed with the deploy code).

On a platform the probe is one small action, ``faastlane-profiler`` by default: its zip
holds ``faastlane_profiler/`` and ``faastlane_runtime/`` beside the two entry points, so
it runs on the stock Python kinds and on the Faastlane runtime image alike.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from typing import Any

from faastlane.deploy.archive import write_zip
from faastlane.deploy.errors import DeployError

from . import handoff, probe

PROFILER_SOURCE = os.path.dirname(os.path.abspath(__file__))
ACTION_NAME = "faastlane-profiler"
LAMBDA_RUNTIME = "python3.13"

_ENTRY = '''"""Faastlane's profiler as an action: OpenWhisk main(args), or run as a script."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from faastlane_profiler.probe import main, run_cli  # noqa: E402,F401

if __name__ == "__main__":
    sys.exit(run_cli(sys.argv[1:]))
'''

_LAMBDA_ENTRY = '''"""Faastlane's profiler as a Lambda function: handler lambda_function.handler."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from faastlane_profiler.probe import handler  # noqa: E402,F401
'''


def _runtime_source() -> str:
    """The runtime package: beside the installed ``faastlane`` package."""
    import faastlane.runtime  # noqa: PLC0415

    return os.path.dirname(os.path.abspath(faastlane.runtime.__file__))


def write_probe_action(folder: str) -> str:
    """The probe's action folder (entry points, profiler, runtime); returns it."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(PROFILER_SOURCE, os.path.join(folder, "faastlane_profiler"), ignore=ignore)
    shutil.copytree(_runtime_source(), os.path.join(folder, "faastlane_runtime"),
                    ignore=ignore)
    for name, text in (("__main__.py", _ENTRY), ("lambda_function.py", _LAMBDA_ENTRY)):
        with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    return folder


def probe_zip(scratch: str) -> bytes:
    action = write_probe_action(os.path.join(scratch, "probe"))
    archive = write_zip(os.path.join(scratch, "probe.zip"), [(action, "")])
    with open(archive.path, "rb") as handle:
        return handle.read()


def _params(max_processes: int | None, seconds: float) -> dict[str, Any]:
    return {"max_processes": max_processes, "target_seconds": seconds}


def profile_local(max_processes: int | None, seconds: float) -> dict[str, Any]:
    return probe.profile(max_processes, seconds)


def profile_docker(image: str, cpus: str | None, cpuset: str | None, memory_mb: int | None,
                   max_processes: int | None, seconds: float) -> dict[str, Any]:
    """The probe in a fresh container of ``image`` with Docker's CPU limits."""
    limits = [*(["--cpus", cpus] if cpus else []),
              *(["--cpuset-cpus", cpuset] if cpuset else []),
              *(["--memory", f"{memory_mb}m"] if memory_mb else [])]
    args = [f"{k}={v}" for k, v in _params(max_processes, seconds).items() if v]
    with tempfile.TemporaryDirectory(prefix="faastlane-profile-") as scratch:
        action = write_probe_action(os.path.join(scratch, "probe"))
        os.chmod(scratch, 0o755)
        try:
            done = subprocess.run(["docker", "run", "--rm", *limits, "-v",
                                   f"{action}:/probe:ro", "--entrypoint", "python3", image,
                                   "/probe", *args],
                                  capture_output=True, text=True, timeout=600)
        except FileNotFoundError:
            raise DeployError("docker is not installed (docker/ensure-dockerd.sh)") from None
    if done.returncode != 0:
        raise DeployError(f"the probe failed in {image}: {done.stderr.strip()[-500:]}")
    profile: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return profile


def profile_openwhisk(client: Any, name: str, kind: str, image: str | None,
                      memory_mb: int | None, max_processes: int | None, seconds: float
                      ) -> dict[str, Any]:
    """Deploy the probe as an action (PUT ...?overwrite=true), invoke it, blocking."""
    from faastlane.deploy.openwhisk import ActionSpec  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="faastlane-profile-") as scratch:
        code = probe_zip(scratch)
    client.put_action(ActionSpec(name, code, kind, image, memory_mb=memory_mb))
    return _with_invoke_costs(client.invoke(name, _params(max_processes, seconds)),
                              lambda params: client.invoke(name, params))


def profile_lambda(client: Any, name: str, role: str | None, memory_mb: int | None,
                   max_processes: int | None, seconds: float) -> dict[str, Any]:
    """Create or update the probe function, then invoke it (RequestResponse)."""
    from faastlane.deploy.aws_lambda import FunctionSpec  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="faastlane-profile-") as scratch:
        code = probe_zip(scratch)
    spec = FunctionSpec(name, code, LAMBDA_RUNTIME, "lambda_function.handler", role, [],
                        memory_mb or 1024, 120)
    if client.exists(name):
        client.update_function(spec)
    else:
        client.create_function(spec)
    return _with_invoke_costs(client.invoke(name, _params(max_processes, seconds)),
                              lambda params: client.invoke(name, params))


def _with_invoke_costs(profile: dict[str, Any], call: Any) -> dict[str, Any]:
    """The platform's profile plus what invoking an action costs there: blocking round
    trips of the probe from here (the client), small and 256 KB."""
    profile.setdefault("handoff", {}).update(handoff.measure_invoke(call))
    return profile
