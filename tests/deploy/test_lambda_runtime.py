"""The Lambda packages run as Lambda runs them: unpacked into a task root and /opt, driven
by the real awslambdaric through a local Runtime API endpoint (runtime_api.py, which lets a
test see each outcome's kind) and under AWS's own Runtime Interface Emulator
(``aws-lambda-rie``, built from its Go module by scripts/ensure-lambda-rie.sh)."""

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


@pytest.fixture(scope="session")
def lambda_rie() -> Path:
    """AWS's Runtime Interface Emulator, built from its Go module (cached)."""
    done = subprocess.run([str(ROOT / "scripts" / "ensure-lambda-rie.sh")],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip())


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_finra_runs_under_awss_runtime_interface_emulator(lambda_rie: Path,
                                                          tmp_path: Path) -> None:
    # The emulator AWS ships for Lambda's images: it runs the runtime client and serves
    # the Invoke API; the package is unpacked as Lambda unpacks it.
    import time
    import urllib.error
    import urllib.request

    package = package_lambda(str(FINRA), str(tmp_path / "zips"))
    task, opt = unpack(package, tmp_path)
    port, api = _free_port(), _free_port()
    env = {"PATH": os.environ["PATH"], "LAMBDA_TASK_ROOT": str(task),
           "PYTHONPATH": str(opt / "python"), "AWS_LAMBDA_FUNCTION_NAME": "faastlane-test",
           "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024", "AWS_REGION": "us-east-1"}
    process = start([str(lambda_rie), "--runtime-interface-emulator-address",
                     f"127.0.0.1:{port}", "--runtime-api-address", f"127.0.0.1:{api}",
                     sys.executable, "-m", "awslambdaric", "lambda_function.handler"],
                    env, task, tmp_path / "rie.log")
    url = f"http://127.0.0.1:{port}/2015-03-31/functions/function/invocations"

    def invoke(event: object) -> object:
        deadline = time.monotonic() + 60
        while True:
            request = urllib.request.Request(url, data=json.dumps(event).encode(),
                                             method="POST")
            try:
                with urllib.request.urlopen(request, timeout=120) as response:
                    return json.loads(response.read())
            except urllib.error.URLError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.2)  # the emulator is still starting

    try:
        output = invoke(json.loads((FINRA / "input.json").read_text()))
        assert output == json.loads((FINRA / "expected.json").read_text()), \
            (tmp_path / "rie.log").read_text()[-2000:]
        failed = invoke({"portfolio": "no such portfolio"})  # a failed execution
    finally:
        process.kill()
        process.wait()
    assert isinstance(failed, dict) and set(failed) >= {"errorMessage", "errorType"}
