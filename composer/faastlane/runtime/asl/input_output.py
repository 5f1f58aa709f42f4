"""A state's input and output processing with JSONPath: InputPath, Parameters /
ResultSelector / ItemSelector templates, ResultPath and OutputPath.

Each function raises :class:`StatesError` with the error name and cause Step Functions
reports. Values are shared by reference, never deep-copied: the Orchestrator passes state
between functions by reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import intrinsics
from .errors import RESULT_PATH_MATCH_FAILURE, RUNTIME, StatesError
from .jsonpath import (
    NAME,
    PathNotFound,
    PathSyntaxError,
    Step,
    compile_path,
    read,
)
from .jsonvalue import compact_json


def apply_input_path(data: Any, path: str | None, context: dict[str, Any] | None,
                     variables: Mapping[str, Any] | None = None) -> Any:
    """InputPath: select the state's effective input. ``None`` (JSON null) means ``{}``."""
    return _select(data, path, context, variables)


def apply_output_path(data: Any, path: str | None, context: dict[str, Any] | None,
                      variables: Mapping[str, Any] | None = None) -> Any:
    """OutputPath: select the state's output. ``None`` (JSON null) means ``{}``."""
    return _select(data, path, context, variables)


def _select(data: Any, path: str | None, context: dict[str, Any] | None,
            variables: Mapping[str, Any] | None) -> Any:
    # "If the value of InputPath is null, that means that the raw input is discarded,
    # and the effective input for the state is an empty JSON object, {}" (likewise
    # OutputPath) - Amazon States Language specification.
    if path is None:
        return {}
    if path == "$":
        return data
    try:
        return read(data, path, context, variables)
    except PathNotFound as exc:
        raise StatesError(RUNTIME, f"Invalid path '{path}' : {exc}") from None
    except PathSyntaxError as exc:  # the validator rejects these before any run
        raise StatesError(RUNTIME, str(exc)) from None


def apply_template(
    template: Any,
    data: Any,
    context: dict[str, Any] | None,
    variables: Mapping[str, Any] | None = None,
) -> Any:
    """Parameters / ResultSelector / ItemSelector: build a new value from a template.

    Every key ending in ``.$`` takes the value of the path (or intrinsic function) it
    holds, and loses the suffix; everything else is copied. Fails with States.Runtime
    when a definite path matches nothing, and with States.IntrinsicFailure when an
    intrinsic function rejects its arguments.
    """
    if isinstance(template, dict):
        out: dict[str, Any] = {}
        for key, value in template.items():
            if key.endswith(".$"):
                out[key[:-2]] = _dynamic_value(key, value, data, context, variables)
            else:
                out[key] = apply_template(value, data, context, variables)
        return out
    if isinstance(template, list):
        return [apply_template(item, data, context, variables) for item in template]
    return template


def _dynamic_value(
    key: str,
    expression: Any,
    data: Any,
    context: dict[str, Any] | None,
    variables: Mapping[str, Any] | None,
) -> Any:
    if not isinstance(expression, str):
        raise StatesError(
            RUNTIME, f"The value for the field '{key}' must be a STRING that contains a JSONPath"
        )
    try:
        if intrinsics.is_intrinsic(expression):
            return intrinsics.evaluate(expression, data, context or {}, variables)
        return read(data, expression, context, variables)
    except PathNotFound as exc:
        # AWS names the missing path as written and the input it looked in.
        missing = exc.path
        source = (context or {}) if missing.startswith("$$") else data
        raise StatesError(
            RUNTIME,
            f"The JSONPath '{missing}' specified for the field '{key}' could not be found "
            f"in the input '{compact_json(source)}'",
        ) from None
    except PathSyntaxError as exc:
        raise StatesError(RUNTIME, str(exc)) from None


def apply_result_path(state_input: Any, result: Any, path: str | None) -> Any:
    """ResultPath: combine the state's input with its result.

    ``None`` (JSON null) discards the result; ``"$"`` replaces the input with it; any
    other Reference Path sets that node in a copy of the input, creating missing
    objects on the way. The input itself is never modified: only the objects along the
    path are copied, the rest is shared.
    """
    if path is None:
        return state_input
    if path == "$":
        return result
    compiled = compile_path(path)
    steps = compiled.steps
    if (
        compiled.context
        or compiled.variable is not None
        or not compiled.definite
        or compiled.function
        or not steps
    ):
        raise _result_path_failure(path, state_input)
    return _set(state_input, steps, result, path, state_input)


def _set(node: Any, steps: tuple[Step, ...], value: Any, path: str, state_input: Any) -> Any:
    """A copy of ``node`` with ``value`` at ``steps``."""
    kind, key = steps[0]
    rest = steps[1:]
    if kind == NAME:
        if not isinstance(node, dict):
            raise _result_path_failure(path, state_input)
        copy = dict(node)
        if rest:
            # A missing field becomes an object holding the rest of the path.
            child = node[key] if key in node else {}
            copy[key] = _set(child, rest, value, path, state_input)
        else:
            copy[key] = value
        return copy
    if not isinstance(node, list) or not -len(node) <= key < len(node):
        raise _result_path_failure(path, state_input)
    copy_list = list(node)
    copy_list[key] = _set(node[key], rest, value, path, state_input) if rest else value
    return copy_list


def _result_path_failure(path: str, state_input: Any) -> StatesError:
    return StatesError(
        RESULT_PATH_MATCH_FAILURE,
        f"Unable to apply ReferencePath {path} to input {compact_json(state_input)}",
    )
