"""Hypothesis strategies for *valid* Amazon States Language workflows and their inputs
(tests/unit/test_fuzz_workflows.py).

A workflow is a chain of states with forward transitions only (a Choice jumps ahead), so
every execution ends; Map and Parallel nest further machines. Each state type is drawn
in its JSONPath or its JSONata form -- or, in a JSONPath workflow, a state may opt into
JSONata (mixed) -- with the fields that form allows: InputPath/Parameters/ResultSelector/
ResultPath/OutputPath and intrinsic functions, or Arguments/Output/Assign and JSONata
expressions; Choice rules of every comparator, And/Or/Not; Retry and Catch; Map
concurrency and failure tolerance; arbitrary state names (any Unicode, 1-80 characters).
Values are arbitrary JSON with a bias towards the keys the paths use, so that paths hit
as often as they miss.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from deep_json import json_reads, nested

KEYS = ("a", "b", "c", "items")
FUNCTIONS = ("echo", "boom")  # test_fuzz_workflows defines them
ERRORS = ("States.ALL", "States.TaskFailed", "States.Runtime", "States.Timeout",
          "States.IntrinsicFailure", "States.QueryEvaluationError", "BoomError",
          "States.ExceedToleratedFailureThreshold", "States.BranchFailed", "Custom.Error")

# ------------------------------------------------------------------ JSON values

_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_NUMBERS = st.one_of(
    st.integers(min_value=-10, max_value=10), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1e308, -1e308, 5e-324, 2**53 + 1, 2**63, 1.5]))
SCALARS = st.one_of(st.none(), st.booleans(), _NUMBERS, _TEXT,
                    st.sampled_from(["", "2016-03-14T01:59:00Z", "a,b,c", "{}", "[1,2]",
                                     "QUJD", "1", "true", "{\"a\": 1}"]))
_KEY = st.one_of(st.sampled_from(KEYS), _TEXT)
JSON_VALUES = st.recursive(
    SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                     st.dictionaries(_KEY, inner, max_size=4)),
    max_leaves=12)


class Nested(dict):
    """A deep input that Hypothesis reports by its recipe (its printer recurses, and a
    4,000-level value is unreadable anyway). Tests pass it on through json."""

    def __init__(self, value: dict, recipe: str) -> None:
        super().__init__(value)
        self.recipe = recipe

    def __repr__(self) -> str:
        return f"{{'a': {self.recipe}, 'items': [{self.recipe}]}}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


# Past the Python stack (~1,000 frames) and the engine's recursion, within the parser's
# reach: an input json cannot read never gets to a workflow.
DEEP_LEVELS = [depth for depth in (20, 250, 1_000, 4_000) if json_reads(depth)]


@st.composite
def inputs(draw: st.DrawFn) -> Any:
    """An execution input: mostly an object with the keys paths use, sometimes anything
    (deeply nested too)."""
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(JSON_VALUES)
    if kind == 1:  # deep nesting: as deep as this Python's json reads (4,000 on 3.13)
        leaf, depth = draw(SCALARS), draw(st.sampled_from(DEEP_LEVELS))
        value = nested(depth, leaf)
        return Nested({"a": value, "items": [value]}, f"nested({depth}, {leaf!r})")
    data = {key: draw(JSON_VALUES) for key in KEYS if draw(st.booleans())}
    if draw(st.integers(0, 3)):
        data["items"] = draw(st.lists(JSON_VALUES, max_size=5))
    return data


# ------------------------------------------------------------------ JSONPath and intrinsics

PATHS = st.sampled_from(["$", "$.a", "$.b", "$.c", "$.items", "$.a.b", "$.a[0]", "$.items[0]",
                         "$.items[*]", "$..a", "$['a']", "$.items[1:]", "$.missing",
                         "$.a.b.c.d", "$.items.length()"])
CONTEXT_PATHS = st.sampled_from(["$$", "$$.State.Name", "$$.Execution.Input",
                                 "$$.State.EnteredTime", "$$.StateMachine.Name",
                                 "$$.Execution.Input.a", "$$.Task", "$$.State.RetryCount"])
REFERENCE_PATHS = st.sampled_from(["$", "$.a", "$.b", "$.c", "$.items", "$.items[0]",
                                   "$.a.b", "$.missing", "$['b']"])

INTRINSICS = {  # name: (fewest, most) arguments
    "States.Format": (1, 4), "States.StringToJson": (1, 1), "States.JsonToString": (1, 1),
    "States.Array": (0, 4), "States.ArrayPartition": (2, 2), "States.ArrayContains": (2, 2),
    "States.ArrayRange": (3, 3), "States.ArrayGetItem": (2, 2), "States.ArrayLength": (1, 1),
    "States.ArrayUnique": (1, 1), "States.Base64Encode": (1, 1), "States.Base64Decode": (1, 1),
    "States.Hash": (2, 2), "States.JsonMerge": (3, 3), "States.MathRandom": (2, 3),
    "States.MathAdd": (2, 2), "States.StringSplit": (2, 2), "States.UUID": (0, 0),
}


def _string_literal(text: str) -> str:
    escaped = "".join("\\" + ch if ch in "'{}\\" else ch for ch in text)
    return f"'{escaped}'"


_INTRINSIC_LITERALS = st.one_of(
    _TEXT.map(_string_literal),
    st.sampled_from(["'{}'", "'{} and {}'", "'SHA-256'", "'MD5'", "','", "'a,b'", "'[1,2]'",
                     "'{\"a\": 1}'", "'QUJD'", "''", "'\\''", "'\\{\\}'"]),
    st.integers(-(10**20), 10**20).map(str),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(repr)
    .filter(lambda s: "e" not in s and "inf" not in s),
    st.sampled_from(["true", "false", "null", "0", "-1", "1.5"]))


def intrinsic_calls(depth: int = 2) -> st.SearchStrategy[str]:
    argument = st.one_of(_INTRINSIC_LITERALS, REFERENCE_PATHS, CONTEXT_PATHS)
    if depth > 0:
        argument = st.one_of(argument, st.deferred(lambda: intrinsic_calls(depth - 1)))

    @st.composite
    def call(draw: st.DrawFn) -> str:
        name = draw(st.sampled_from(sorted(INTRINSICS)))
        low, high = INTRINSICS[name]
        args = draw(st.lists(argument, min_size=low, max_size=high))
        return f"{name}({', '.join(args)})"

    return call()


@st.composite
def payload_templates(draw: st.DrawFn, depth: int = 2, map_item: bool = False) -> dict:
    """A Parameters / ResultSelector / ItemSelector object (JSONPath): literal members,
    ``.$`` members holding paths, context paths or intrinsic calls, nested objects."""
    out: dict[str, Any] = {}
    for _ in range(draw(st.integers(0, 4))):
        key = draw(_KEY.filter(lambda k: not k.endswith(".$")))
        kind = draw(st.integers(0, 4))
        if kind == 0:
            out[key] = draw(JSON_VALUES)
        elif kind == 1 and depth > 0:
            out[key] = draw(payload_templates(depth - 1, map_item))
        else:
            choices = [REFERENCE_PATHS, CONTEXT_PATHS, intrinsic_calls()]
            if map_item:
                choices.append(st.sampled_from(["$$.Map.Item.Value", "$$.Map.Item.Index"]))
            out[key + ".$"] = draw(st.one_of(*choices))
    return out


# ------------------------------------------------------------------ JSONata

_JSONATA_ATOMS = st.one_of(
    st.integers(-(10**6), 10**6).map(str), st.sampled_from(["1.5", "0", "-0.5", "1e300"]),
    _TEXT.map(lambda t: json.dumps(t, ensure_ascii=False)),
    st.sampled_from(["true", "false", "null", "$states.input", "$states.input.a",
                     "$states.input.items", "$states.input.b.c", "$states.context.State.Name",
                     "$states.context.Execution.Input", "[]", "{}", "[1, 2, 3]",
                     '{"k": $states.input}', "$states.input.items[0]", "$"]))
_JSONATA_UNARY = ("$string", "$number", "$count", "$sum", "$keys", "$uppercase", "$exists",
                  "$boolean", "$not", "$length", "$abs", "$floor", "$sort", "$reverse",
                  "$distinct", "$parse", "$type")
_JSONATA_OPERATORS = ("+", "-", "*", "/", "%", "&", "=", "!=", "<", ">", "and", "or", "in")


def jsonata_expressions(depth: int = 2) -> st.SearchStrategy[str]:
    if depth == 0:
        return _JSONATA_ATOMS
    inner = st.deferred(lambda: jsonata_expressions(depth - 1))
    return st.one_of(
        _JSONATA_ATOMS,
        st.tuples(st.sampled_from(_JSONATA_UNARY), inner).map(lambda p: f"{p[0]}({p[1]})"),
        st.tuples(inner, st.sampled_from(_JSONATA_OPERATORS), inner)
        .map(lambda p: f"({p[0]} {p[1]} {p[2]})"),
        st.tuples(inner, inner, inner).map(lambda p: f"({p[0]} ? {p[1]} : {p[2]})"),
        st.tuples(inner, inner).map(lambda p: f"$join([$string({p[0]}), $string({p[1]})], ',')"),
        st.tuples(inner, inner, st.integers(-3, 5))
        .map(lambda p: f"$range({p[2]}, {p[2]} + 2)"),
        st.tuples(inner, st.sampled_from(["SHA-256", "MD5", "SHA-1"]))
        .map(lambda p: f"$hash($string({p[0]}), '{p[1]}')"),
        st.just("$uuid()"), st.just("$random()"), st.just("$partition([1,2,3,4,5], 2)"),
    )


def jsonata(depth: int = 2) -> st.SearchStrategy[str]:
    return jsonata_expressions(depth).map(lambda e: "{% " + e + " %}")


@st.composite
def jsonata_values(draw: st.DrawFn, depth: int = 1) -> Any:
    """A JSONata field's value: an expression, or JSON with expressions in its strings."""
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(JSON_VALUES)
    if kind == 1 and depth > 0:
        return {draw(_KEY): draw(jsonata_values(depth - 1)) for _ in range(draw(st.integers(0, 3)))}
    return draw(jsonata())


def jsonata_objects() -> st.SearchStrategy[Any]:
    """Arguments, ItemSelector: an object (expressions in it) or an expression."""
    return st.one_of(jsonata(), st.dictionaries(_KEY, jsonata_values(), max_size=3))


# ------------------------------------------------------------------ states

STATE_NAMES = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=80)
VARIABLE_NAMES = st.sampled_from(["v", "count", "x_1"])


@st.composite
def assign(draw: st.DrawFn, jsonata_mode: bool) -> dict:
    out = {}
    for name in draw(st.lists(VARIABLE_NAMES, max_size=2, unique=True)):
        if jsonata_mode:
            out[name] = draw(jsonata_values())
        elif draw(st.booleans()):
            out[name + ".$"] = draw(st.one_of(REFERENCE_PATHS, intrinsic_calls(1)))
        else:
            out[name] = draw(JSON_VALUES)
    return out


def _maybe(draw: st.DrawFn, state: dict, field: str, strategy: st.SearchStrategy) -> None:
    if draw(st.booleans()):
        state[field] = draw(strategy)


@st.composite
def retriers(draw: st.DrawFn) -> list[dict]:
    out = []
    for _ in range(draw(st.integers(0, 2))):
        retrier: dict[str, Any] = {"ErrorEquals": draw(st.lists(
            st.sampled_from(ERRORS[1:]), min_size=1, max_size=2, unique=True))}
        _maybe(draw, retrier, "MaxAttempts", st.integers(0, 2))
        _maybe(draw, retrier, "IntervalSeconds", st.integers(1, 3))
        _maybe(draw, retrier, "BackoffRate", st.sampled_from([1, 1.5, 2.0]))
        _maybe(draw, retrier, "MaxDelaySeconds", st.integers(1, 5))
        _maybe(draw, retrier, "JitterStrategy", st.sampled_from(["FULL", "NONE"]))
        out.append(retrier)
    if draw(st.booleans()):
        out.append({"ErrorEquals": ["States.ALL"], "MaxAttempts": draw(st.integers(0, 2))})
    return out


@st.composite
def catchers(draw: st.DrawFn, targets: list[str], jsonata_mode: bool) -> list[dict]:
    if not targets:
        return []
    out = []
    for _ in range(draw(st.integers(0, 2))):
        catcher: dict[str, Any] = {"ErrorEquals": draw(st.lists(
            st.sampled_from(ERRORS[1:]), min_size=1, max_size=2, unique=True)),
            "Next": draw(st.sampled_from(targets))}
        if jsonata_mode:
            _maybe(draw, catcher, "Output", st.one_of(jsonata_values(), st.sampled_from([
                "{% $states.errorOutput %}", "{% $states.errorOutput.Cause %}",
                '{% $merge([$states.input, {"e": $states.errorOutput}]) %}'])))
        else:
            _maybe(draw, catcher, "ResultPath", st.sampled_from(["$", "$.error", "$.a.b", None]))
        _maybe(draw, catcher, "Assign", assign(jsonata_mode))
        out.append(catcher)
    if draw(st.booleans()):
        out.append({"ErrorEquals": ["States.ALL"], "Next": draw(st.sampled_from(targets))})
    return out


def _io_jsonpath(draw: st.DrawFn, state: dict, result_fields: bool) -> None:
    _maybe(draw, state, "InputPath", st.one_of(PATHS, st.none()))
    _maybe(draw, state, "OutputPath", st.one_of(PATHS, st.none()))
    if result_fields:
        _maybe(draw, state, "ResultPath", st.one_of(
            st.sampled_from(["$", "$.a", "$.result", "$.a.b", "$.items[0]"]), st.none()))


# Choice rules (JSONPath)
_COMPARATORS = {
    "StringEquals": _TEXT, "StringLessThan": _TEXT, "StringGreaterThanEquals": _TEXT,
    "StringMatches": st.sampled_from(["*", "a*", "*b*", "\\*", "x\\\\y*", ""]),
    "NumericEquals": _NUMBERS, "NumericLessThan": _NUMBERS, "NumericGreaterThanEquals": _NUMBERS,
    "BooleanEquals": st.booleans(),
    "TimestampEquals": st.sampled_from(["2016-03-14T01:59:00Z", "2016-03-14T01:59:00.123Z",
                                        "2024-01-01T00:00:00+01:00"]),
    "TimestampLessThan": st.sampled_from(["2016-03-14T01:59:00Z"]),
    "IsNull": st.booleans(), "IsPresent": st.booleans(), "IsNumeric": st.booleans(),
    "IsString": st.booleans(), "IsBoolean": st.booleans(), "IsTimestamp": st.booleans(),
}
_PATH_COMPARATORS = ("StringEqualsPath", "NumericLessThanPath", "BooleanEqualsPath",
                     "TimestampGreaterThanPath", "NumericEqualsPath", "StringLessThanEqualsPath")


def choice_rules(depth: int = 2) -> st.SearchStrategy[dict]:
    @st.composite
    def comparison(draw: st.DrawFn) -> dict:
        variable = draw(st.one_of(REFERENCE_PATHS,
                                  st.sampled_from(["$v", "$count", "$$.State.Name"])))
        if draw(st.integers(0, 4)) == 0:
            return {"Variable": variable, draw(st.sampled_from(_PATH_COMPARATORS)):
                    draw(REFERENCE_PATHS)}
        operator = draw(st.sampled_from(sorted(_COMPARATORS)))
        return {"Variable": variable, operator: draw(_COMPARATORS[operator])}

    if depth == 0:
        return comparison()
    inner = st.deferred(lambda: choice_rules(depth - 1))
    return st.one_of(
        comparison(),
        st.lists(inner, min_size=1, max_size=3).map(lambda rules: {"And": rules}),
        st.lists(inner, min_size=1, max_size=3).map(lambda rules: {"Or": rules}),
        inner.map(lambda rule: {"Not": rule}))


@st.composite
def states(draw: st.DrawFn, kind: str, targets: list[str], jsonata_mode: bool, depth: int,
           machine_jsonata: bool) -> dict:
    """One state of type ``kind`` that goes on to one of ``targets`` (empty: it ends);
    its own fields in JSONata when ``jsonata_mode``, its nested machines' states in the
    workflow's language, ``machine_jsonata``."""
    state: dict[str, Any] = {"Type": kind}
    if draw(st.integers(0, 5)) == 0:
        state["Comment"] = draw(_TEXT)
    ends = kind in ("Succeed", "Fail")
    if kind == "Choice":
        if jsonata_mode:
            rules = [{"Condition": draw(jsonata())} for _ in range(draw(st.integers(1, 3)))]
        else:
            rules = draw(st.lists(choice_rules(), min_size=1, max_size=3))
        for rule in rules:
            rule["Next"] = draw(st.sampled_from(targets))
            if draw(st.integers(0, 3)) == 0:
                rule["Assign"] = draw(assign(jsonata_mode))
            if jsonata_mode and draw(st.integers(0, 3)) == 0:
                rule["Output"] = draw(jsonata_values())
        state["Choices"] = rules
        if draw(st.booleans()):
            state["Default"] = draw(st.sampled_from(targets))
        if "Default" not in state:
            state["Default"] = targets[0]
        elif targets[0] not in [rule["Next"] for rule in rules]:
            rules[0]["Next"] = targets[0]
    elif not ends:
        if targets:
            state["Next"] = targets[0]
        else:
            state["End"] = True
    if (kind in ("Pass", "Task", "Parallel", "Map", "Wait", "Choice")
            and draw(st.integers(0, 3)) == 0):
        state["Assign"] = draw(assign(jsonata_mode))

    if jsonata_mode:
        if kind not in ("Choice", "Fail") and draw(st.booleans()):
            state["Output"] = draw(jsonata_values())
            if kind in ("Task", "Parallel", "Map") and draw(st.booleans()):
                state["Output"] = draw(st.sampled_from([
                    "{% $states.result %}", "{% $states.result.a %}",
                    '{% {"in": $states.input, "out": $states.result} %}',
                    "{% $count($states.result) %}"]))
        if kind in ("Task", "Parallel") and draw(st.booleans()):
            state["Arguments"] = draw(jsonata_objects())
    elif kind != "Fail":
        _io_jsonpath(draw, state, result_fields=kind in ("Pass", "Task", "Parallel", "Map"))
        if kind in ("Task", "Parallel", "Map") and draw(st.booleans()):
            state["ResultSelector"] = draw(payload_templates())
        if kind in ("Task", "Pass", "Parallel") and draw(st.booleans()):
            state["Parameters"] = draw(payload_templates())

    if kind == "Pass" and not jsonata_mode and draw(st.booleans()):
        state["Result"] = draw(JSON_VALUES)
    elif kind == "Task":
        state["Resource"] = draw(st.sampled_from(FUNCTIONS))
        if draw(st.integers(0, 3)) == 0:
            if jsonata_mode or draw(st.booleans()):
                state["TimeoutSeconds"] = draw(st.integers(1, 99999999))
            else:
                state["TimeoutSecondsPath"] = draw(REFERENCE_PATHS)
    elif kind == "Wait":
        field = draw(st.sampled_from(["Seconds", "Timestamp"] if jsonata_mode else
                                     ["Seconds", "Timestamp", "SecondsPath", "TimestampPath"]))
        if field == "Seconds":
            state[field] = draw(st.one_of(st.integers(0, 2), jsonata()) if jsonata_mode
                                else st.integers(0, 2))
        elif field == "Timestamp":
            state[field] = draw(st.one_of(st.sampled_from(["2016-03-14T01:59:00Z",
                                                           "2020-01-01T00:00:00.5+02:00"]),
                                          *([jsonata()] if jsonata_mode else [])))
        else:
            state[field] = draw(REFERENCE_PATHS)
    elif kind == "Fail":
        if jsonata_mode:
            _maybe(draw, state, "Error", st.one_of(_TEXT, jsonata()))
            _maybe(draw, state, "Cause", st.one_of(_TEXT, jsonata()))
        else:
            if draw(st.booleans()):
                _maybe(draw, state, "Error", _TEXT)
            else:
                _maybe(draw, state, "ErrorPath", st.one_of(REFERENCE_PATHS, intrinsic_calls(1)))
            if draw(st.booleans()):
                _maybe(draw, state, "Cause", _TEXT)
            else:
                _maybe(draw, state, "CausePath", st.one_of(REFERENCE_PATHS, intrinsic_calls(1)))
    elif kind == "Parallel":
        state["Branches"] = [draw(machines(depth - 1, machine_jsonata))
                             for _ in range(draw(st.integers(1, 3)))]
    elif kind == "Map":
        processor = draw(machines(depth - 1, machine_jsonata))
        if draw(st.integers(0, 4)):
            processor["ProcessorConfig"] = {"Mode": "INLINE"}
        if draw(st.integers(0, 5)):
            state["ItemProcessor"] = processor
        else:
            state["Iterator"] = processor
        if jsonata_mode:
            _maybe(draw, state, "Items", st.one_of(
                st.lists(JSON_VALUES, max_size=4), jsonata(),
                st.just("{% $states.input.items %}")))
            _maybe(draw, state, "ItemSelector", jsonata_objects())
            _maybe(draw, state, "MaxConcurrency", st.one_of(st.integers(0, 3), jsonata(1)))
        else:
            _maybe(draw, state, "ItemsPath", st.sampled_from(["$.items", "$", "$.a", "$.missing"]))
            if draw(st.booleans()):
                state["ItemSelector" if draw(st.booleans()) else "Parameters"] = draw(
                    payload_templates(map_item=True))
            if draw(st.booleans()):
                _maybe(draw, state, "MaxConcurrency", st.integers(0, 3))
            else:
                _maybe(draw, state, "MaxConcurrencyPath", REFERENCE_PATHS)
        if draw(st.booleans()):
            _maybe(draw, state, "ToleratedFailureCount", st.integers(0, 3))
        else:
            _maybe(draw, state, "ToleratedFailureCountPath", REFERENCE_PATHS)
        if draw(st.booleans()):
            _maybe(draw, state, "ToleratedFailurePercentage",
                   st.one_of(st.integers(0, 100), st.floats(0, 100)))
        else:
            _maybe(draw, state, "ToleratedFailurePercentagePath", REFERENCE_PATHS)
        if jsonata_mode:
            for field in ("ToleratedFailureCountPath", "ToleratedFailurePercentagePath",
                          "MaxConcurrencyPath"):
                state.pop(field, None)
    if kind in ("Task", "Parallel", "Map"):
        if draw(st.booleans()):
            state["Retry"] = draw(retriers())
        if draw(st.booleans()):
            state["Catch"] = draw(catchers(targets, jsonata_mode))
    return state


STATE_TYPES = ("Pass", "Task", "Choice", "Wait", "Succeed", "Fail", "Parallel", "Map")


@st.composite
def machines(draw: st.DrawFn, depth: int = 2, jsonata_mode: bool = False) -> dict:
    """A (sub-)machine: 1-5 states chained forward; Parallel and Map only while depth > 0."""
    names = draw(st.lists(STATE_NAMES, min_size=1, max_size=5, unique=True))
    kinds = STATE_TYPES if depth > 0 else STATE_TYPES[:6]
    out: dict[str, Any] = {"StartAt": names[0], "States": {}}
    for index, name in enumerate(names):
        # Each state goes on to the next one (and maybe further ahead): all are reachable.
        targets = names[index + 1:]
        allowed = [k for k in kinds if (k != "Choice" if not targets else
                                        k not in ("Succeed", "Fail"))]
        kind = draw(st.sampled_from(allowed))
        state_jsonata = jsonata_mode
        if not jsonata_mode and draw(st.integers(0, 5)) == 0:  # mixed: a JSONata state
            state_jsonata = True
        state = draw(states(kind, targets, state_jsonata, depth, jsonata_mode))
        if state_jsonata and not jsonata_mode:
            state["QueryLanguage"] = "JSONata"
        out["States"][name] = state
    return out


@st.composite
def workflows(draw: st.DrawFn) -> dict:
    """A whole definition: JSONPath (with some JSONata states) or JSONata throughout."""
    jsonata_mode = draw(st.booleans())
    definition = draw(machines(2, jsonata_mode))
    if jsonata_mode:
        definition["QueryLanguage"] = "JSONata"
    elif draw(st.booleans()):
        definition["QueryLanguage"] = "JSONPath"
    return definition
