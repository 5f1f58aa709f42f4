"""A Faastlane variant as a system under test: the composed action, warm, in a worker.

The app is composed with the variant's planning options (``-NS``: isolation none;
``-Th``: threads only; ``-P``: processes only; the full system: the app's own isolation)
into a private folder, and its generated ``orchestrator.py`` is imported exactly as the
OpenWhisk or Lambda entry point imports it: every function module loads once, then each
request is one ``ORCHESTRATOR.execute``. Function spans come from the runtime's own trace.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from .. import external_calls
from ..timeline import spans_from_records
from .base import RunResult

_COMPOSE = """
import json, sys
from faastlane.app_source import load
from faastlane.compose.action import write_action
write_action(load(sys.argv[1], json.loads(sys.argv[2])), sys.argv[3])
"""


class FaastlaneSystem:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.folder = tempfile.mkdtemp(prefix="faastlane-bench-action-")
        action = self.action = os.path.join(self.folder, "action")
        # Composed by a child: this process then holds what an action's process holds,
        # not the composer's libraries too (the Cython registry module PyYAML's parser
        # makes, say, which the functions' libraries must be the first to fill under mpk).
        subprocess.run([sys.executable, "-c", _COMPOSE, spec["app"],
                        json.dumps(spec.get("planning", {})), action], check=True)
        sys.path.insert(0, action)
        # The action's own copy of the runtime's tracer, a module whose globals (its
        # ``enabled`` switch) are set from here: Any to the checker, as the action is.
        self.trace: Any = importlib.import_module("faastlane_runtime.engine.trace")
        # Only the functions use botocore in this process: every call is external. Spans
        # go into the trace, which carries them back from forked functions and branches.
        # Installed before the action loads: its warm pool workers fork at load time.
        external_calls.install(always=True, sink=self._sink())
        self.orchestrator = importlib.import_module("orchestrator").ORCHESTRATOR

    def _sink(self) -> Callable[[float, float], None]:
        """Where a function's botocore call records its span. Under mpk the call is made
        inside the function's domain, where the runtime's trace is read-only: the span
        is handed to it through the runtime's broker (``call_shared``), as the runtime
        hands a result out."""
        with open(os.path.join(self.action, "plan.json"), encoding="utf-8") as handle:
            isolation = json.load(handle)["options"]["isolation"]
        if isolation != "mpk":
            return self._external
        guard = importlib.import_module("faastlane_runtime.isolation.guard")
        heaps = importlib.import_module("faastlane_runtime.isolation.private_heaps")
        native = importlib.import_module("faastlane_runtime.isolation.domains").native_module()
        record = guard.broker(self._external)

        def sink(start: float, end: float) -> None:
            if native.current_domain() is None:  # not in a domain: the trace directly
                record(start, end)
            else:
                heaps.call_shared(record, start, end)
        return sink

    def _external(self, start: float, end: float) -> None:
        self.trace.record(type="External", start=start, end=end)

    def run(self, execution_input: Any, traced: bool) -> RunResult:
        self.trace.enabled = traced
        self.trace.take()
        start = time.time()
        result = self.orchestrator.execute(execution_input)
        end = time.time()
        records = self.trace.take()
        external = [(r["start"], r["end"]) for r in records if r.get("type") == "External"]
        states = sum(1 for r in records if r.get("type") not in ("Function", "External"))
        return RunResult(result.status, result.to_json(), start, end,
                         spans_from_records(records), external, states)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
