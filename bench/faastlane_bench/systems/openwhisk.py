"""The OpenWhisk-style baseline: a controller following the ASL, one action per function.

The controller runs the workflow with Faastlane's own state engine
(``runtime/interpreter/states.py``: the same ASL semantics, so outputs are comparable),
through an :class:`Execution` whose isolation mode (:class:`Controller`) calls a function
by an activation instead of a local call: the event is serialised to JSON and POSTed to
``/run`` of a warm action process of that function (:mod:`.action_pool`); its JSON result
comes back the same way.
Parallel branches and Map iterations are concurrent activations (controller threads,
waiting on HTTP), limited by the containers available. An activation carries at most
1 MB, OpenWhisk's default payload limit: larger parts of the state go through S3 as
claim checks.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from faastlane.app_source import load
from faastlane.runtime.asl.errors import StatesError
from faastlane.runtime.engine.execution import Execution
from faastlane.runtime.engine.functions import FunctionRegistry
from faastlane.runtime.engine.modes import Calls, Mode
from faastlane.runtime.interpreter.states import run_machine
from faastlane.runtime.options import NONE, PARALLEL_THREADS, Options
from faastlane.runtime.orchestrator import FAILED, SUCCEEDED, Result

from .. import claimcheck
from ..timeline import Span
from .action_pool import ActionPool
from .base import RunResult

# Activations of parallel work are controller threads; containers bound the concurrency.
CONTROLLER_OPTIONS = Options(isolation=NONE, parallel=PARALLEL_THREADS)


class Activations:
    """What a controller needs per execution: the pool, the store, the span log."""

    def __init__(self, pool: ActionPool, store: claimcheck.S3Store) -> None:
        self.pool = pool
        self.store = store
        self.lock = threading.Lock()
        self.spans: list[Span] = []
        self.external: list[tuple[float, float]] = []

    def activate(self, function: str, event: Any, timeout: float | None) -> Any:
        params = {"event": event, "limit": claimcheck.OPENWHISK_LIMIT, "timeout": timeout}
        data = json.dumps(params).encode()  # once: the size check reuses the payload
        if len(data) > claimcheck.OPENWHISK_LIMIT:
            params["event"] = claimcheck.offload(event, claimcheck.OPENWHISK_LIMIT // 2,
                                                 self.store)
            data = json.dumps(params).encode()
        reply = self.pool.invoke_encoded(function, data)
        with self.lock:
            self.spans.append(Span(function, *reply["compute"]))
            self.external.extend(tuple(e) for e in reply["external"])
        if "failure" in reply:
            raise StatesError(reply["failure"]["Error"], reply["failure"]["Cause"])
        result = reply["result"]
        if claimcheck.has_references(result):
            result = claimcheck.resolve(result, self.store)
        return result


class Controller(Mode):
    """The controller's mode: every Task is an activation of its function's action."""

    def __init__(self, activations: Activations) -> None:
        super().__init__(CONTROLLER_OPTIONS)
        self.activations = activations

    def call(self, execution: Calls, state_name: str, function: str, event: Any,
             timeout_seconds: float | None, planned: str) -> Any:
        execution.check_deadline()
        return self.activations.activate(function, event,
                                         execution.remaining(timeout_seconds))


class OpenWhiskSystem:
    def __init__(self, spec: dict[str, Any]) -> None:
        composition = load(spec["app"], {"isolation": NONE})
        self.name = composition.app.name
        self.workflow = composition.workflow
        self.no_functions = FunctionRegistry(composition.app.root, {})
        cpu_sets = [set(c) for c in spec["cpu_sets"]] if spec.get("cpu_sets") else None
        self.pool = ActionPool(spec["app"], spec["pool_size"], cpu_sets)
        self.store = claimcheck.S3Store()

    def run(self, execution_input: Any, traced: bool) -> RunResult:
        activations = Activations(self.pool, self.store)
        execution = Execution(self.name, execution_input, self.no_functions,
                              CONTROLLER_OPTIONS, self.workflow.timeout_seconds,
                              mode=Controller(activations))
        start = time.time()
        try:
            result = Result(SUCCEEDED, output=run_machine(self.workflow, execution_input,
                                                          execution))
        except StatesError as err:
            result = Result(FAILED, error=err.error, cause=err.cause)
        end = time.time()
        spans = activations.spans if traced else []
        external = activations.external if traced else []
        return RunResult(result.status, result.to_json(), start, end, spans, external)

    def close(self) -> None:
        self.pool.close()
