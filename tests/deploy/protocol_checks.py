"""The OpenWhisk action-container checks, shared by the process and the Docker image tests:
each expects the status and message OpenWhisk's own (Go action-loop) proxy gives."""

from __future__ import annotations

import base64
import io
import json
import threading
import zipfile
from typing import Any

from .deploy_apps import FINRA, expected_small_output
from .deploy_servers import ActionServer, post

SENTINEL = "XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX"


def init_zip(server: ActionServer, code: str) -> None:
    status, answer = server.init({"value": {"main": "main", "code": code, "binary": True,
                                            "env": {"GREETING_STYLE": "plain"}}})
    assert (status, answer) == (200, {"ok": True})


def runs_finra(server: ActionServer, code: str) -> None:
    init_zip(server, code)
    execution_input = json.loads((FINRA / "input.json").read_text())
    expected = json.loads((FINRA / "expected.json").read_text())
    for activation in ("a-1", "a-2"):
        assert server.run(execution_input, activation_id=activation) == (200, expected)


def stays_warm_and_sees_ow_variables(server: ActionServer, code: str) -> None:
    init_zip(server, code)
    for calls in (1, 2, 3):
        status, result = server.run({"name": "ada lovelace"}, activation_id=f"act-{calls}",
                                    namespace="guest", action_name="/guest/small",
                                    deadline="4102444800000", api_key="u:k")
        assert status == 200
        assert result == expected_small_output("ada lovelace", calls, f"act-{calls}")


def a_failing_function_is_an_error_result(server: ActionServer, code: str) -> None:
    init_zip(server, code)
    status, result = server.run({"name": "x", "fail": "on purpose"}, activation_id="f-1")
    assert status == 200  # the proxy passes the action's {"error": ...} result on
    assert result["error"]["Error"] == "ValueError"
    cause = json.loads(result["error"]["Cause"])
    assert cause["errorType"] == "ValueError"
    assert cause["errorMessage"] == "asked to fail: on purpose"
    # ...and the container is still good for the next activation
    assert server.run({"name": "bo"}, activation_id="f-2")[1]["hello"] == {"text": "hello bo"}


def concurrent_runs_each_get_their_result(server: ActionServer, code: str) -> None:
    init_zip(server, code)
    names = [f"user number {i}" for i in range(8)]
    results: dict[str, Any] = {}

    def one(name: str) -> None:
        results[name] = server.run({"name": name}, activation_id=name.replace(" ", "-"))

    threads = [threading.Thread(target=one, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert sorted(results) == sorted(names)
    for name, (status, result) in results.items():
        assert status == 200
        assert result["hello"] == {"text": f"hello {name}"}
        assert result["shout"]["text"] == f"{name.title()}!"
        assert result["shout"]["activation"] == name.replace(" ", "-")
    # serialised, never interleaved: each activation saw a different call count
    assert sorted(r["shout"]["calls"] for _, r in results.values()) == list(range(1, 9))


def a_second_init_is_refused(server: ActionServer, code: str) -> None:
    init_zip(server, code)
    again = {"value": {"main": "main", "code": code, "binary": True}}
    assert server.init(again) == (403, {"error": "Cannot initialize the action more than once."})
    assert server.run({"name": "still"})[0] == 200  # the first action keeps running


def run_before_init(server: ActionServer) -> None:
    assert server.run({}) == (500, {"error": "no action defined yet"})


def malformed_inits(server: ActionServer) -> None:
    status, answer = server.init(raw=b"{not json")
    assert status == 400 and answer["error"].startswith("Error unmarshaling request: ")
    assert server.init({"value": {"main": "main"}}) == \
        (403, {"error": "Missing main/no code to execute."})
    status, answer = server.init({"value": {"code": "%%% not base64", "binary": True}})
    assert status == 400 and answer["error"].startswith("cannot decode the request: ")
    no_entry = io.BytesIO()
    with zipfile.ZipFile(no_entry, "w") as archive:
        archive.writestr("helper.py", "X = 1\n")
    code = base64.b64encode(no_entry.getvalue()).decode()
    assert server.init({"value": {"code": code, "binary": True}}) == \
        (502, {"error": "Zip file does not include __main__.py"})
    # none of these initialised the container
    assert server.run({}) == (500, {"error": "no action defined yet"})


def a_missing_main_fails_init(server: ActionServer, code: str) -> None:
    status, answer = server.init({"value": {"main": "nowhere", "code": code, "binary": True}})
    assert (status, answer) == (502, {"error": "cannot start action: Command exited abruptly "
                                               "during initialization."})


def plain_source_and_malformed_run(server: ActionServer) -> None:
    source = "import os\n\ndef main(args):\n    return {'echo': args, " \
             "'ns': os.environ.get('__OW_NAMESPACE'), 'env': os.environ.get('STYLE')}\n"
    assert server.init({"value": {"code": source, "env": {"STYLE": "loud"}}}) == \
        (200, {"ok": True})
    assert server.run({"a": [1, 2]}, namespace="guest") == \
        (200, {"echo": {"a": [1, 2]}, "ns": "guest", "env": "loud"})
    status, answer = post(server.url + "/run", None, raw=b"[not json")
    assert status == 400 and answer["error"].startswith("Error unmarshaling request: ")


def logs_end_with_sentinels(stdout: str, stderr: str, activations: int) -> None:
    assert stdout.count(SENTINEL) == activations
    assert stderr.count(SENTINEL) == activations
    # a function's print lands in its own activation's log, before that sentinel
    assert stdout.index("check: ok") < stdout.index(SENTINEL)
