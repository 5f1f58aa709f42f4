"""A dataclass per ASL state type, in the spec's own vocabulary.

The composer builds these from ``workflow.json`` (:func:`machine_from_asl`) and renders
them as constructor calls in the generated ``orchestrator.py``; the runtime executes
them. Field values keep ASL's meaning: a path field is ``"$"`` when absent from the
workflow and ``None`` when the workflow sets it to JSON ``null``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .jsonata import is_expression
from .resources import task_target

# Step Functions' documented Retrier defaults.
DEFAULT_INTERVAL_SECONDS = 1
DEFAULT_MAX_ATTEMPTS = 3
DEFAULT_BACKOFF_RATE = 2.0

# Placements a state's work can get (see plan.json).
INLINE = "inline"  # evaluated by the orchestrator thread itself (Pass, Choice, ...)
THREAD = "thread"  # a function on its own thread, state passed by reference
ORCHESTRATOR = "orchestrator"  # a service integration, called by the Orchestrator itself
PROCESS = "process"  # a function or branch in a forked process, state over a pipe

# Query languages: a state's own QueryLanguage, else the workflow's (default JSONPath).
JSONPATH = "JSONPath"
JSONATA = "JSONata"


@dataclass(frozen=True)
class Retrier:
    error_equals: tuple[str, ...]
    interval_seconds: float = DEFAULT_INTERVAL_SECONDS
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    backoff_rate: float = DEFAULT_BACKOFF_RATE
    max_delay_seconds: float | None = None
    jitter_strategy: str = "NONE"


@dataclass(frozen=True)
class Catcher:
    error_equals: tuple[str, ...]
    next: str
    result_path: str | None = "$"
    assign: Any = None  # None: no Assign
    output: Any = None  # JSONata only
    has_output: bool = False


@dataclass(frozen=True)
class State:
    """Fields every state type shares."""

    name: str
    next: str | None = None  # None: the state ends its (sub-)machine
    comment: str | None = None
    query_language: str = JSONPATH
    assign: Any = None  # None: no Assign
    output: Any = None  # JSONata only: the state's output (default: result or input)
    has_output: bool = False


@dataclass(frozen=True)
class Pass(State):
    input_path: str | None = "$"
    parameters: Any = None
    has_parameters: bool = False
    result: Any = None
    has_result: bool = False
    result_path: str | None = "$"
    output_path: str | None = "$"


@dataclass(frozen=True)
class Task(State):
    function: str | None = None  # None: named at run time by Parameters.FunctionName.$
    invoke_shape: bool = False  # arn:aws:states:::lambda:invoke: wrap the result
    # A service integration's Resource (arn:aws:states:::dynamodb:putItem, ...): the
    # Orchestrator calls the service itself (services/); function is None.
    integration: str | None = None
    input_path: str | None = "$"
    parameters: Any = None
    has_parameters: bool = False
    arguments: Any = None  # JSONata only: the function's input (default: the state input)
    has_arguments: bool = False
    result_selector: Any = None
    has_result_selector: bool = False
    result_path: str | None = "$"
    output_path: str | None = "$"
    timeout_seconds: float | str | None = None  # str: a JSONata expression
    timeout_seconds_path: str | None = None
    retry: tuple[Retrier, ...] = ()
    catch: tuple[Catcher, ...] = ()
    placement: str = THREAD

    @cached_property
    def unguarded(self) -> bool:
        """Whether the Task calls a function with no Retry, Catch or timeout of its own
        (nothing to wait for but the function: such Tasks may run in a relay)."""
        return (self.integration is None and not self.retry and not self.catch
                and self.timeout_seconds is None and self.timeout_seconds_path is None)

    @cached_property
    def direct(self) -> bool:
        """Whether the function's event is the state's input and its result the state's
        output: a JSONPath Task of a Lambda function with no InputPath, Parameters,
        ResultSelector, ResultPath, OutputPath or Assign (the hand-off's short way)."""
        return (self.query_language == JSONPATH and self.function is not None
                and not self.invoke_shape and self.integration is None
                and self.input_path == "$" and not self.has_parameters
                and not self.has_result_selector and self.result_path == "$"
                and self.output_path == "$" and self.assign is None)


@dataclass(frozen=True)
class Choice(State):
    choices: tuple[dict[str, Any], ...] = ()
    default: str | None = None
    input_path: str | None = "$"
    output_path: str | None = "$"


@dataclass(frozen=True)
class Wait(State):
    seconds: float | str | None = None  # str: a JSONata expression
    seconds_path: str | None = None
    timestamp: str | None = None
    timestamp_path: str | None = None
    input_path: str | None = "$"
    output_path: str | None = "$"


@dataclass(frozen=True)
class Succeed(State):
    input_path: str | None = "$"
    output_path: str | None = "$"


@dataclass(frozen=True)
class Fail(State):
    error: str | None = None
    error_path: str | None = None
    cause: str | None = None
    cause_path: str | None = None


@dataclass(frozen=True)
class Machine:
    """A state machine: the workflow itself, a Parallel branch or a Map iterator."""

    start_at: str
    states: dict[str, State]
    timeout_seconds: float | None = None


@dataclass(frozen=True)
class Parallel(State):
    branches: tuple[Machine, ...] = ()
    input_path: str | None = "$"
    parameters: Any = None
    has_parameters: bool = False
    arguments: Any = None  # JSONata only: the branches' input (default: the state input)
    has_arguments: bool = False
    result_selector: Any = None
    has_result_selector: bool = False
    result_path: str | None = "$"
    output_path: str | None = "$"
    retry: tuple[Retrier, ...] = ()
    catch: tuple[Catcher, ...] = ()
    placement: str = PROCESS


@dataclass(frozen=True)
class Map(State):
    iterator: Machine = field(default_factory=lambda: Machine("", {}))
    items_path: str = "$"
    items: Any = None  # JSONata only: an array or an expression (default: the state input)
    has_items: bool = False
    item_selector: Any = None
    has_item_selector: bool = False
    max_concurrency: int | str = 0  # str: a JSONata expression (so are the next two)
    tolerated_failure_percentage: float | str | None = None
    tolerated_failure_count: int | str | None = None
    # JSONPath only: reference paths to these three limits in the effective input.
    max_concurrency_path: str | None = None
    tolerated_failure_percentage_path: str | None = None
    tolerated_failure_count_path: str | None = None
    input_path: str | None = "$"
    result_selector: Any = None
    has_result_selector: bool = False
    result_path: str | None = "$"
    output_path: str | None = "$"
    retry: tuple[Retrier, ...] = ()
    catch: tuple[Catcher, ...] = ()
    placement: str = PROCESS
    # ProcessorConfig Mode DISTRIBUTED: run alike here, but its history, as AWS's, holds
    # a map run (MapRunStarted, ...), not the iterations (child executions on AWS).
    distributed: bool = False


# --------------------------------------------------------------------------- building


def _path(spec: dict[str, Any], key: str) -> str | None:
    """A path field: "$" when absent, None when the workflow sets JSON null."""
    return spec[key] if key in spec else "$"


def _retriers(spec: dict[str, Any]) -> tuple[Retrier, ...]:
    return tuple(
        Retrier(
            error_equals=tuple(r["ErrorEquals"]),
            interval_seconds=r.get("IntervalSeconds", DEFAULT_INTERVAL_SECONDS),
            max_attempts=r.get("MaxAttempts", DEFAULT_MAX_ATTEMPTS),
            backoff_rate=r.get("BackoffRate", DEFAULT_BACKOFF_RATE),
            max_delay_seconds=r.get("MaxDelaySeconds"),
            jitter_strategy=r.get("JitterStrategy", "NONE"),
        )
        for r in spec.get("Retry", ())
    )


def _catchers(spec: dict[str, Any]) -> tuple[Catcher, ...]:
    return tuple(
        Catcher(tuple(c["ErrorEquals"]), c["Next"], _path(c, "ResultPath"),
                assign=c.get("Assign"), **_payload(c, "Output", "output"))
        for c in spec.get("Catch", ())
    )


def _common(name: str, spec: dict[str, Any], language: str) -> dict[str, Any]:
    return {"name": name, "next": None if spec.get("End") else spec.get("Next"),
            "comment": spec.get("Comment"), **_shared(spec, language)}


def _shared(spec: dict[str, Any], language: str) -> dict[str, Any]:
    """Fields every state type has (Choice, Succeed and Fail have no Next)."""
    return {"query_language": spec.get("QueryLanguage", language),
            "assign": spec.get("Assign"), **_payload(spec, "Output", "output")}


def _payload(spec: dict[str, Any], key: str, field_name: str) -> dict[str, Any]:
    """A payload-template field and whether it was present (``null`` is a value too)."""
    present = key in spec
    return {field_name: spec.get(key), f"has_{field_name}": present}


def _function_payload(spec: dict[str, Any], language: str) -> Any:
    """Where a Task names its function: Parameters, or JSONata's Arguments (whose
    FunctionName, when an expression, is only known at run time)."""
    if language == JSONPATH:
        return spec.get("Parameters")
    arguments = spec.get("Arguments")
    if isinstance(arguments, dict) and is_expression(arguments.get("FunctionName")):
        return {"FunctionName.$": arguments["FunctionName"]}
    return arguments


def state_from_asl(name: str, spec: dict[str, Any], language: str = JSONPATH) -> State:
    """Build one state's dataclass from its (already validated) ASL object;
    ``language`` is the workflow's QueryLanguage, which a state may override."""
    kind = spec["Type"]
    common = _common(name, spec, language)
    # A state's own QueryLanguage is its alone: its branches' and iterator's states
    # default to the top level's ("If the state does not contain a QueryLanguage field,
    # then it will use the query language specified in the top-level QueryLanguage").
    workflow_language, language = language, common["query_language"]
    shared = _shared(spec, language)
    io: dict[str, Any] = {"input_path": _path(spec, "InputPath"),
                          "output_path": _path(spec, "OutputPath")}
    if kind == "Pass":
        return Pass(**common, **io, **_payload(spec, "Parameters", "parameters"),
                    result=spec.get("Result"), has_result="Result" in spec,
                    result_path=_path(spec, "ResultPath"))
    if kind == "Task":
        target = task_target(spec["Resource"], _function_payload(spec, language))
        return Task(**common, **io, function=target.function, invoke_shape=target.invoke_shape,
                    integration=target.integration,
                    **_payload(spec, "Parameters", "parameters"),
                    **_payload(spec, "Arguments", "arguments"),
                    **_payload(spec, "ResultSelector", "result_selector"),
                    result_path=_path(spec, "ResultPath"),
                    timeout_seconds=spec.get("TimeoutSeconds"),
                    timeout_seconds_path=spec.get("TimeoutSecondsPath"),
                    retry=_retriers(spec), catch=_catchers(spec))
    if kind == "Choice":
        return Choice(name=name, comment=spec.get("Comment"), **shared, **io,
                      choices=tuple(spec["Choices"]), default=spec.get("Default"))
    if kind == "Wait":
        return Wait(**common, **io, seconds=spec.get("Seconds"),
                    seconds_path=spec.get("SecondsPath"), timestamp=spec.get("Timestamp"),
                    timestamp_path=spec.get("TimestampPath"))
    if kind == "Succeed":
        return Succeed(name=name, comment=spec.get("Comment"), **shared, **io)
    if kind == "Fail":
        return Fail(name=name, comment=spec.get("Comment"), **shared, error=spec.get("Error"),
                    error_path=spec.get("ErrorPath"), cause=spec.get("Cause"),
                    cause_path=spec.get("CausePath"))
    if kind == "Parallel":
        return Parallel(**common, **io,
                        branches=tuple(machine_from_asl(b, workflow_language)
                                       for b in spec["Branches"]),
                        **_payload(spec, "Parameters", "parameters"),
                        **_payload(spec, "Arguments", "arguments"),
                        **_payload(spec, "ResultSelector", "result_selector"),
                        result_path=_path(spec, "ResultPath"),
                        retry=_retriers(spec), catch=_catchers(spec))
    if kind == "Map":
        processor = spec["ItemProcessor"] if "ItemProcessor" in spec else spec["Iterator"]
        selector_key = "ItemSelector" if "ItemSelector" in spec else "Parameters"
        mode = (processor.get("ProcessorConfig") or {}).get("Mode") \
            if isinstance(processor, dict) else None
        return Map(**common, **io, iterator=machine_from_asl(processor, workflow_language),
                   distributed=mode == "DISTRIBUTED",
                   items_path=spec.get("ItemsPath", "$"), **_payload(spec, "Items", "items"),
                   **_payload(spec, selector_key, "item_selector"),
                   max_concurrency=spec.get("MaxConcurrency", 0),
                   tolerated_failure_percentage=spec.get("ToleratedFailurePercentage"),
                   tolerated_failure_count=spec.get("ToleratedFailureCount"),
                   max_concurrency_path=spec.get("MaxConcurrencyPath"),
                   tolerated_failure_percentage_path=spec.get("ToleratedFailurePercentagePath"),
                   tolerated_failure_count_path=spec.get("ToleratedFailureCountPath"),
                   **_payload(spec, "ResultSelector", "result_selector"),
                   result_path=_path(spec, "ResultPath"),
                   retry=_retriers(spec), catch=_catchers(spec))
    raise ValueError(f"state {name!r}: unknown Type {kind!r}")


def machine_from_asl(definition: dict[str, Any], language: str | None = None) -> Machine:
    """Build a machine (workflow, branch or iterator) from its validated ASL object.

    The workflow's top-level QueryLanguage is the default of every state, nested ones
    included (``language`` passes it down to branches and iterators).
    """
    if language is None:
        language = definition.get("QueryLanguage", JSONPATH)
    return Machine(
        start_at=definition["StartAt"],
        states={name: state_from_asl(name, spec, language)
                for name, spec in definition["States"].items()},
        timeout_seconds=definition.get("TimeoutSeconds"),
    )


def walk_states(machine: Machine) -> Iterator[State]:
    """Every state of a machine and of its branches and iterators, depth first."""
    for state in machine.states.values():
        yield state
        if isinstance(state, Parallel):
            for branch in state.branches:
                yield from walk_states(branch)
        elif isinstance(state, Map):
            yield from walk_states(state.iterator)
