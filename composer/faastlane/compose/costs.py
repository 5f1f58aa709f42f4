"""The hand-off costs the planner uses: measured by ``faastlane profile``, else defaults.

``faastlane profile`` stores ``handoff`` figures with each profile in the cache
(``cache.py``): ``fork_ms`` and ``pipe_ms_per_mb`` wherever the probe ran, and for a
platform target (OpenWhisk, Lambda) ``invoke_ms`` and ``transfer_ms_per_mb``, measured by
invoking the probe action. :func:`load` takes each figure from the newest profile that
has it (a platform's invocation figures only from that platform's profiles, when a
platform is named) and says where it came from; a figure never measured keeps its
default, chosen from measurements on the development machine (docs/placement.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from faastlane.runtime.parallel.policy import DEFAULT_INVOKE_MS, DEFAULT_TRANSFER_MS_PER_MB

from . import profile_cache as cache

# Defaults when nothing was profiled (see docs/placement.md for where they come from); the
# invocation figures are the runtime's own, which it uses when a plan carries none.
DEFAULTS = {"fork_ms": 1.5, "pipe_ms_per_mb": 10.0, "invoke_ms": DEFAULT_INVOKE_MS,
            "transfer_ms_per_mb": DEFAULT_TRANSFER_MS_PER_MB}
_FORK = ("fork_ms", "pipe_ms_per_mb")
_INVOKE = ("invoke_ms", "transfer_ms_per_mb")
PLATFORMS = ("openwhisk", "lambda")


@dataclass(frozen=True)
class HandoffCosts:
    fork_ms: float = DEFAULTS["fork_ms"]
    pipe_ms_per_mb: float = DEFAULTS["pipe_ms_per_mb"]
    invoke_ms: float = DEFAULTS["invoke_ms"]
    transfer_ms_per_mb: float = DEFAULTS["transfer_ms_per_mb"]
    sources: dict[str, str] = field(default_factory=dict)  # figure -> where it came from

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _source(key: str, entry: dict[str, Any]) -> str:
    when = datetime.fromtimestamp(float(entry.get("measured_at", 0)), UTC)
    return f"measured: profile {key}, {when:%Y-%m-%d %H:%M} UTC"


def load(entries: dict[str, Any] | None = None, platform: str | None = None
         ) -> HandoffCosts:
    """The costs from the profile cache (``entries``: its content, for tests)."""
    if entries is None:
        entries = cache.read_all()
    values: dict[str, Any] = dict(DEFAULTS)
    sources = {name: "default" for name in DEFAULTS}
    newest = sorted(((float(e.get("measured_at", 0)), k, e) for k, e in entries.items()
                     if isinstance(e, dict) and isinstance(e.get("handoff"), dict)),
                    key=lambda t: t[0])
    for _, key, entry in newest:  # oldest first: newer profiles overwrite
        target = key.split("/", 1)[0].split("@", 1)[0]
        for name in _FORK + _INVOKE:
            if name in _INVOKE and (target not in PLATFORMS
                                    or (platform is not None and target != platform)):
                continue
            value = entry["handoff"].get(name)
            if isinstance(value, (int, float)):
                values[name], sources[name] = float(value), _source(key, entry)
    return HandoffCosts(**values, sources=sources)
