"""No valid workflow and input make the engine crash (issue 18): every execution of a
generated valid ASL workflow ends in an output that is JSON, or an ASL error -- a
``States.*`` error with a cause, the function's own, or a Fail state's.

Workflows come from ``asl_strategies.workflows()`` (every state type, JSONPath, JSONata
and mixed; paths, intrinsics, Choice rules, Retry/Catch, Map/Parallel nesting, arbitrary
names and inputs) and run in-process through the interpreter ``faastlane run`` uses, with
two Task functions (``echo`` returns its event, ``boom`` raises ``BoomError``), parallel
branches on threads and, for a fifth as many examples, in forked processes (the default).
Only definitions ``faastlane validate`` accepts are run.

The engine turns an unexpected Python exception into ``States.Runtime`` as its last
resort (``unexpected_cause``); here every such conversion is a failure, reported with
its traceback: the fix is the right behaviour, not the conversion.

Examples: ``FAASTLANE_FUZZ_EXAMPLES`` (default 100, about a minute); a long local run:
``FAASTLANE_FUZZ_EXAMPLES=20000 pytest tests/unit/test_fuzz_workflows.py``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import pytest
from asl_acceptance import refusals
from asl_strategies import FUNCTIONS, inputs, workflows
from hypothesis import HealthCheck, assume, event, given, settings

from faastlane.runtime.asl.errors import StatesError, unexpected_cause
from faastlane.runtime.asl.model import machine_from_asl
from faastlane.runtime.engine import execution as execution_module
from faastlane.runtime.engine import forking as forking_module
from faastlane.runtime.engine.execution import Execution
from faastlane.runtime.engine.functions import FunctionRegistry, FunctionSpec
from faastlane.runtime.interpreter import states as states_module
from faastlane.runtime.interpreter.states import run_machine
from faastlane.runtime.options import PARALLEL_PROCESSES, PARALLEL_THREADS, Options

EXAMPLES = int(os.environ.get("FAASTLANE_FUZZ_EXAMPLES", "100"))
SOURCES = {
    "echo": "def handler(event, context):\n    return event\n",
    "boom": "class BoomError(Exception):\n    pass\n\n\n"
            "def handler(event, context):\n    raise BoomError('boom: ' + repr(event)[:40])\n",
}
THREADS = Options(parallel=PARALLEL_THREADS)
PROCESSES = Options(parallel=PARALLEL_PROCESSES)  # a fork per Parallel/Map, the default
CRASH_LOG = "crashes.txt"


def _recording(crash_log: str) -> Callable[[BaseException], str]:
    """unexpected_cause, also appending the exception's traceback to ``crash_log`` (a
    file, so that the forked processes that run branches report theirs too)."""
    def recording_unexpected_cause(exc: BaseException) -> str:
        with open(crash_log, "a", encoding="utf-8") as log:
            log.write("".join(traceback.format_exception(exc)) + "\n")
        return unexpected_cause(exc)

    return recording_unexpected_cause


@pytest.fixture(scope="module")
def functions() -> Iterator[FunctionRegistry]:
    """The two functions; while in use, the engine's conversions are recorded in
    CRASH_LOG under the registry's root."""
    with tempfile.TemporaryDirectory(prefix="fuzz-functions-") as root:
        record = _recording(os.path.join(root, CRASH_LOG))
        os.mkdir(os.path.join(root, "functions"))
        for name, source in SOURCES.items():
            with open(os.path.join(root, "functions", f"{name}.py"), "w") as handle:
                handle.write(source)
        specs = {name: FunctionSpec(name, f"functions/{name}.py", "handler", "lambda")
                 for name in FUNCTIONS}
        # Waits and retry back-offs take no time here: what they wait for is not fuzzed.
        with mock.patch.object(Execution, "sleep", lambda self, seconds: self.check_deadline()), \
                mock.patch.object(states_module, "unexpected_cause", record), \
                mock.patch.object(execution_module, "unexpected_cause", record), \
                mock.patch.object(forking_module, "unexpected_cause", record):
            yield FunctionRegistry(root, specs)


def check_outcome(definition: dict, data: Any, functions: FunctionRegistry,
                  options: Options) -> None:
    crash_log = os.path.join(functions.root, CRASH_LOG)
    open(crash_log, "w").close()
    execution = Execution("fuzz", data, functions, options)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(_run_recursion_limit(definition))
    try:
        output = run_machine(machine_from_asl(definition), data, execution)
    except StatesError as err:
        assert err.error is None or isinstance(err.error, str), err  # a Fail may name none
        if (err.error or "").startswith("States."):
            assert isinstance(err.cause, str) and err.cause, f"{err.error} without a cause"
        json.dumps(err.to_json(), allow_nan=False)
        event(f"failed: {err.error if (err.error or '').startswith('States.') else 'other'}")
    else:
        json.dumps(output, allow_nan=False)  # an output is JSON
        event("succeeded")  # --hypothesis-show-statistics counts the outcomes
    finally:
        sys.setrecursionlimit(limit)
    with open(crash_log, encoding="utf-8") as log:
        crashes = log.read()
    assert not crashes, "the engine crashed:\n" + crashes


def _run_recursion_limit(definition: dict) -> int:
    """The Python stack the run of ``definition`` has: CPython's default, or 10,000 when
    a JSONata expression imports jsonata-python (which raises the limit as it loads). This
    process imported it at the first JSONata example: without this, every later example
    would run on 10,000 frames and never meet the limit a JSONPath run meets."""
    return 10_000 if '"QueryLanguage": "JSONata"' in json.dumps(definition) else 1_000


FUZZ_SETTINGS = {"deadline": None, "print_blob": True, "suppress_health_check": [
    HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]}


@settings(max_examples=EXAMPLES, **FUZZ_SETTINGS)
@given(definition=workflows(), data=inputs())
def test_no_valid_workflow_crashes_the_engine(definition: dict, data: Any,
                                              functions: FunctionRegistry) -> None:
    assume(not refusals(json.dumps(definition), FUNCTIONS))
    check_outcome(definition, json.loads(json.dumps(data)), functions, THREADS)


@settings(max_examples=max(1, EXAMPLES // 5), **FUZZ_SETTINGS)
@given(definition=workflows(), data=inputs())
def test_no_valid_workflow_crashes_the_engine_with_forked_branches(
        definition: dict, data: Any, functions: FunctionRegistry) -> None:
    # Branches and iterations in forked processes: their results cross a pipe.
    assume(not refusals(json.dumps(definition), FUNCTIONS))
    check_outcome(definition, json.loads(json.dumps(data)), functions, PROCESSES)
