"""What a function sees of its process as it would on Lambda: its environment variables
and its log lines.

**Environment.** On Lambda each function has its own process, so its own environment:
``AWS_LAMBDA_FUNCTION_NAME``, ``_HANDLER``, ``LAMBDA_TASK_ROOT``, the memory size, the
log group and stream, and the variables its configuration sets (``Environment.
Variables``; here ``faastlane.json``'s ``functions.NAME.environment``). Here the
functions are threads of one process, which has one ``os.environ``, and Parallel
branches on threads run different functions at the same moment; setting variables
around each invocation would show one function another's. So ``os.environ`` itself (the
same object: modules that hold it see the change) becomes a per-function view: while a
thread runs a function's code (its module set-up or an invocation), reads consult that
function's own variables first, then the process's. A write to one of the function's own
variables stays the function's; any other write goes to the process, as before (shared
by every function, as threads share it). ~0.1 us more per ``os.environ`` read.

Known limits (README.md "An app"): the C environment (``getenv`` in native code, child
processes started with the inherited environment) is the process's, without the
function's own variables -- pass ``env=os.environ.copy()`` to ``subprocess`` to hand
them on; threads a function starts itself see the process's environment; the working
directory is the process's, one for every function (``LAMBDA_TASK_ROOT`` names the
function's folder).

**Logging.** Lambda's Python runtime puts a handler on the root logger, so that the
documented ``logging.getLogger().setLevel(logging.INFO); logger.info(...)`` prints, as
``[INFO]\\t<UTC time>\\t<request id>\\t<message>``; here it goes to stderr (stdout of a
run is its result). Installed only when the root logger has no handler yet (on Lambda
itself, awslambdaric's is there).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

DEFAULT_MEMORY_MB = 1024
RUNTIME_VERSION = f"python{sys.version_info.major}.{sys.version_info.minor}"
_DELETED = None  # a function's own variable it deleted


class Invocation(threading.local):
    """What the calling thread runs now: the function's variables, its context."""

    view: dict[str, str | None] | None = None
    context: Any = None
    label: str | None = None  # "State/function", for its output (engine.execution.timed_invoke)


CURRENT = Invocation()


def function_variables(name: str, task_root: str, handler: str,
                       memory_mb: int | None, own: Mapping[str, str]) -> dict[str, str | None]:
    """A function's own environment, as Lambda's configuration-envvars page lists it for
    a function's process, then the variables its configuration sets."""
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") \
        or "us-east-1"
    started = time.strftime("%Y/%m/%d", time.gmtime())
    variables: dict[str, str | None] = {
        "AWS_LAMBDA_FUNCTION_NAME": name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(memory_mb or DEFAULT_MEMORY_MB),
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": f"{started}/[$LATEST]{uuid.uuid4().hex}",
        "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
        "AWS_EXECUTION_ENV": f"AWS_Lambda_{RUNTIME_VERSION}",
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": os.environ.get("AWS_DEFAULT_REGION") or region,
        "LAMBDA_TASK_ROOT": task_root,
        "LAMBDA_RUNTIME_DIR": os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        "_HANDLER": handler,
    }
    variables.update(own)
    return variables


class FunctionEnviron(os._Environ[str]):
    """``os.environ``'s class while functions run: the calling thread's function's own
    variables over the process's. Only methods change: the object stays the same."""

    def __getitem__(self, key: str) -> str:
        view = CURRENT.view
        if view is not None and key in view:
            value = view[key]
            if value is _DELETED:
                raise KeyError(key)
            return value
        return super().__getitem__(key)

    def __setitem__(self, key: str, value: str) -> None:
        view = CURRENT.view
        if view is not None and key in view:
            if not isinstance(value, str):
                raise TypeError(f"str expected, not {type(value).__name__}")
            view[key] = value
        else:
            super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        view = CURRENT.view
        if view is not None and key in view:
            if view[key] is _DELETED:
                raise KeyError(key)
            view[key] = _DELETED
        else:
            super().__delitem__(key)

    def __iter__(self) -> Iterator[str]:
        view = CURRENT.view
        if view is None:
            yield from super().__iter__()
            return
        for key in list(super().__iter__()):
            if key not in view:
                yield key
        for key, value in list(view.items()):
            if value is not _DELETED:
                yield key

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def copy(self) -> dict[str, str]:
        return dict(self)

    def __repr__(self) -> str:
        return f"environ({dict(self)!r})"


def install_environ() -> None:
    """Make ``os.environ`` the per-function view (once per process)."""
    if type(os.environ) is os._Environ:
        os.environ.__class__ = FunctionEnviron


# ---------------------------------------------------------------------------- logging

class _RequestIdFilter(logging.Filter):
    """awslambdaric's ``LambdaLoggerFilter``: the record's ``aws_request_id`` is the one
    of the invocation running on the logging thread (empty outside one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = CURRENT.context
        record.aws_request_id = context.aws_request_id if context is not None else ""
        return True


class _StderrHandler(logging.Handler):
    """To the current ``sys.stderr`` (looked up per record: a run may redirect it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record))
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - logging never fails the caller
            self.handleError(record)


def install_logging() -> None:
    """Lambda's root-logger handler and format (awslambdaric ``_setup_logging``), unless
    the root logger already has a handler."""
    root = logging.getLogger()
    if root.handlers:
        return
    handler = _StderrHandler()
    formatter = logging.Formatter(
        "[%(levelname)s]\t%(asctime)s.%(msecs)03dZ\t%(aws_request_id)s\t%(message)s\n",
        "%Y-%m-%dT%H:%M:%S")
    formatter.converter = time.gmtime
    handler.setFormatter(formatter)
    handler.addFilter(_RequestIdFilter())
    root.addHandler(handler)
