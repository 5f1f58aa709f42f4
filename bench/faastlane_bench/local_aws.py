"""The local AWS endpoints the benchmark needs: the examples' own, ``examples/local-aws``.

Its ``local_aws.py``, loaded from the checkout, starts moto_server (DynamoDB, SNS, SQS and
the S3 the baselines' claim checks use) and the Comprehend Medical stand-in, creates the
examples' resources and returns the configuration that its ``start`` command prints as
``export`` lines. That configuration is applied to this process's environment, which
every worker inherits; ``stop`` ends exactly those servers.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from .catalogue import LOCAL_AWS
from .claimcheck import S3Store


def _examples_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("examples_local_aws",
                                                  LOCAL_AWS / "local_aws.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextmanager
def local_aws() -> Iterator[dict[str, str]]:
    """Start the endpoints, point this process at them, yield their configuration; stop
    them and restore the environment after."""
    script = _examples_script()
    state = Path(tempfile.mkdtemp(prefix="faastlane-bench-aws-"))
    saved = dict(os.environ)
    # Never a real account: none of the host's AWS settings, no metadata service.
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        del os.environ[key]
    os.environ.update({"AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                       "AWS_EC2_METADATA_DISABLED": "true"})
    try:
        try:
            env = script.start(state)
        except RuntimeError as error:
            raise RuntimeError(f"examples/local-aws could not start: {error}") from None
        os.environ.update(env)
        S3Store().create_bucket()
        yield env
    finally:
        script.stop(state)
        shutil.rmtree(state, ignore_errors=True)  # the servers' logs and state
        os.environ.clear()
        os.environ.update(saved)
