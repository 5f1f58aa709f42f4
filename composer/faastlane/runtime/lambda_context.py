"""The ``context`` object a Lambda handler receives, as the Python runtime builds it."""

from __future__ import annotations

import os
import sys
import time
import uuid

REGION = os.environ.get("AWS_REGION", os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
ACCOUNT = "123456789012"  # a placeholder account: nothing here talks to AWS itself
DEFAULT_TIMEOUT_SECONDS = 900.0  # Lambda's maximum; a Task's TimeoutSeconds narrows it
DEFAULT_MEMORY_MB = 1024


class CognitoIdentity:
    cognito_identity_id = None
    cognito_identity_pool_id = None


class LambdaContext:
    """Attributes and methods of ``awslambdaric``'s ``LambdaContext``."""

    def __init__(self, function_name: str, timeout_seconds: float | None = None,
                 request_id: str | None = None) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = (
            f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function_name}")
        self.memory_limit_in_mb = str(int(os.environ.get(
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", DEFAULT_MEMORY_MB)))
        self.aws_request_id = request_id or str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = time.strftime("%Y/%m/%d/[$LATEST]") + uuid.uuid4().hex
        self.identity = CognitoIdentity()
        self.client_context = None
        self.tenant_id = None
        budget = DEFAULT_TIMEOUT_SECONDS if timeout_seconds is None else timeout_seconds
        self._deadline = time.monotonic() + budget

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))

    def log(self, message: str) -> None:
        sys.stdout.write(message)

    def __repr__(self) -> str:
        return (f"LambdaContext([aws_request_id={self.aws_request_id},"
                f"function_name={self.function_name}])")
