"""``faastlane deploy/invoke --target openwhisk`` against a local stand-in controller
(openwhisk_endpoint.py: records the REST calls, runs actions in real action containers)."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from integration.apps import faastlane

from .deploy_apps import FINRA, expected_small_output
from .deploy_servers import ActionServer
from .openwhisk_endpoint import OpenWhiskEndpoint, clean_env

AUTH = ("23bc46b1-71f6-4ed5-8c54-816aa4f8c502:"
        "123zO3xZCLrMN6v2BKK1dXYFpXlPkccOFqm12CdAsMgRU4VrNZ9lyGVCGuMDGIwP")


@pytest.fixture
def controller(action_servers: Callable[[], ActionServer]) -> Iterator[OpenWhiskEndpoint]:
    endpoint = OpenWhiskEndpoint(AUTH, action_servers)
    yield endpoint
    endpoint.close()


def test_deploy_puts_the_action_and_invoke_runs_it(controller: OpenWhiskEndpoint,
                                                   small_app: Path, tmp_path: Path):
    env = clean_env(tmp_path)
    deployed = faastlane("deploy", str(small_app), "--target", "openwhisk", "--apihost",
                         controller.url, "--auth", AUTH, "--name", "small", env=env)
    assert deployed.code == 0, deployed.stderr
    put, = controller.calls
    assert (put.method, put.path, put.query) == \
        ("PUT", "/api/v1/namespaces/_/actions/small", {"overwrite": "true"})
    exec_ = put.body["exec"]
    assert (exec_["kind"], exec_["binary"], exec_["main"]) == ("python:3.11", True, "main")
    packaged = tmp_path / "small.zip"
    assert faastlane("package", str(small_app), "--target", "openwhisk", "-o",
                     str(packaged)).code == 0
    assert base64.b64decode(exec_["code"]) == packaged.read_bytes()  # deterministic zip

    for calls in (1, 2):
        invoked = faastlane("invoke", "small", "--target", "openwhisk", "--apihost",
                            controller.url, "--auth", AUTH, "--input",
                            '{"name": "ada lovelace"}', env=env)
        assert invoked.code == 0, invoked.stderr
        result = invoked.json
        assert result["shout"].pop("activation")  # the controller's activation id
        assert result == dict(expected_small_output("ada lovelace", calls),
                              shout={"text": "Ada Lovelace!", "calls": calls})
    post = controller.calls[-1]
    assert post.query == {"blocking": "true", "result": "true"}
    assert post.body == {"name": "ada lovelace"}

    failed = faastlane("invoke", "small", "--target", "openwhisk", "--apihost", controller.url,
                       "--auth", AUTH, "--input", '{"name": "x", "fail": "yes"}', env=env)
    assert failed.code == 1
    assert failed.json["error"]["Error"] == "ValueError"


def test_finra_deploys_and_runs_with_wskprops(controller: OpenWhiskEndpoint, tmp_path: Path):
    props = tmp_path / "wskprops"
    props.write_text(f"APIHOST={controller.url}\nAUTH={AUTH}\nNAMESPACE=guest\n")
    env = clean_env(tmp_path, WSK_CONFIG_FILE=str(props))
    assert faastlane("deploy", str(FINRA), "--target", "openwhisk", env=env).code == 0
    assert controller.calls[0].path == "/api/v1/namespaces/guest/actions/finra"
    invoked = faastlane("invoke", "finra", "--target", "openwhisk", "--input-file",
                        str(FINRA / "input.json"), env=env)
    assert invoked.code == 0, invoked.stderr
    assert invoked.json == json.loads((FINRA / "expected.json").read_text())


def test_docker_deploy_names_the_image(controller: OpenWhiskEndpoint, small_app: Path,
                                       runtime_image: str, tmp_path: Path):
    """--docker BASE: the small app's requirement goes into an image derived from BASE,
    which the blackbox action names; the zip carries the action only."""
    done = faastlane("deploy", str(small_app), "--target", "openwhisk", "--apihost",
                     controller.url, "--auth", AUTH, "--docker", "faastlane/runtime:latest",
                     "--memory", "512", "--timeout", "120", env=clean_env(tmp_path))
    assert done.code == 0, done.stderr
    assert "FROM faastlane/runtime:latest" in done.stderr
    body = controller.calls[0].body
    assert body["exec"]["kind"] == "blackbox"
    image = body["exec"]["image"]
    assert image.startswith("faastlane/openwhisk-small:")
    assert body["limits"] == {"memory": 512, "timeout": 120_000}
    code = zipfile.ZipFile(io.BytesIO(base64.b64decode(body["exec"]["code"])))
    assert not [n for n in code.namelist() if n.startswith("inflection")]
    found = subprocess.run(["docker", "run", "--rm", "--entrypoint", "python3", image, "-c",
                            "import inflection; print(inflection.__file__)"],
                           capture_output=True, text=True, check=True)
    assert found.stdout.startswith("/opt/cpython-mpk/lib/python3.13/site-packages/")


def test_a_redeploy_keeps_the_actions_memory_and_timeout_unless_given(
        controller: OpenWhiskEndpoint, small_app: Path, tmp_path: Path):
    """OpenWhisk keeps the limits an update leaves out, so a redeploy sends only those
    given: never the defaults in place of the action's own."""
    def deploy(*options: str) -> dict:
        done = faastlane("deploy", str(small_app), "--target", "openwhisk", "--apihost",
                         controller.url, "--auth", AUTH, "--name", "limits", *options,
                         env=clean_env(tmp_path))
        assert done.code == 0, done.stderr
        return controller.calls[-1].body

    assert deploy("--memory", "512", "--timeout", "120")["limits"] == \
        {"memory": 512, "timeout": 120_000}
    assert "limits" not in deploy()
    assert deploy("--timeout", "30")["limits"] == {"timeout": 30_000}
    assert controller.actions["_/limits"]["limits"] == \
        {"memory": 512, "timeout": 30_000, "logs": 10}


def test_missing_api_host_or_key_is_one_line_and_sends_nothing(
        controller: OpenWhiskEndpoint, small_app: Path, tmp_path: Path):
    env = clean_env(tmp_path)
    no_host = faastlane("deploy", str(small_app), "--target", "openwhisk", "--auth", AUTH,
                        env=env)
    assert no_host.code == 2
    assert no_host.stderr.startswith("faastlane: error: no OpenWhisk API host: give it with")
    assert len(no_host.stderr.strip().splitlines()) == 1
    no_key = faastlane("invoke", "small", "--target", "openwhisk", "--apihost", controller.url,
                       env=env)
    assert no_key.code == 2 and "no OpenWhisk credentials" in no_key.stderr
    assert controller.calls == []


def test_an_api_error_reports_status_and_message(controller: OpenWhiskEndpoint,
                                                 small_app: Path, tmp_path: Path):
    env = clean_env(tmp_path)
    wrong = faastlane("deploy", str(small_app), "--target", "openwhisk", "--apihost",
                      controller.url, "--auth", "someone:wrong", env=env)
    assert wrong.code == 1
    assert wrong.stderr.strip().splitlines()[-1] == (
        "faastlane: error: OpenWhisk PUT action small: 401: "
        "The supplied authentication is invalid")
    missing = faastlane("invoke", "nothing-here", "--target", "openwhisk", "--apihost",
                        controller.url, "--auth", AUTH, env=env)
    assert missing.stderr.strip() == ("faastlane: error: OpenWhisk invoke nothing-here: 404: "
                                      "The requested resource does not exist.")


def test_a_payload_over_1_mb_is_refused_before_upload(controller: OpenWhiskEndpoint,
                                                      tmp_path: Path):
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"blob": "x" * (1024 * 1024)}))
    done = faastlane("invoke", "small", "--target", "openwhisk", "--apihost", controller.url,
                     "--auth", AUTH, "--input-file", str(big), env=clean_env(tmp_path))
    assert done.code == 2
    assert "over OpenWhisk's limit for an invocation's parameters of 1 MB" in done.stderr
    assert controller.calls == []
