"""ml-predict, too big for a zip on either platform, deployed as images built by the real
Docker engine: an OpenWhisk Docker action (``--docker``) pushed to a local registry and
run by the local controller in a container pulled from it, and a Lambda container image
(``--image``) run against the local Runtime API as Lambda runs images (read-only root,
a non-root user) and deployed through moto's Lambda API.

The images are derived from the Faastlane runtime image with numpy, Pillow and
scikit-learn installed; their one inspector finding (an unaligned XRSTOR in the cp313
numpy wheel's OpenBLAS) is waived in the example's faastlane.json, by the file's path
in the image and the SHA-256 of the reviewed bytes.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import subprocess
import sys
import uuid
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from faastlane.compose.action import prepare, write_action
from faastlane.deploy.image_bundle import LambdaImagePackage, package_lambda_image
from faastlane.deploy.images import resolve_base
from faastlane.deploy.vendoring import requirement_files, vendor
from faastlane.inspector.errors import InspectionFailed
from faastlane.inspector.shipment import app_waivers, inspect_shipment
from integration.apps import CLI_TIMEOUT, faastlane
from integration.examples import EXAMPLES
from integration.test_example_ml_predict import _check_report

from .deploy_servers import ActionServer
from .openwhisk_endpoint import OpenWhiskEndpoint, clean_env
from .runtime_api import RuntimeApi
from .test_deploy_lambda import aws_env, lambda_client, role  # noqa: F401  (role: a fixture)
from .test_deploy_openwhisk import AUTH

APP = EXAMPLES / "ml-predict"
SITE = "/opt/cpython-mpk/lib/python3.13/site-packages/"  # the runtime image's Python
OPENBLAS = "numpy.libs/libscipy_openblas64_"
LAMBDA_USER = "993:990"  # any non-root uid: Lambda runs images as one


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def scans(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """input.json (a 1.5 MB scan of a 7) written by the example's generator."""
    out = tmp_path_factory.mktemp("ml-predict-input")
    subprocess.run([sys.executable, str(APP / "generate_input.py"), str(out)], check=True,
                   timeout=CLI_TIMEOUT)
    return out


def _expected_fields(report: dict[str, Any]) -> dict[str, Any]:
    expected = _read(APP / "expected.json")
    return {key: report[key] for key in expected}


@pytest.fixture
def controller(action_servers: Callable[[], ActionServer],
               image_containers: Callable[[str], ActionServer]
               ) -> Iterator[OpenWhiskEndpoint]:
    endpoint = OpenWhiskEndpoint(AUTH, action_servers, image_containers)
    yield endpoint
    endpoint.close()


def _half_size_scan(scans: Path) -> tuple[dict[str, Any], int]:
    """The scan at 640x480: OpenWhisk takes at most 1 MB of parameters, and the 1.5 MB
    photo is 2 MB as base64 JSON. Resize reduces every photo to 640 pixels a side first,
    so the model sees the same digit."""
    request = _read(scans / "input.json")
    photo = Image.open(io.BytesIO(base64.b64decode(request["image"])))
    out = io.BytesIO()
    photo.resize((640, 480), Image.Resampling.LANCZOS).save(out, format="PNG")
    return dict(request, image=base64.b64encode(out.getvalue()).decode()), out.tell()


def test_ml_predict_runs_as_an_openwhisk_docker_action(
        controller: OpenWhiskEndpoint, local_registry: str, scans: Path, tmp_path: Path):
    env = clean_env(tmp_path)
    deployed = faastlane("deploy", str(APP), "--target", "openwhisk", "--docker",
                         "--registry", local_registry, "--apihost", controller.url,
                         "--auth", AUTH, env=env, timeout=1800)
    assert deployed.code == 0, deployed.stderr
    put, = controller.calls
    exec_ = put.body["exec"]
    assert exec_["kind"] == "blackbox"
    image = exec_["image"]
    assert image.startswith(f"{local_registry}/openwhisk-ml-predict:")
    assert f"push faastlane/openwhisk-ml-predict:{image.rsplit(':', 1)[1]}" in deployed.stderr
    # The zip holds the action only: the packages are in the image.
    code = zipfile.ZipFile(io.BytesIO(base64.b64decode(exec_["code"])))
    assert not [n for n in code.namelist() if n.startswith(("numpy", "sklearn", "scipy"))]
    assert len(base64.b64decode(exec_["code"])) < 1024 * 1024
    # The action's record lists the image's files by their path there, the finding waived.
    record = json.loads(code.read("inspection.json"))
    waived = [f for r in record["files"] for f in r["findings"]]
    assert [f["file"].startswith(SITE + OPENBLAS) and f["waived"]["sha256"] for f in waived] \
        == [_read(APP / "faastlane.json")["inspector_waivers"][0]["sha256"]]

    # Drop the pushed name here: the controller's container must pull it from the registry.
    subprocess.run(["docker", "rmi", image], capture_output=True, text=True, check=True)
    request, png_bytes = _half_size_scan(scans)
    (tmp_path / "input.json").write_text(json.dumps(request))
    for _ in range(2):  # cold, then warm: the model is trained once per container
        invoked = faastlane("invoke", "ml-predict", "--target", "openwhisk", "--apihost",
                            controller.url, "--auth", AUTH, "--input-file",
                            str(tmp_path / "input.json"), env=env)
        assert invoked.code == 0, invoked.stderr
        report = invoked.json
        assert _expected_fields(report) == _read(APP / "expected.json")
        assert report["source"] == {"format": "PNG", "width": 640, "height": 480,
                                    "bytes": png_bytes}
        assert abs(sum(report["probabilities"]) - 1) < 0.01
    assert len(controller.warm["_/ml-predict"]) == 1

    in_image = subprocess.run(["docker", "run", "--rm", "--entrypoint", "cat", image,
                               "/opt/faastlane/inspection.json"],
                              capture_output=True, text=True, check=True)
    kept = json.loads(in_image.stdout)  # the image carries the record of what it added
    assert {r["file"] for r in kept["files"]} == \
        {r["file"] for r in record["files"] if r["file"].startswith(SITE)}


@pytest.fixture(scope="module")
def lambda_image(runtime_image: str) -> LambdaImagePackage:
    return package_lambda_image(str(APP))


def _run_lambda_image(image: str, name: str, api: RuntimeApi, log: Path) -> subprocess.Popen:
    """The image as Lambda runs one: its entry point, a read-only root file system with
    a writable /tmp, a non-root user, the Runtime API's address in the environment."""
    return subprocess.Popen(
        ["docker", "run", "--rm", "--name", name, "--network", "host", "--read-only",
         "--tmpfs", "/tmp",
         "--user", LAMBDA_USER, "-e", f"AWS_LAMBDA_RUNTIME_API={api.address}",
         "-e", "AWS_LAMBDA_FUNCTION_NAME=ml-predict", "-e", "AWS_LAMBDA_FUNCTION_VERSION=1",
         "-e", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=1024", "-e", "AWS_REGION=us-east-1", image],
        stdout=log.open("wb"), stderr=subprocess.STDOUT)


def test_ml_predict_runs_as_a_lambda_container_image(lambda_image: LambdaImagePackage,
                                                    scans: Path, tmp_path: Path):
    image = lambda_image.image
    assert image.tag.startswith("faastlane/lambda-ml-predict:")
    assert image.size < 10 * 1024 ** 3
    request = _read(scans / "input.json")
    api = RuntimeApi()
    name = f"faastlane-test-{uuid.uuid4().hex[:12]}"
    process = _run_lambda_image(image.tag, name, api, tmp_path / "runtime.log")
    try:
        reports = []
        for _ in range(2):
            outcome = api.invoke(request)
            assert outcome.kind == "response", (tmp_path / "runtime.log").read_text()
            reports.append(outcome.body)
        failed = api.invoke({"image_id": "junk", "content_type": "image/png",
                             "image": base64.b64encode(b"not a picture").decode()})
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
        process.wait(timeout=60)
        api.close()
    for report in reports:
        assert _expected_fields(report) == _read(APP / "expected.json")
        _check_report(report, len(base64.b64decode(request["image"])))
    # One warm container: the model was trained once, at the first import.
    assert reports[0]["model"]["trained_at"] == reports[1]["model"]["trained_at"]
    assert failed.kind == "error" and failed.body["errorType"] == "InvalidImage"
    assert isinstance(failed.body["stackTrace"], list)


def test_the_lambda_image_deploys_by_image_uri(lambda_image: LambdaImagePackage, moto: str,
                                               role: str, tmp_path: Path):  # noqa: F811
    env = aws_env(tmp_path, moto)
    first = faastlane("deploy", str(APP), "--target", "lambda", "--image", "--role", role,
                      env=env, timeout=1800)
    assert first.code == 0, first.stderr
    # The fixture built it already, unless the runtime's sources changed since.
    tag = re.search(r"image (faastlane/lambda-ml-predict:[0-9a-f]{16}) ", first.stderr)[1]
    assert "not pushed (no --registry)" in first.stderr
    assert f"create function ml-predict (image {tag}" in first.stderr
    function = lambda_client(moto).get_function(FunctionName="ml-predict")
    assert function["Configuration"]["PackageType"] == "Image"
    assert function["Code"]["ImageUri"] == tag
    second = faastlane("deploy", str(APP), "--target", "lambda", "--image", "--memory", "2048",
                       env=env, timeout=1800)
    assert second.code == 0, second.stderr
    assert "update function ml-predict" in second.stderr
    assert lambda_client(moto).get_function(
        FunctionName="ml-predict")["Configuration"]["MemorySize"] == 2048


def test_image_files_are_inspected_and_waived_by_their_path_in_the_image(
        runtime_image: str, small_app: Path, tmp_path: Path):
    """What the waiver names: the cp313 OpenBLAS labelled by where the derived image puts
    it; refused without the example's waiver, accepted with it."""
    base = resolve_base(runtime_image)
    assert base.site + "/" == SITE and base.version == "3.13"
    packages = vendor(requirement_files(str(APP)), base.version)
    assert packages is not None
    action = write_action(prepare(str(small_app)), str(tmp_path / "action"))
    with pytest.raises(InspectionFailed) as refused:
        inspect_shipment(action, [], [(packages, base.site + "/")])
    assert str(refused.value).startswith(SITE + OPENBLAS)
    assert "xrstor" in str(refused.value) and "inspector_waivers" in str(refused.value)
    waivers = app_waivers(_read(APP / "faastlane.json")["inspector_waivers"])
    report = inspect_shipment(action, waivers, [(packages, base.site + "/")])
    assert [f.file.startswith(SITE + OPENBLAS) for f in report.findings] == [True]
    assert report.unwaived == []


def test_image_options_belong_to_their_platform(small_app: Path, tmp_path: Path):
    env = dict(os.environ)
    for target, option, says in (("lambda", "--docker", "for a Lambda container image use "
                                  "--image"),
                                 ("openwhisk", "--image", "for an OpenWhisk Docker action "
                                  "use --docker")):
        done = faastlane("package", str(small_app), "--target", target, option, "-o",
                         str(tmp_path / "out"), env=env)
        assert done.code == 2
        assert done.stderr.strip().endswith(says)
