"""The Lambda packages run as Lambda runs them: unpacked into a task root and /opt, driven
by the real awslambdaric through a local Runtime API endpoint (runtime_api.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from faastlane.deploy.bundle import LambdaPackage, package_lambda
from integration.apps import ROOT

from .deploy_apps import FINRA, expected_small_output
from .runtime_api import RuntimeApi

PYTHON_PREFIX = ROOT / "cpython-mpk" / "build-lambda"  # the custom runtime's (old glibc)


def unpack(package: LambdaPackage, root: Path) -> tuple[Path, Path]:
    """function.zip -> task/, the layers -> opt/ (with Info-ZIP: it keeps modes and links)."""
    task, opt = root / "task", root / "opt"
    for archive, target in [(package.function, task)] + [(a, opt) for a in package.layers()]:
        target.mkdir(exist_ok=True)
        subprocess.run(["unzip", "-q", "-o", archive.path, "-d", str(target)], check=True)
    return task, opt


def lambda_environment(api: RuntimeApi, task: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "AWS_LAMBDA_RUNTIME_API": api.address,
            "LAMBDA_TASK_ROOT": str(task), "_HANDLER": "lambda_function.handler",
            "AWS_LAMBDA_FUNCTION_NAME": "faastlane-test", "AWS_LAMBDA_FUNCTION_VERSION": "1",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024", "AWS_REGION": "us-east-1"}


@pytest.fixture
def runtime_api() -> Iterator[RuntimeApi]:
    api = RuntimeApi()
    yield api
    api.close()


def start(command: list[str], env: dict[str, str], cwd: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen(command, env=env, cwd=cwd, stdout=log.open("wb"),
                            stderr=subprocess.STDOUT)


@pytest.fixture
def stock_runtime(runtime_api: RuntimeApi, small_lambda: LambdaPackage, tmp_path: Path
                  ) -> Iterator[RuntimeApi]:
    """The small app on a python3.x-like runtime: awslambdaric, layer on PYTHONPATH."""
    task, opt = unpack(small_lambda, tmp_path)
    env = dict(lambda_environment(runtime_api, task), PYTHONPATH=str(opt / "python"))
    process = start([sys.executable, "-m", "awslambdaric", "lambda_function.handler"], env,
                    task, tmp_path / "runtime.log")
    yield runtime_api
    process.kill()
    process.wait()


def test_results_come_back_and_the_function_stays_warm(stock_runtime: RuntimeApi):
    for calls in (1, 2):
        outcome = stock_runtime.invoke({"name": "grace hopper"})
        assert outcome.kind == "response"
        assert outcome.body == expected_small_output("grace hopper", calls)


def test_a_failed_workflow_has_lambdas_error_shape(stock_runtime: RuntimeApi):
    outcome = stock_runtime.invoke({"name": "x", "fail": "now"})
    assert outcome.kind == "error"
    assert outcome.body["errorType"] == "ValueError"  # the ASL error, named as Lambda does
    cause = json.loads(outcome.body["errorMessage"])
    assert cause["errorMessage"] == "asked to fail: now"
    assert isinstance(outcome.body["stackTrace"], list)
    # the runtime keeps serving
    assert stock_runtime.invoke({"name": "y"}).kind == "response"


def test_finra_runs_through_the_runtime_api(runtime_api: RuntimeApi, tmp_path: Path):
    package = package_lambda(str(FINRA), str(tmp_path / "zips"))
    task, opt = unpack(package, tmp_path)
    env = dict(lambda_environment(runtime_api, task), PYTHONPATH=str(opt / "python"))
    process = start([sys.executable, "-m", "awslambdaric", "lambda_function.handler"], env,
                    task, tmp_path / "runtime.log")
    try:
        outcome = runtime_api.invoke(json.loads((FINRA / "input.json").read_text()))
    finally:
        process.kill()
        process.wait()
    assert outcome.kind == "response", (tmp_path / "runtime.log").read_text()
    assert outcome.body == json.loads((FINRA / "expected.json").read_text())


@pytest.mark.mpk  # packages the built cpython-mpk runtime
def test_the_custom_runtime_bootstrap_runs_cpython_mpk(runtime_api: RuntimeApi,
                                                       small_app: Path, tmp_path: Path):
    if not (PYTHON_PREFIX / "bin" / "python3").exists():
        pytest.fail("cpython-mpk for Lambda is not built: run `make -C cpython-mpk lambda` "
                    "(make test does)", pytrace=False)
    package = package_lambda(str(small_app), str(tmp_path / "zips"), custom_runtime=True)
    assert package.runtime == "provided.al2023"
    task, opt = unpack(package, tmp_path)
    probe = task / "probe.py"  # which interpreter runs the handler
    probe.write_text("import sys\n\ndef handler(event, context):\n"
                     "    return {'executable': sys.executable}\n")
    env = lambda_environment(runtime_api, task)
    process = start([str(opt / "bootstrap")], env, task, tmp_path / "runtime.log")
    try:
        outcome = runtime_api.invoke({"name": "alan turing"})
        assert outcome.kind == "response", (tmp_path / "runtime.log").read_text()
        assert outcome.body == expected_small_output("alan turing")
    finally:
        process.kill()
        process.wait()
    process = start([str(opt / "bootstrap")], dict(env, _HANDLER="probe.handler"), task,
                    tmp_path / "probe.log")
    try:
        outcome = runtime_api.invoke({})
    finally:
        process.kill()
        process.wait()
    assert outcome.body["executable"] == str(opt / "cpython-mpk" / "bin" / "python3")
