"""The local AWS endpoints the benchmark needs, started with the examples' own script.

``examples/local-aws/local_aws.py start`` runs moto_server (DynamoDB, SNS, SQS and the
S3 the baselines' claim checks use) and the Comprehend Medical stand-in, creates the
examples' resources and prints the ``export`` lines; they are applied to this process's
environment, which every worker inherits. ``stop`` ends exactly those servers.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from typing import Iterator

from .catalogue import LOCAL_AWS
from .claimcheck import S3Store

SCRIPT = LOCAL_AWS / "local_aws.py"


def _exports(text: str) -> dict[str, str]:
    env = {}
    for line in text.splitlines():
        if line.startswith("export "):
            key, _, value = line.removeprefix("export ").partition("=")
            env[key] = value.split("#", 1)[0].strip()
    return env


@contextmanager
def local_aws() -> Iterator[dict[str, str]]:
    """Start the endpoints, point this process at them, yield the exports; stop after."""
    state = tempfile.mkdtemp(prefix="faastlane-bench-aws-")
    started = subprocess.run([sys.executable, str(SCRIPT), "start", "--state-dir", state],
                             capture_output=True, text=True, timeout=120, check=False)
    if started.returncode != 0:
        raise RuntimeError(f"examples/local-aws could not start: {started.stderr.strip()}")
    saved = dict(os.environ)
    try:
        env = _exports(started.stdout)
        # Never a real account: no profile, no metadata service.
        os.environ.update({"AWS_CONFIG_FILE": os.devnull,
                           "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                           "AWS_EC2_METADATA_DISABLED": "true", **env})
        os.environ.pop("AWS_PROFILE", None)
        S3Store().create_bucket()
        yield env
    finally:
        os.environ.clear()
        os.environ.update(saved)
        subprocess.run([sys.executable, str(SCRIPT), "stop", "--state-dir", state],
                       capture_output=True, timeout=60, check=False)
