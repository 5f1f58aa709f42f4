"""What AWS Lambda's Python runtime does around one handler call, for the moto side.

moto's Docker-free Lambda backend never runs code; the harness patches it to call the
case's own ``functions/NAME.py`` through :func:`invoke`, which reproduces the parts of
the Python runtime interface client (``awslambdaric``) that a Step Functions execution
can observe:

- the handler is ``handler(event, context)``, ``lambda_handler(event, context)`` or the
  OpenWhisk-style ``main(params)``; the module is imported once and reused (module-level
  set-up runs once per container, as on Lambda);
- the result is serialised as JSON; a value that cannot be serialised fails the
  invocation with ``Runtime.MarshalError`` ("Unable to marshal response: Object of type
  set is not JSON serializable"), ``awslambdaric``'s ``FaultException.MARSHAL_ERROR``;
- an exception becomes the error document ``{"errorMessage", "errorType", "requestId",
  "stackTrace"}``, ``errorType`` being the exception class's ``__name__``, which Step
  Functions then reports as the task's Error (and the whole document as its Cause).
"""

from __future__ import annotations

import importlib.util
import json
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

MARSHAL_ERROR = "Runtime.MarshalError"
# The default Lambda timeout; get_remaining_time_in_millis() counts down from it.
DEFAULT_TIMEOUT_MS = 3000


@dataclass
class LambdaContext:
    """The ``context`` argument of a Lambda handler (the attributes Python code uses)."""

    function_name: str
    aws_request_id: str
    invoked_function_arn: str
    deadline_ms: int
    function_version: str = "$LATEST"
    memory_limit_in_mb: str = "128"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return f"{time.strftime('%Y/%m/%d')}/[$LATEST]{self.aws_request_id.replace('-', '')}"

    def get_remaining_time_in_millis(self) -> int:
        return max(self.deadline_ms - int(time.time() * 1000), 0)


@dataclass(frozen=True)
class Invocation:
    """A finished invocation: the response payload and whether it is an error document."""

    payload: bytes
    failed: bool


_modules: dict[Path, ModuleType] = {}
_modules_lock = threading.Lock()


def _load(source: Path) -> ModuleType:
    """Import a function file once; later invocations reuse the warm module."""
    with _modules_lock:
        module = _modules.get(source)
        if module is None:
            name = f"conformance_fn_{abs(hash(source))}_{source.stem}"
            spec = importlib.util.spec_from_file_location(name, source)
            assert spec is not None and spec.loader is not None, source
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            _modules[source] = module
        return module


def _entry_point(module: ModuleType) -> Callable[[Any, LambdaContext], Any]:
    for name in ("handler", "lambda_handler"):
        function = getattr(module, name, None)
        if callable(function):
            return function
    main = getattr(module, "main", None)
    if callable(main):
        return lambda event, _context: main(event)
    raise AttributeError(f"{module.__file__} defines no handler, lambda_handler or main")


def _error_document(
    message: str, error_type: str, request_id: str, stack: list[str]
) -> bytes:
    document = {
        "errorMessage": message,
        "errorType": error_type,
        "requestId": request_id,
        "stackTrace": stack,
    }
    return json.dumps(document).encode()


def invoke(source: Path, function_name: str, function_arn: str, body: bytes) -> Invocation:
    """Run ``source``'s handler on the JSON ``body`` as Lambda's Python runtime would."""
    event = json.loads(body) if body else {}
    request_id = str(uuid.uuid4())
    context = LambdaContext(
        function_name=function_name,
        aws_request_id=request_id,
        invoked_function_arn=function_arn,
        deadline_ms=int(time.time() * 1000) + DEFAULT_TIMEOUT_MS,
    )
    try:
        result = _entry_point(_load(source))(event, context)
    except Exception as error:  # noqa: BLE001 - every exception becomes an error document
        frames = traceback.extract_tb(error.__traceback__)[1:]  # drop this harness frame
        stack = traceback.format_list(frames)
        return Invocation(
            _error_document(str(error), type(error).__name__, request_id, stack), True
        )
    try:
        return Invocation(json.dumps(result).encode(), False)
    except (TypeError, ValueError) as error:
        message = f"Unable to marshal response: {error}"
        return Invocation(_error_document(message, MARSHAL_ERROR, request_id, []), True)
