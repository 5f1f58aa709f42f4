"""The one module that talks to OpenWhisk: its REST API (``/api/v1``), with urllib.

Calls used (OpenWhisk's API, as ``wsk`` makes them):
``PUT /api/v1/namespaces/{ns}/actions/{name}?overwrite=true`` creates or updates an action
(what the body leaves out, such as limits or parameters, an update keeps);
``POST /api/v1/namespaces/{ns}/actions/{name}?blocking=true&result=true`` invokes it and
answers with its result (``502`` with the result when the action returned an error).
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from faastlane.runtime.parallel import openwhisk_rest

from . import limits
from .errors import ApiError, DeployError, InvocationFailed
from .wskprops import OpenWhiskConfig

PLATFORM = "OpenWhisk"
TIMEOUT_SECONDS = 70  # a blocking invoke waits up to 60 s on the controller


@dataclass(frozen=True)
class ActionSpec:
    """What an action is: its code and how the platform runs it."""

    name: str
    code: bytes
    kind: str = "python:3.11"
    image: str | None = None  # a --docker action: the image, the zip as its code
    main: str = "main"
    memory_mb: int | None = None
    timeout_ms: int | None = None
    provide_api_key: bool = False  # a spilling Orchestrator invokes itself with the key
    # deploy --env: the action's environment, as parameters marked "init" (the invoker
    # passes them to /init as env, not to the activations); None: an update keeps them.
    environment: dict[str, str] | None = None

    def body(self, namespace: str) -> dict[str, Any]:
        exec_ = {"kind": "blackbox" if self.image else self.kind, "main": self.main,
                 "binary": True, "code": base64.b64encode(self.code).decode("ascii")}
        if self.image:
            exec_["image"] = self.image
        body: dict[str, Any] = {"namespace": namespace, "name": self.name, "exec": exec_,
                                "annotations": [{"key": "provide-api-key",
                                                 "value": self.provide_api_key},
                                                {"key": "faastlane", "value": True}]}
        action_limits = {k: v for k, v in (("memory", self.memory_mb),
                                           ("timeout", self.timeout_ms)) if v}
        if action_limits:
            body["limits"] = action_limits
        if self.environment is not None:
            body["parameters"] = [{"key": key, "value": value, "init": True}
                                  for key, value in sorted(self.environment.items())]
        return body


class OpenWhiskClient:
    def __init__(self, config: OpenWhiskConfig, insecure: bool = False) -> None:
        self.config = config
        self.headers = {**openwhisk_rest.auth_headers(config.auth), "Accept": "application/json"}
        # Local deployments use self-signed certificates; `wsk -i` skips the check too.
        self.context = ssl._create_unverified_context() if insecure else None

    def _url(self, name: str, query: dict[str, str]) -> str:
        return openwhisk_rest.action_url(self.config.apihost, self.config.namespace, name, query)

    def _call(self, method: str, operation: str, url: str, body: Any) -> tuple[int, Any]:
        request = urllib.request.Request(url, data=json.dumps(body).encode(), method=method,
                                         headers=self.headers)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS,
                                        context=self.context) as response:
                return response.status, _json(response.read())
        except urllib.error.HTTPError as err:
            return err.code, _json(err.read())
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", err)
            raise DeployError(f"cannot reach OpenWhisk at {self.config.apihost} "
                              f"({operation}): {reason}") from None

    def put_action(self, spec: ActionSpec) -> dict[str, Any]:
        """Create the action, or replace it (``overwrite=true``); the stored action."""
        url = self._url(spec.name, {"overwrite": "true"})
        status, answer = self._call("PUT", f"PUT action {spec.name}", url,
                                    spec.body(self.config.namespace))
        if status != 200:
            raise ApiError(PLATFORM, f"PUT action {spec.name}", status, _message(answer))
        action: dict[str, Any] = answer  # a 200's body: the stored action
        return action

    def invoke(self, name: str, params: Any) -> Any:
        """A blocking invocation's result; InvocationFailed with the action's error result."""
        payload = json.dumps(params).encode()
        limits.OPENWHISK_PAYLOAD.check(len(payload), "the invocation's parameters")
        url = self._url(name, {"blocking": "true", "result": "true"})
        status, answer = self._call("POST", f"invoke {name}", url, params)
        if status == 200:
            return answer
        if status == 202:  # still running after the controller's wait: not an error
            return {"activationId": (answer or {}).get("activationId"), "status": "running"}
        if status == 502 and isinstance(answer, dict) and "error" in answer:
            raise InvocationFailed(answer)  # the action's own error result
        raise ApiError(PLATFORM, f"invoke {name}", status, _message(answer))


def _json(data: bytes) -> Any:
    try:
        return json.loads(data) if data else None
    except json.JSONDecodeError:
        return data.decode("utf-8", "replace")


def _message(answer: Any) -> str:
    """The controller's ``{"error": ..., "code": ...}`` as one line."""
    if isinstance(answer, dict) and "error" in answer:
        error = answer["error"]
        return error if isinstance(error, str) else json.dumps(error)
    return str(answer)[:300] or "(empty response)"
