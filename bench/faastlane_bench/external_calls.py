"""Time spent waiting on external services (DynamoDB, SNS, Comprehend Medical, ...).

The paper's function-interaction latency excludes the time functions spend on external
services. Functions reach them through botocore, so wrapping botocore's HTTP send catches
every such call without touching the functions. A span is recorded only while
:data:`recording` is on in this thread: the baselines' own S3 traffic (claim checks) is
state passing, not an external service, and must not be counted as one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

_local = threading.local()
_lock = threading.Lock()
_spans: list[tuple[float, float]] = []
_installed = False


def install(always: bool = False,
            sink: Callable[[float, float], None] | None = None) -> bool:
    """Wrap botocore's send; ``always`` records on every thread (Faastlane workers, where
    only functions use botocore); ``sink`` receives each span instead of :func:`take`
    (Faastlane hands spans to its trace, which brings them back from forked processes).
    False if botocore is not installed."""
    global _installed, _always, _sink
    _always = always
    _sink = sink or _keep
    if _installed:
        return True
    try:
        from botocore.httpsession import URLLib3Session
    except ImportError:
        return False
    original: Callable[..., Any] = URLLib3Session.send

    def timed_send(self: Any, request: Any) -> Any:
        if not (_always or getattr(_local, "on", False)):
            return original(self, request)
        start = time.time()
        try:
            return original(self, request)
        finally:
            _sink(start, time.time())

    URLLib3Session.send = timed_send
    _installed = True
    return True


def _keep(start: float, end: float) -> None:
    with _lock:
        _spans.append((start, end))


_always = False
_sink: Callable[[float, float], None] = _keep


class recording:
    """``with recording():`` count botocore calls made by this thread as external."""

    def __enter__(self) -> None:
        _local.on = True

    def __exit__(self, *exc: object) -> None:
        _local.on = False


def take() -> list[tuple[float, float]]:
    """Remove and return the spans recorded so far (wall-clock start, end)."""
    with _lock:
        spans = list(_spans)
        _spans.clear()
    return spans
