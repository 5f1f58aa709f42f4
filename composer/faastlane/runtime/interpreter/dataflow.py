"""One state's data flow, in its query language: input, output, Assign and Catch.

Step Functions gives each state one of two pipelines (developer guide, "Processing input
and output in Step Functions" and "Transforming data with JSONata in Step Functions"):

    JSONPath:  InputPath -> Parameters -> (work) -> ResultSelector -> ResultPath -> OutputPath
    JSONata:   Arguments -> (work) -> Output            (expressions read $states, $name)

and both may ``Assign`` variables ("Passing data between states with variables"). The
state executors (``states.py``) do the work in between; a :class:`DataFlow`, made when a
state (or one attempt of it) starts, does the rest. It captures the variables as the
state was entered: every path, expression and Assign of the state reads those values,
and the state's own assignments are stored only when it has computed its output.

Assign reads, in a JSONPath state, ``$`` as the state's result before ResultSelector
(Pass: its Result or effective input; Choice, Wait: the effective input; a Catcher: the
``{"Error", "Cause"}`` error output); in a JSONata state, ``$states.result`` and
``$states.errorOutput``. A matching Choice rule's Assign and Output replace the state's,
which apply when the Default is taken; a Catcher's replace the state's when it catches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..asl import choice, input_output, jsonpath
from ..asl.errors import QUERY_EVALUATION_ERROR, StatesError
from ..asl.jsonata import evaluate_field, is_expression, states_variable
from ..asl.jsonvalue import compact_json
from ..asl.model import JSONATA, Catcher, Map, Parallel, Pass, State, Task

if TYPE_CHECKING:
    from ..engine.execution import Execution

# States whose work produces a result ($states.result; JSONPath ResultSelector).
_RESULT_STATES = (Task, Parallel, Map)
_ARGUMENTS_STATES = (Task, Parallel)  # those with Arguments
_PARAMETERS_STATES = (Pass, Task, Parallel)  # those with Parameters


class DataFlow:
    """The data-expression side of one state (or one attempt of a retried state)."""

    __slots__ = ("state", "data", "execution", "entered", "retry_count", "_context",
                 "variables", "jsonata")

    def __init__(self, state: State, data: Any, execution: Execution, entered: float,
                 retry_count: int = 0) -> None:
        self.state = state
        self.data = data  # the state's raw input ($states.input)
        self.execution = execution
        self.entered = entered  # time.time() when the state was entered
        self.retry_count = retry_count
        self._context: dict[str, Any] | None = None
        self.variables = execution.variables.view  # as entered; assignments make a new view
        self.jsonata = state.query_language == JSONATA

    @property
    def context(self) -> dict[str, Any]:
        """The ``$$`` object, made on first use: most states never read it, and its
        EnteredTime costs a formatted date (a few us of every hand-off)."""
        if self._context is None:
            retry_count = self.retry_count if isinstance(self.state, Task) else None
            self._context = self.execution.context(self.state.name, self.entered,
                                                   retry_count)
        return self._context

    # ---------------------------------------------------------------- reading values

    def evaluate(self, value: Any, field: str, context: dict[str, Any] | None = None,
                 **states: Any) -> Any:
        """A JSONata field's value; ``states`` adds ``result=`` or ``error_output=``."""
        bound = states_variable(self.data, self.context if context is None else context,
                                **states)
        try:
            return evaluate_field(value, field, bound, self.variables)
        except StatesError as err:
            located(err, field)
            raise

    def read(self, source: Any, path: str) -> Any:
        """A JSONPath path field (``$.x``, ``$$.x`` or a variable ``$name``)."""
        return jsonpath.read(source, path, self.context, self.variables)

    def template(self, template: Any, source: Any, context: dict[str, Any] | None = None
                 ) -> Any:
        """A JSONPath payload template (Parameters, ItemSelector, ...) over ``source``."""
        return input_output.apply_template(template, source,
                                    self.context if context is None else context,
                                    self.variables)

    def number(self, value: Any, field: str, minimum: int) -> Any:
        """A number field that a JSONata state may write as an expression: its value,
        which must then be an integer of at least ``minimum``."""
        if not (self.jsonata and is_expression(value)):
            return value
        result = self.evaluate(value, field)
        if not isinstance(result, int) or isinstance(result, bool) or result < minimum:
            raise StatesError(QUERY_EVALUATION_ERROR,
                              f"The JSONata expression '{value}' specified for the field "
                              f"'{field}' must return an integer of at least {minimum}, "
                              f"got {compact_json(result)}")
        return result

    # ---------------------------------------------------------------- the pipeline

    def effective_input(self) -> Any:
        """What the state works on: InputPath and Parameters, or Arguments."""
        state = self.state
        if self.jsonata:
            if isinstance(state, _ARGUMENTS_STATES) and state.has_arguments:
                return self.evaluate(state.arguments, "Arguments")
            return self.data
        # "$" (the default) without making the context object, as below for OutputPath.
        input_path = getattr(state, "input_path", "$")
        effective = self.data if input_path == "$" else input_output.apply_input_path(
            self.data, input_path, self.context, self.variables)
        if isinstance(state, _PARAMETERS_STATES) and state.has_parameters:
            effective = self.template(state.parameters, effective)
        return effective

    def finish(self, value: Any, rule: dict[str, Any] | None = None) -> Any:
        """The state's output from ``value`` (its result, or its effective input for
        Choice and Wait), and its Assign stored. ``rule``: the matching Choice rule."""
        state = self.state
        assign, output, has_output = state.assign, state.output, state.has_output
        if rule is not None:
            assign, output, has_output = rule.get("Assign"), rule.get("Output"), "Output" in rule
        if self.jsonata:
            result = {"result": value} if isinstance(state, _RESULT_STATES) else {}
            if has_output:
                value = self.evaluate(output, "Output", **result)
            assigned = self.evaluate(assign, "Assign", **result) if assign is not None else None
        else:
            assigned = self.template(assign, value) if assign is not None else None
            if isinstance(state, _RESULT_STATES) and state.has_result_selector:
                value = self.template(state.result_selector, value)
            if hasattr(state, "result_path"):
                value = input_output.apply_result_path(self.data, value, state.result_path)
            output_path = getattr(state, "output_path", "$")
            if output_path != "$":
                value = input_output.apply_output_path(value, output_path, self.context,
                                                self.variables)
        self._store(assigned)
        return value

    def caught(self, catcher: Catcher, error: StatesError) -> Any:
        """The output of a state whose error ``catcher`` caught; its Assign stored."""
        error_output = error.to_json()
        if self.jsonata:
            output = (self.evaluate(catcher.output, "Output", error_output=error_output)
                      if catcher.has_output else error_output)
            assigned = (self.evaluate(catcher.assign, "Assign", error_output=error_output)
                        if catcher.assign is not None else None)
        else:
            assigned = (self.template(catcher.assign, error_output)
                        if catcher.assign is not None else None)
            output = input_output.apply_result_path(self.data, error_output, catcher.result_path)
        self._store(assigned)
        return output

    def choose(self, choices: tuple[dict[str, Any], ...], default: str | None, effective: Any
               ) -> tuple[dict[str, Any] | None, str]:
        """The first matching Choice rule and its Next, or ``(None, Default)``."""
        for rule in choices:
            if self._matches(rule, effective):
                return rule, str(rule["Next"])
        if default is not None:
            return None, default
        raise choice.no_choice_matched(self.context)

    def _matches(self, rule: dict[str, Any], effective: Any) -> bool:
        if not self.jsonata:
            return choice.evaluate_rule(rule, effective, self.context, self.variables)
        condition = rule["Condition"]
        value = self.evaluate(condition, "Condition") if is_expression(condition) else condition
        if not isinstance(value, bool):
            raise StatesError(QUERY_EVALUATION_ERROR,
                              f"The Condition '{condition}' of Choice state "
                              f"'{self.state.name}' must return a boolean, got "
                              f"{compact_json(value)}")
        return value

    def _store(self, assigned: dict[str, Any] | None) -> None:
        if assigned:
            self.execution.variables.assign(assigned, self.state.name)
            if self.execution.events is not None:  # the state's exit event shows them
                self.execution.assigned = assigned


def located(err: StatesError, field: str) -> StatesError:
    """``err`` remembering the field whose evaluation failed, the first one named (an
    EvaluationFailed event's ``location``)."""
    if getattr(err, "location", None) is None:
        err.location = field
    return err
