"""The ``context`` object a Lambda handler receives, as the Python runtime builds it."""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

REGION = os.environ.get("AWS_REGION", os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
ACCOUNT = "123456789012"  # a placeholder account: nothing here talks to AWS itself
DEFAULT_TIMEOUT_SECONDS = 900.0  # Lambda's maximum; a Task's TimeoutSeconds narrows it
DEFAULT_MEMORY_MB = 1024


class CognitoIdentity:
    cognito_identity_id = None
    cognito_identity_pool_id = None


class LambdaContext:
    """Attributes and methods of ``awslambdaric``'s ``LambdaContext``.

    One is built for every invocation, on the hand-off's path, and most handlers read
    none of it: the attributes that cost (two UUIDs, a formatted date: ~7 us of a
    hand-off) are made when first read, then kept (see ``_LAZY``).
    """

    function_version = "$LATEST"
    client_context = None
    tenant_id = None

    def __init__(self, function_name: str, timeout_seconds: float | None = None,
                 request_id: str | None = None) -> None:
        self.function_name = function_name
        if request_id is not None:
            self.aws_request_id = request_id
        self._started = time.time()  # the log stream's date is the invocation's
        budget = DEFAULT_TIMEOUT_SECONDS if timeout_seconds is None else timeout_seconds
        self._deadline = time.monotonic() + budget

    def __getattr__(self, name: str) -> Any:
        # Called only for attributes not set yet: make a lazy one, once.
        make = _LAZY.get(name)
        if make is None:
            raise AttributeError(f"'LambdaContext' object has no attribute '{name}'")
        value = self.__dict__[name] = make(self)
        return value

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))

    def log(self, message: str) -> None:
        sys.stdout.write(message)

    def __repr__(self) -> str:
        return (f"LambdaContext([aws_request_id={self.aws_request_id},"
                f"function_name={self.function_name}])")


def _log_stream_name(context: LambdaContext) -> str:
    started = time.localtime(context._started)
    return time.strftime("%Y/%m/%d/[$LATEST]", started) + uuid.uuid4().hex


_LAZY: dict[str, Callable[[LambdaContext], Any]] = {
    "aws_request_id": lambda c: str(uuid.uuid4()),
    "invoked_function_arn": lambda c: f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:"
                                      f"{c.function_name}",
    "memory_limit_in_mb": lambda c: str(int(os.environ.get(
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", DEFAULT_MEMORY_MB))),
    "log_group_name": lambda c: f"/aws/lambda/{c.function_name}",
    "log_stream_name": _log_stream_name,
    "identity": lambda c: CognitoIdentity(),
}
