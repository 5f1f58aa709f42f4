"""Invoking this same action from inside it, through the platform's own API.

A spilling Orchestrator sends groups of branches to copies of itself. Which platform it
runs on, and with what identity, comes from the variables the platforms set:

OpenWhisk  ``__OW_API_HOST``, ``__OW_API_KEY`` (given when the action is annotated
           ``provide-api-key``), ``__OW_ACTION_NAME`` (``/namespace[/package]/name``):
           ``POST /api/v1/namespaces/NS/actions/NAME?blocking=true&result=true``, and
           ``GET .../activations/ID`` polling when the controller answers 202 (still
           running after its own wait).
Lambda     ``AWS_LAMBDA_FUNCTION_NAME``, ``AWS_LAMBDA_FUNCTION_VERSION``, ``AWS_REGION``,
           the role's credentials: ``Invoke`` (``RequestResponse``), SigV4-signed;
           ``AWS_ENDPOINT_URL_LAMBDA`` / ``AWS_ENDPOINT_URL`` point it elsewhere.

Platform failures become the errors Step Functions reports for a failed Lambda
invocation, so a workflow's ``Retry``/``Catch`` rules for them apply to spilled groups:
429 ``Lambda.TooManyRequestsException``, 5xx ``Lambda.ServiceException``, an unreachable
endpoint ``Lambda.SdkClientException``, another refusal ``Lambda.AWSLambdaException``;
a copy that died or overran its time limit ``Runtime.ExitError``.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any, Protocol

from ..asl.errors import StatesError
from ..engine.functions import EXIT_ERROR
from . import openwhisk_rest
from .object_store import aws_endpoint, aws_region, opener
from .sigv4 import Credentials, sign

TOO_MANY_REQUESTS = "Lambda.TooManyRequestsException"
SERVICE_EXCEPTION = "Lambda.ServiceException"
CLIENT_EXCEPTION = "Lambda.SdkClientException"
LAMBDA_EXCEPTION = "Lambda.AWSLambdaException"

OPENWHISK_PAYLOAD_LIMIT = 1024 * 1024  # parameters and results (default deployment)
LAMBDA_PAYLOAD_LIMIT = 6 * 1024 * 1024  # synchronous request and response
POLL_SECONDS = 0.5


class Invoker(Protocol):
    """A way to run this action once more, elsewhere, and wait for its result."""

    platform: str
    payload_limit: int

    def invoke(self, payload: dict[str, Any], timeout: float | None) -> Any:
        """The copy's result; StatesError when the platform or the copy failed."""


def _status_error(status: int, what: str, detail: str) -> StatesError:
    if status == 429:
        name = TOO_MANY_REQUESTS
    elif status >= 500:
        name = SERVICE_EXCEPTION
    else:
        name = LAMBDA_EXCEPTION
    return StatesError(name, f"{what} answered HTTP {status}: {detail[:500]}")


def _send(request: urllib.request.Request, timeout: float | None, what: str
          ) -> tuple[int, dict[str, str], bytes]:
    try:
        with opener().open(request, timeout=timeout) as response:
            return response.status, dict(response.headers.items()), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers.items()), err.read()
    except OSError as err:
        raise StatesError(CLIENT_EXCEPTION, f"cannot reach {what}: "
                                            f"{getattr(err, 'reason', err)}") from None


class OpenWhiskInvoker:
    platform = "openwhisk"
    payload_limit = OPENWHISK_PAYLOAD_LIMIT

    def __init__(self, apihost: str, api_key: str, action_name: str) -> None:
        self.apihost = openwhisk_rest.base_url(apihost)
        parts = [p for p in action_name.split("/") if p]
        if len(parts) < 2:
            raise ValueError(f"__OW_ACTION_NAME={action_name!r}: expected /namespace/name")
        self.namespace, self.action = parts[0], "/".join(parts[1:])
        self.headers = openwhisk_rest.auth_headers(api_key)
        opener()  # now, before the Orchestrator forks the children that invoke

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> OpenWhiskInvoker | None:
        host, key = environ.get("__OW_API_HOST"), environ.get("__OW_API_KEY")
        name = environ.get("__OW_ACTION_NAME")
        if not (host and key and name):
            return None
        return cls(host, key, name)

    def invoke(self, payload: dict[str, Any], timeout: float | None) -> Any:
        what = f"OpenWhisk action /{self.namespace}/{self.action}"
        request = urllib.request.Request(
            openwhisk_rest.action_url(self.apihost, self.namespace, self.action,
                                      {"blocking": "true", "result": "true"}),
            data=json.dumps(payload).encode(), method="POST", headers=self.headers)
        deadline = None if timeout is None else time.monotonic() + timeout
        status, _, body = _send(request, timeout, what)
        if status == 202:  # still running after the controller's wait: poll for it
            return self._poll(json.loads(body)["activationId"], deadline, what)
        return self._result(status, body, what)

    def _result(self, status: int, body: bytes, what: str) -> Any:
        text = body.decode("utf-8", "replace")
        if status == 200:
            return json.loads(body)
        if status == 502:  # the action's error result: the copy crashed or timed out
            raise StatesError(EXIT_ERROR, f"{what} failed: {text[:500]}")
        raise _status_error(status, what, text)

    def _poll(self, activation: str, deadline: float | None, what: str) -> Any:
        quoted = urllib.parse.quote(activation, safe="")
        url = openwhisk_rest.namespace_url(self.apihost, self.namespace,
                                           f"activations/{quoted}")
        while deadline is None or time.monotonic() < deadline:
            status, _, body = _send(urllib.request.Request(url, headers=self.headers),
                                    None if deadline is None
                                    else max(1.0, deadline - time.monotonic()), what)
            if status == 200:
                response = json.loads(body).get("response", {})
                result = response.get("result", {})
                return self._result(200 if response.get("success") else 502,
                                    json.dumps(result).encode(), what)
            if status != 404:  # 404: not finished yet
                raise _status_error(status, what, body.decode("utf-8", "replace"))
            time.sleep(POLL_SECONDS)
        raise StatesError(EXIT_ERROR, f"{what}: activation {activation} did not finish in time")


class LambdaInvoker:
    platform = "lambda"
    payload_limit = LAMBDA_PAYLOAD_LIMIT

    def __init__(self, function: str, qualifier: str | None, region: str, endpoint: str,
                 credentials: Credentials) -> None:
        self.function = function
        self.qualifier = qualifier if qualifier and qualifier != "$LATEST" else None
        self.region = region
        self.endpoint = endpoint
        self.credentials = credentials
        opener()  # now, before the Orchestrator forks the children that invoke

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> LambdaInvoker | None:
        function = environ.get("AWS_LAMBDA_FUNCTION_NAME")
        credentials = Credentials.from_environ(environ)
        if not function or credentials is None:
            return None
        region = aws_region(environ)
        return cls(function, environ.get("AWS_LAMBDA_FUNCTION_VERSION"), region,
                   aws_endpoint("lambda", f"https://lambda.{region}.amazonaws.com", environ),
                   credentials)

    def invoke(self, payload: dict[str, Any], timeout: float | None) -> Any:
        what = f"Lambda function {self.function}"
        url = (f"{self.endpoint}/2015-03-31/functions/"
               f"{urllib.parse.quote(self.function, safe='')}/invocations")
        if self.qualifier:
            url += "?" + urllib.parse.urlencode({"Qualifier": self.qualifier})
        body = json.dumps(payload).encode()
        headers = sign("POST", url, {"Content-Type": "application/json",
                                     "X-Amz-Invocation-Type": "RequestResponse"},
                       body, "lambda", self.region, self.credentials)
        status, response_headers, answer = _send(
            urllib.request.Request(url, data=body, method="POST", headers=headers),
            timeout, what)
        if status != 200:
            raise _status_error(status, what, answer.decode("utf-8", "replace"))
        result = json.loads(answer or b"null")
        if {k.lower(): v for k, v in response_headers.items()}.get("x-amz-function-error"):
            error = result if isinstance(result, dict) else {}
            raise StatesError(error.get("errorType") or EXIT_ERROR,
                              f"{what} failed: {error.get('errorMessage', result)}")
        return result


def invoker_from_environ(environ: Mapping[str, str] = os.environ) -> Invoker | None:
    """How to reach copies of this action on the platform it runs on, or None (local)."""
    return OpenWhiskInvoker.from_environ(environ) or LambdaInvoker.from_environ(environ)
