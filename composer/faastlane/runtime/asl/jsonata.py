"""JSONata in Step Functions: ``{% %}`` fields, ``$states``, and the added functions.

A JSONata state writes data expressions as strings ``"{% <expression> %}"``, anywhere in
a field's JSON value; every other value is taken literally (Step Functions developer
guide, "Transforming data with JSONata in Step Functions"). Expressions read:

- ``$states``: ``input`` (the state's raw input), ``context`` (the context object),
  ``result`` (a Task/Parallel/Map's result, in Output and Assign) and ``errorOutput``
  (``{"Error", "Cause"}``, in a Catcher's Output and Assign);
- the workflow variables, as ``$name``;
- the functions Step Functions adds to JSONata ("JSONata functions provided by Step
  Functions"): ``$partition``, ``$range``, ``$hash``, ``$random``, ``$uuid``, ``$parse``.

Evaluation uses the ``jsonata`` package (jsonata-python), which ``faastlane compose``
copies into an action that uses JSONata; it is imported on first use only, so a JSONPath
workflow never loads it. Any failure, and an expression that produces nothing
(JSONata's *undefined*), is ``States.QueryEvaluationError``.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from . import intrinsics
from .errors import QUERY_EVALUATION_ERROR, StatesError
from .jsonvalue import integral_floats_as_ints

OPEN, CLOSE = "{%", "%}"

# Keys of the reserved $states variable.
INPUT, CONTEXT, RESULT, ERROR_OUTPUT = "input", "context", "result", "errorOutput"


def is_expression(value: Any) -> bool:
    """Whether ``value`` is a ``{% ... %}`` JSONata expression string."""
    return (isinstance(value, str) and len(value) >= len(OPEN) + len(CLOSE)
            and value.startswith(OPEN) and value.endswith(CLOSE))


def states_variable(state_input: Any, context: dict[str, Any], **more: Any) -> dict[str, Any]:
    """The ``$states`` object: ``input`` and ``context``, plus ``result=``/``errorOutput=``."""
    states = {INPUT: state_input, CONTEXT: context}
    if "result" in more:
        states[RESULT] = more["result"]
    if "error_output" in more:
        states[ERROR_OUTPUT] = more["error_output"]
    return states


def evaluate_field(value: Any, field: str, states: dict[str, Any],
                   variables: Mapping[str, Any]) -> Any:
    """The value of a JSONata state's field: expressions evaluated, the rest literal.

    ``field`` names the field in error causes (``"Output"``, ``"Arguments"``, ...).
    """
    if isinstance(value, str):
        return _evaluate(value, field, states, variables) if is_expression(value) else value
    if isinstance(value, dict):
        # AWS names a nested field with slashes: 'Assign/result', 'Output/FunctionResult'.
        return {key: evaluate_field(item, f"{field}/{key}", states, variables)
                for key, item in value.items()}
    if isinstance(value, list):
        return [evaluate_field(item, f"{field}[{index}]", states, variables)
                for index, item in enumerate(value)]
    return value


def expression_text(text: str) -> str:
    """A ``{% %}`` string's expression as AWS quotes it in causes: without the
    delimiters and the spaces around it (LocalStack's test_undefined_reference records:
    "The JSONata expression '$doesNotExist' specified for the field 'Assign/result'
    returned nothing (undefined).")."""
    return text[len(OPEN):-len(CLOSE)].strip()


def _evaluate(text: str, field: str, states: dict[str, Any],
              variables: Mapping[str, Any]) -> Any:
    engine = _engine()
    expression = _compile(text)
    bindings = dict(_functions())
    for name, value in variables.items():
        bindings[name] = engine.Utils.NULL_VALUE if value is None else value
    bindings["states"] = states
    # jsonata-python evaluates on a per-thread "current" instance, whose fields change
    # during evaluation: make it this thread's own copy of the expression.
    engine.Jsonata.CURRENT.jsonata = expression
    try:
        result = expression.evaluate(None, bindings)
    except StatesError:
        raise
    except Exception as exc:  # noqa: BLE001 - any engine failure is the state's error
        code = getattr(exc, "error", None)
        message = f"{code}: {exc}" if isinstance(code, str) and code else str(exc)
        raise StatesError(QUERY_EVALUATION_ERROR,
                          f"The JSONata expression '{expression_text(text)}' specified for "
                          f"the field '{field}' threw an error during evaluation. "
                          f"{message}") from None
    if result is None:
        raise StatesError(QUERY_EVALUATION_ERROR,
                          f"The JSONata expression '{expression_text(text)}' specified for "
                          f"the field '{field}' returned nothing (undefined).")
    return _nulls_as_none(result, engine.Utils.NULL_VALUE)


# ------------------------------------------------------------------ the engine


def preload() -> None:
    """Import the engine now, if it is there (if not, the first evaluation says so):
    the Orchestrator does before it runs anything, so that the modules are made in
    the shared heap, not in the heap of the thread that first evaluates (under
    ``--isolation mpk``, the hand-off domain's)."""
    try:
        _engine()
    except ImportError:
        pass


def _engine() -> Any:
    """The jsonata package, imported on first use (vendored into JSONata actions)."""
    import jsonata  # noqa: PLC0415 - deliberately lazy

    return jsonata


# Parsed expressions, per thread (see _evaluate); a forked child inherits its parent's.
# They come from the workflow definition, so there are finitely many.
_PARSED = threading.local()


def _compile(text: str) -> Any:
    """Parse one ``{% %}`` string once per thread; evaluations reuse the tree (state
    transitions are the hot path)."""
    parsed: dict[str, Any] = _PARSED.__dict__.setdefault("expressions", {})
    expression = parsed.get(text)
    if expression is None:
        expression = parsed[text] = _parse_expression(text)
    return expression


def _parse_expression(text: str) -> Any:
    engine = _engine()
    try:
        expression = engine.Jsonata(text[len(OPEN):-len(CLOSE)])
    except Exception as exc:  # noqa: BLE001 - the validator rejects these before a run
        raise StatesError(QUERY_EVALUATION_ERROR,
                          f"The JSONata expression '{text}' does not parse: {exc}") from None
    # Keep JSONata's null and undefined apart: undefined is an error, null a value.
    expression.set_output_convert_nulls(False)
    return expression


@lru_cache(maxsize=1)
def _functions() -> dict[str, Any]:
    """The functions Step Functions adds to JSONata, bound as ``$name``."""
    engine = _engine()
    return {name: engine.Jsonata.JLambda(_checked(name, implementation))
            for name, implementation in _STEP_FUNCTIONS_ADDITIONS.items()}


def _checked(name: str, implementation: Callable[..., Any]) -> Callable[..., Any]:
    """An added function whose argument errors are the state's QueryEvaluationError."""

    def call(*args: Any) -> Any:
        try:
            return implementation(*(_plain(arg) for arg in args))
        except StatesError as exc:
            raise StatesError(QUERY_EVALUATION_ERROR, f"${name}: {exc.cause}") from None
        except TypeError as exc:  # wrong number of arguments
            raise StatesError(QUERY_EVALUATION_ERROR, f"${name}: {exc}") from None

    return call


def _nulls_as_none(value: Any, null: Any) -> Any:
    """``value`` with JSONata's null object replaced by None in place, as jsonata's
    ``Utils.convert_nulls`` does, but iteratively: a result may be as deep as the input."""
    if value is null:
        return None
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            slots: Any = node.items()
        elif isinstance(node, list):
            slots = enumerate(node)
        else:
            continue
        for key, item in list(slots):
            if item is null:
                node[key] = None
            elif isinstance(item, (dict, list)):
                stack.append(item)
    return value


def _plain(value: Any) -> Any:
    """A JSONata value as plain JSON data: integral floats as int, null as None."""
    return integral_floats_as_ints(value, _engine().Utils.NULL_VALUE)


def _random(seed: Any = None) -> float:
    """``$random([seed])``: a float in [0, 1); the same seed gives the same number."""
    if seed is None:
        return random.random()
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise StatesError(QUERY_EVALUATION_ERROR, f"the seed must be an integer, got {seed!r}")
    return random.Random(seed).random()


def _parse(text: Any) -> Any:
    """``$parse(json)``: JSON text to the value it encodes."""
    if not isinstance(text, str):
        raise StatesError(QUERY_EVALUATION_ERROR, f"the argument must be a string, got {text!r}")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise StatesError(QUERY_EVALUATION_ERROR, f"not valid JSON ({exc})") from None


def _range(first: Any, last: Any, step: Any) -> Any:
    """``$range``: States.ArrayRange's array, except that, JSONata-like, a range of one
    element is that element (AWS answered 1 for $range(1, 9, 9): LocalStack's recorded
    test_array_range of its JSONata tests)."""
    values = intrinsics.implementation("ArrayRange")(first, last, step)
    return values[0] if len(values) == 1 else values


# Where Step Functions documents a function as the JSONata form of an intrinsic, the
# intrinsic's implementation (and its argument rules) is reused.
_STEP_FUNCTIONS_ADDITIONS: dict[str, Callable[..., Any]] = {
    "partition": intrinsics.implementation("ArrayPartition"),
    "range": _range,
    "hash": intrinsics.implementation("Hash"),
    "uuid": intrinsics.implementation("UUID"),
    "random": _random,
    "parse": _parse,
}
