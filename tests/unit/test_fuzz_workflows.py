"""No valid workflow and input make the engine crash (issue 18): every execution of a
generated valid ASL workflow ends in an output that is JSON, or an ASL error -- a
``States.*`` error with a cause, the function's own, or a Fail state's.

Workflows come from ``asl_strategies.workflows()`` (every state type, JSONPath, JSONata
and mixed; paths, intrinsics, Choice rules, Retry/Catch, Map/Parallel nesting, arbitrary
names and inputs) and run in-process through the interpreter ``faastlane run`` uses, with
two Task functions (``echo`` returns its event, ``boom`` raises ``BoomError``) and
parallel branches on threads. Only definitions ``faastlane validate`` accepts are run.

The engine turns an unexpected Python exception into ``States.Runtime`` as its last
resort (``unexpected_cause``); here every such conversion is a failure, reported with
its traceback: the fix is the right behaviour, not the conversion.

Examples: ``FAASTLANE_FUZZ_EXAMPLES`` (default 100, about a minute); a long local run:
``FAASTLANE_FUZZ_EXAMPLES=20000 pytest tests/unit/test_fuzz_workflows.py``.
"""

from __future__ import annotations

import json
import os
import tempfile
import traceback
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from asl_acceptance import refusals
from asl_strategies import FUNCTIONS, inputs, workflows
from hypothesis import HealthCheck, assume, given, settings

from faastlane.runtime.asl.errors import StatesError, unexpected_cause
from faastlane.runtime.asl.model import machine_from_asl
from faastlane.runtime.engine import execution as execution_module
from faastlane.runtime.engine.execution import Execution
from faastlane.runtime.engine.functions import FunctionRegistry, FunctionSpec
from faastlane.runtime.interpreter import states as states_module
from faastlane.runtime.interpreter.states import run_machine
from faastlane.runtime.options import PARALLEL_THREADS, Options

EXAMPLES = int(os.environ.get("FAASTLANE_FUZZ_EXAMPLES", "100"))
SOURCES = {
    "echo": "def handler(event, context):\n    return event\n",
    "boom": "class BoomError(Exception):\n    pass\n\n\n"
            "def handler(event, context):\n    raise BoomError('boom: ' + repr(event)[:40])\n",
}
OPTIONS = Options(parallel=PARALLEL_THREADS)
CRASHES: list[str] = []  # tracebacks of the exceptions the engine had to convert


def _recording_unexpected_cause(exc: BaseException) -> str:
    CRASHES.append("".join(traceback.format_exception(exc)))
    return unexpected_cause(exc)


@pytest.fixture(scope="module")
def functions() -> Iterator[FunctionRegistry]:
    with tempfile.TemporaryDirectory(prefix="fuzz-functions-") as root:
        os.mkdir(os.path.join(root, "functions"))
        for name, source in SOURCES.items():
            with open(os.path.join(root, "functions", f"{name}.py"), "w") as handle:
                handle.write(source)
        specs = {name: FunctionSpec(name, f"functions/{name}.py", "handler", "lambda")
                 for name in FUNCTIONS}
        # Waits and retry back-offs take no time here: what they wait for is not fuzzed.
        with mock.patch.object(Execution, "sleep", lambda self, seconds: self.check_deadline()), \
                mock.patch.object(states_module, "unexpected_cause", _recording_unexpected_cause), \
                mock.patch.object(execution_module, "unexpected_cause",
                                  _recording_unexpected_cause):
            yield FunctionRegistry(root, specs)


def check_outcome(definition: dict, data: Any, functions: FunctionRegistry) -> None:
    CRASHES.clear()
    execution = Execution("fuzz", data, functions, OPTIONS)
    try:
        output = run_machine(machine_from_asl(definition), data, execution)
    except StatesError as err:
        assert err.error is None or isinstance(err.error, str), err  # a Fail may name none
        if (err.error or "").startswith("States."):
            assert isinstance(err.cause, str) and err.cause, f"{err.error} without a cause"
        json.dumps(err.to_json(), allow_nan=False)
    else:
        json.dumps(output, allow_nan=False)  # an output is JSON
    assert not CRASHES, "the engine crashed:\n" + CRASHES[0]


@settings(max_examples=EXAMPLES, deadline=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.data_too_large])
@given(definition=workflows(), data=inputs())
def test_no_valid_workflow_crashes_the_engine(definition: dict, data: Any,
                                              functions: FunctionRegistry) -> None:
    assume(not refusals(json.dumps(definition), FUNCTIONS))
    check_outcome(definition, json.loads(json.dumps(data)), functions)
