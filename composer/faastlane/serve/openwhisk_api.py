"""OpenWhisk's REST API for one action, as ``wsk -i --apihost URL`` uses it: the
workflow's name is the action's (in any namespace, ``_`` included; any credentials).

``POST /api/v1/namespaces/{ns}/actions/{name}``
    ``?blocking=true&result=true``: the result (200), or with ``error`` in it 502, as the
    controller answers; ``?blocking=true``: the activation record; otherwise 202
    ``{"activationId"}`` and the record later from
``GET /api/v1/namespaces/{ns}/activations/{id}`` (``/result``: its ``response``);
``GET /api/v1/namespaces/{ns}/actions/{name}``: the action's description.
Anything else: 404 ``{"error": "The requested resource does not exist."}``; a request
body over 1 MB: 413, as the controller refuses it.
"""

from __future__ import annotations

import threading
import time
import urllib.parse
import uuid
from collections import OrderedDict
from typing import Any

from .lambda_api import Answer, _json
from .workflow import ChildDied, WarmWorkflow

PREFIX = "/api/v1/namespaces/"
KEPT_ACTIVATIONS = 200
VERSION = "0.0.1"
NOT_FOUND = "The requested resource does not exist."
# The controller's limit on an activation's request (MAX_ACTIVATION_ENTITY_LIMIT): 413
# "Request larger than allowed: N > 1048576 bytes." A deployed action never sees more.
ENTITY_LIMIT = 1024 * 1024


def _missing() -> Answer:
    return _json(404, {"error": NOT_FOUND, "code": uuid.uuid4().hex})


class OpenWhiskApi:
    def __init__(self, workflow: WarmWorkflow, api_host: str) -> None:
        self.workflow = workflow
        self.api_host = api_host
        self.activations: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.lock = threading.Lock()

    def handle(self, method: str, path: str, query: dict[str, str], body: Any) -> Answer:
        parts = [urllib.parse.unquote(p) for p in path[len(PREFIX):].split("/")]
        if len(parts) < 3:
            return _missing()
        namespace, collection, rest = parts[0], parts[1], parts[2:]
        if collection == "actions" and "/".join(rest) == self.workflow.name:
            if method == "POST":
                return self.invoke(namespace, query, body)
            if method == "GET":
                return _json(200, self.describe(namespace))
        if collection == "activations" and method == "GET" and rest:
            with self.lock:
                record = self.activations.get(rest[0])
            if record is None:
                return _missing()
            if rest[1:] == ["result"]:
                return _json(200, record["response"])
            return _json(200, record)
        return _missing()

    def describe(self, namespace: str) -> dict[str, Any]:
        return {"namespace": namespace, "name": self.workflow.name, "version": VERSION,
                "publish": False, "exec": {"kind": "python:3", "binary": True},
                "annotations": [{"key": "exec", "value": "python:3"}], "parameters": [],
                "limits": {"timeout": 60000, "memory": 256, "logs": 10}}

    def invoke(self, namespace: str, query: dict[str, str], params: Any) -> Answer:
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return _json(400, {"error": "The request content was malformed: parameters "
                                        "must be a JSON object", "code": uuid.uuid4().hex})
        activation = uuid.uuid4().hex
        blocking = query.get("blocking") == "true"
        if not blocking:
            threading.Thread(target=self._activate, args=(namespace, activation, params),
                             daemon=True).start()
            return _json(202, {"activationId": activation})
        record = self._activate(namespace, activation, params)
        status = 200 if record["response"]["success"] else 502
        if query.get("result") == "true":
            return _json(status, record["response"]["result"])
        return _json(status, record)

    def _activate(self, namespace: str, activation: str,
                  params: dict[str, Any]) -> dict[str, Any]:
        start = int(time.time() * 1000)
        context = {"activation_id": activation, "namespace": namespace,
                   "action_name": f"/{namespace}/{self.workflow.name}",
                   "deadline": str(start + 60_000), "api_host": self.api_host}
        try:
            answer = self.workflow.call({"api": "openwhisk", "params": params}, **context)
            result = answer["result"] if "result" in answer else {"error": answer["error"]}
            developer_error = False
        except ChildDied as exc:
            result, developer_error = {"error": f"The action did not produce a valid "
                                                f"response: {exc}"}, True
        end = int(time.time() * 1000)
        failed = isinstance(result, dict) and "error" in result
        record = {
            "activationId": activation, "namespace": namespace, "name": self.workflow.name,
            "version": VERSION, "subject": "guest", "publish": False,
            "start": start, "end": end, "duration": end - start, "logs": [],
            "annotations": [{"key": "path", "value": f"{namespace}/{self.workflow.name}"},
                            {"key": "kind", "value": "python:3"}],
            "response": {"status": ("action developer error" if developer_error else
                                    "application error" if failed else "success"),
                         "statusCode": 2 if developer_error else (1 if failed else 0),
                         "success": not failed, "result": result}}
        with self.lock:
            self.activations[activation] = record
            while len(self.activations) > KEPT_ACTIVATIONS:
                self.activations.popitem(last=False)
        return record
