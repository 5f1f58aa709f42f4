"""ASL paths (JSONPath as Step Functions evaluates it): parsing and evaluation.

Step Functions paths "follow JsonPath syntax" and are evaluated by Jayway JsonPath, so
this module follows Jayway's semantics where the ASL documentation is silent:

- a *definite* path (only single names and single indexes) yields one node, and a
  definite path that matches nothing is an error ("No results for path: $['x']");
- an *indefinite* path (``*``, ``..``, filters, slices, unions) yields the list of
  everything it matched, ``[]`` when nothing matched;
- a trailing function (``$.items.length()``) is applied to that result.

A *Reference Path* (ResultPath, and wherever the validator wants one) "can identify only
a single node": only dot and bracket names and indexes, no ``@ .. , : ? *``, no functions.

Paths are compiled once and cached: they are evaluated on every state transition.

The fields that use paths to process a state's input and output are in
:mod:`input_output`.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeGuard

from .jsonvalue import compact_json, json_type


class PathSyntaxError(ValueError):
    """A path that Step Functions would reject; the message says what and where."""


class PathNotFound(LookupError):
    """A definite path matched nothing; the message is Jayway's, as AWS quotes it."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path  # the path as written, e.g. "$.a.b"


# --------------------------------------------------------------------------------------
# Compiled form
# --------------------------------------------------------------------------------------

# One step of a compiled path is a tuple whose first item says what it does.
NAME = "name"  # (NAME, key)
INDEX = "index"  # (INDEX, i)             i may be negative: counts from the end
NAMES = "names"  # (NAMES, (k1, k2, ...))  union of names
INDEXES = "indexes"  # (INDEXES, (i, j, ...))
WILDCARD = "wildcard"  # (WILDCARD,)
SLICE = "slice"  # (SLICE, start|None, stop|None)
FILTER = "filter"  # (FILTER, predicate, text)
SCAN = "scan"  # (SCAN, step)            ``..`` followed by one step

Step = tuple[Any, ...]


@dataclass(frozen=True)
class CompiledPath:
    """A parsed path, ready to evaluate many times."""

    text: str
    context: bool  # rooted at ``$$`` (the context object) rather than ``$``
    steps: tuple[Step, ...]
    definite: bool
    function: str | None  # trailing ``.name()``, applied to the result
    variable: str | None = None  # rooted at a workflow variable: ``$name...``

    @property
    def jayway(self) -> str:
        """The path in Jayway's normalised notation, as AWS quotes it in causes."""
        return _render(self.steps, len(self.steps)) + (
            f".{self.function}()" if self.function else ""
        )


def _render(steps: tuple[Step, ...], upto: int) -> str:
    out = ["$"]
    for step in steps[:upto]:
        out.append(_render_step(step))
    return "".join(out)


def _render_step(step: Step) -> str:
    kind = step[0]
    if kind == NAME:
        return f"['{step[1]}']"
    if kind == INDEX:
        return f"[{step[1]}]"
    if kind == NAMES:
        return "[" + ",".join(f"'{k}'" for k in step[1]) + "]"
    if kind == INDEXES:
        return "[" + ",".join(str(i) for i in step[1]) + "]"
    if kind == WILDCARD:
        return "[*]"
    if kind == SLICE:
        start = "" if step[1] is None else str(step[1])
        stop = "" if step[2] is None else str(step[2])
        return f"[{start}:{stop}]"
    if kind == FILTER:
        return "[?]"
    return ".." + _render_step(step[1])  # SCAN


# --------------------------------------------------------------------------------------
# Parser
# --------------------------------------------------------------------------------------

# Jayway's path functions that take no argument; "Functions such as length()" are named
# by the Step Functions Paths page as Path-only (not allowed in Reference Paths).
_FUNCTIONS = ("length", "min", "max", "avg", "stddev", "sum", "keys", "first", "last")

# Characters that end a dot-notation name. Inside a filter, operators end it too.
_NAME_END = frozenset(".[()")
_FILTER_NAME_END = frozenset(".[() \t=!<>&|,]")


class _Parser:
    """Recursive-descent parser over one path string (and the filters inside it)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    # -- helpers -----------------------------------------------------------------------
    def error(self, what: str, pos: int | None = None) -> PathSyntaxError:
        at = self.pos if pos is None else pos
        return PathSyntaxError(f"Invalid path '{self.text}': {what} at position {at}")

    def peek(self, n: int = 1) -> str:
        return self.text[self.pos : self.pos + n]

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def skip_spaces(self) -> None:
        while not self.at_end() and self.text[self.pos] in " \t":
            self.pos += 1

    def expect(self, token: str) -> None:
        if not self.text.startswith(token, self.pos):
            found = self.peek() or "end of path"
            raise self.error(f"expected '{token}' but found '{found}'")
        self.pos += len(token)

    # -- paths -------------------------------------------------------------------------
    def path(self) -> CompiledPath:
        if not self.text.startswith("$"):
            raise self.error("a path must start with '$'", 0)
        context = self.text.startswith("$$")
        self.pos = 2 if context else 1
        variable = None
        match = _VARIABLE.match(self.text, self.pos)
        if match and not context:
            variable = match.group()
            self.pos = match.end()
        steps, function = self.steps(_NAME_END)
        if not self.at_end():
            raise self.error(f"unexpected '{self.peek()}'")
        return CompiledPath(
            self.text, context, steps, _is_definite(steps), function, variable
        )

    def steps(self, name_end: frozenset[str]) -> tuple[tuple[Step, ...], str | None]:
        """Steps after a root, up to the end or the first character that cannot continue."""
        steps: list[Step] = []
        while not self.at_end():
            char = self.text[self.pos]
            if self.text.startswith("..", self.pos):
                self.pos += 2
                if self.peek() == "[":
                    steps.append((SCAN, self.bracket()))
                elif self.peek() == "*":
                    self.pos += 1
                    steps.append((SCAN, (WILDCARD,)))
                else:
                    steps.append((SCAN, (NAME, self.name(name_end))))
            elif char == ".":
                self.pos += 1
                if self.peek() == "*":
                    self.pos += 1
                    steps.append((WILDCARD,))
                    continue
                start = self.pos
                name = self.name(name_end)
                if self.peek() == "(":
                    return tuple(steps), self.function(name, start)
                steps.append((NAME, name))
            elif char == "[":
                steps.append(self.bracket())
            else:
                break
        return tuple(steps), None

    def name(self, name_end: frozenset[str]) -> str:
        start = self.pos
        while not self.at_end() and self.text[self.pos] not in name_end:
            self.pos += 1
        if self.pos == start:
            raise self.error("missing property name")
        return self.text[start : self.pos]

    def function(self, name: str, start: int) -> str:
        if name not in _FUNCTIONS:
            raise self.error(f"unknown function '{name}()'", start)
        self.expect("()")
        if not self.at_end() and self.text[self.pos] not in " \t)=!<>&|,]":
            raise self.error(f"function '{name}()' must end the path")
        return name

    def bracket(self) -> Step:
        self.expect("[")
        self.skip_spaces()
        char = self.peek()
        if char in ("'", '"'):
            names = [self.quoted()]
            self.skip_spaces()
            while self.peek() == ",":
                self.pos += 1
                self.skip_spaces()
                names.append(self.quoted())
                self.skip_spaces()
            self.expect("]")
            return (NAME, names[0]) if len(names) == 1 else (NAMES, tuple(names))
        if char == "*":
            self.pos += 1
            self.skip_spaces()
            self.expect("]")
            return (WILDCARD,)
        if char == "?":
            start = self.pos
            self.pos += 1
            self.skip_spaces()
            self.expect("(")
            predicate = self.filter_or()
            self.skip_spaces()
            self.expect(")")
            text = self.text[start : self.pos]
            self.skip_spaces()
            self.expect("]")
            return (FILTER, predicate, text)
        return self.indexes_or_slice()

    def indexes_or_slice(self) -> Step:
        first = self.maybe_integer()
        self.skip_spaces()
        if self.peek() == ":":
            self.pos += 1
            self.skip_spaces()
            stop = self.maybe_integer()
            self.skip_spaces()
            self.expect("]")
            return (SLICE, first, stop)
        if first is None:
            raise self.error(f"unexpected '{self.peek() or 'end of path'}' in brackets")
        indexes = [first]
        while self.peek() == ",":
            self.pos += 1
            self.skip_spaces()
            indexes.append(self.integer())
            self.skip_spaces()
        self.expect("]")
        return (INDEX, first) if len(indexes) == 1 else (INDEXES, tuple(indexes))

    def integer(self) -> int:
        value = self.maybe_integer()
        if value is None:
            raise self.error("expected an integer")
        return value

    def maybe_integer(self) -> int | None:
        match = _INTEGER.match(self.text, self.pos)
        if not match:
            return None
        self.pos = match.end()
        return int(match.group())

    def quoted(self) -> str:
        quote = self.peek()
        if quote not in ("'", '"'):
            raise self.error("expected a quoted name")
        self.pos += 1
        out = []
        while True:
            if self.at_end():
                raise self.error("unterminated quoted name")
            char = self.text[self.pos]
            if char == "\\" and self.pos + 1 < len(self.text):
                # A backslash escapes the quote and itself; before any other character
                # AWS keeps it: $['Test\""Name"'] names the key Test\""Name" (LocalStack's
                # recorded test_escape_sequence_parsing[ESCAPE_SEQUENCES_JSONPATH]).
                escaped = self.text[self.pos + 1]
                if escaped not in (quote, "\\"):
                    out.append(char)
                out.append(escaped)
                self.pos += 2
            elif char == quote:
                self.pos += 1
                return "".join(out)
            else:
                out.append(char)
                self.pos += 1

    # -- filters: [?( ... )] -----------------------------------------------------------
    def filter_or(self) -> _Predicate:
        left = self.filter_and()
        while True:
            self.skip_spaces()
            if not self.text.startswith("||", self.pos):
                return left
            self.pos += 2
            right = self.filter_and()
            left = _either(left, right)

    def filter_and(self) -> _Predicate:
        left = self.filter_unary()
        while True:
            self.skip_spaces()
            if not self.text.startswith("&&", self.pos):
                return left
            self.pos += 2
            right = self.filter_unary()
            left = _both(left, right)

    def filter_unary(self) -> _Predicate:
        self.skip_spaces()
        if self.peek() == "!" and self.peek(2) != "!=":
            self.pos += 1
            inner = self.filter_unary()
            return lambda node, root: not inner(node, root)
        if self.peek() == "(":
            self.pos += 1
            inner = self.filter_or()
            self.skip_spaces()
            self.expect(")")
            return inner
        return self.comparison()

    def comparison(self) -> _Predicate:
        left = self.operand()
        self.skip_spaces()
        match = _FILTER_OPERATOR.match(self.text, self.pos)
        if not match:
            if left[0] != "path":
                raise self.error("a filter needs a path or a comparison")
            return _exists(left)
        operator = match.group(1)
        self.pos = match.end()
        self.skip_spaces()
        right = self.regex() if operator == "=~" else self.operand()
        return _compare(operator, left, right)

    def operand(self) -> _Operand:
        self.skip_spaces()
        char = self.peek()
        if char in ("@", "$"):
            start = self.pos
            self.pos += 1
            steps, function = self.steps(_FILTER_NAME_END)
            rooted = "$" + self.text[start + 1 : self.pos]
            compiled = CompiledPath(rooted, False, steps, _is_definite(steps), function)
            return ("path", char == "$", compiled)
        if char in ("'", '"'):
            return ("value", self.quoted())
        if char == "[":
            self.pos += 1
            items: list[Any] = []
            self.skip_spaces()
            while self.peek() != "]":
                item = self.operand()
                if item[0] != "value":
                    raise self.error("a list in a filter holds only literals")
                items.append(item[1])
                self.skip_spaces()
                if self.peek() == ",":
                    self.pos += 1
                    self.skip_spaces()
                elif self.peek() != "]":
                    raise self.error("expected ',' or ']' in a list")
            self.pos += 1
            return ("value", items)
        match = _FILTER_LITERAL.match(self.text, self.pos)
        if not match:
            raise self.error(f"unexpected '{char or 'end of path'}' in a filter")
        self.pos = match.end()
        return ("value", json.loads(match.group()))

    def regex(self) -> _Operand:
        match = _FILTER_REGEX.match(self.text, self.pos)
        if not match:
            raise self.error("expected a regular expression /.../ after '=~'")
        self.pos = match.end()
        flags = re.IGNORECASE if "i" in match.group(2) else 0
        try:
            return ("regex", re.compile(match.group(1).replace("\\/", "/"), flags))
        except re.error as exc:
            raise self.error(f"bad regular expression ({exc})") from None


_Predicate = Callable[[Any, Any], bool]
_Operand = tuple[Any, ...]  # ("path", rooted_at_$, CompiledPath) | ("value", v) | ("regex", re)

_INTEGER = re.compile(r"-?\d+")
# Workflow variables are read in JSONPath states as "$name" or "$name.field"; a name
# starts with a letter or underscore (Step Functions, "Passing data between states with
# variables").
_VARIABLE = re.compile(r"[^\W\d]\w*")
_FILTER_OPERATOR = re.compile(
    r"(==|!=|<=|>=|<|>|=~|(?:nin|in|subsetof|anyof|noneof|size|empty)(?![A-Za-z0-9_]))"
)
_FILTER_LITERAL = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true\b|false\b|null\b")
_FILTER_REGEX = re.compile(r"/((?:\\.|[^/\\])*)/([a-z]*)")
# Reference Paths: "You can access object fields using only dot (.) and square bracket
# ([ ]) notation"; "The operators @ .. , : ? * aren't supported"; "Functions such as
# length() aren't supported" (Step Functions developer guide, "Paths").
_REFERENCE_STEPS = frozenset({NAME, INDEX})


def _is_definite(steps: tuple[Step, ...]) -> bool:
    return all(step[0] in _REFERENCE_STEPS for step in steps)


@lru_cache(maxsize=4096)
def compile_path(text: str) -> CompiledPath:
    """Parse ``text`` once; raises :class:`PathSyntaxError`. Cached."""
    if not isinstance(text, str):
        raise PathSyntaxError(f"A path must be a string, not {json_type(text)}")
    return _Parser(text).path()


def check_path(text: str) -> None:
    """Accept any path Step Functions accepts where a Path is allowed, else raise."""
    compile_path(text)


def check_reference_path(text: str) -> None:
    """Accept only a Reference Path: one that identifies a single node."""
    compiled = compile_path(text)
    if compiled.function:
        raise PathSyntaxError(
            f"Invalid reference path '{text}': functions such as "
            f"{compiled.function}() are not allowed"
        )
    for step in compiled.steps:
        if step[0] not in _REFERENCE_STEPS:
            raise PathSyntaxError(
                f"Invalid reference path '{text}': {_render_step(step)} can match more "
                "than one node (no wildcards, filters, slices, unions or '..')"
            )


# --------------------------------------------------------------------------------------
# Filter predicates
# --------------------------------------------------------------------------------------

_MISSING = object()


def _either(left: _Predicate, right: _Predicate) -> _Predicate:
    return lambda node, root: left(node, root) or right(node, root)


def _both(left: _Predicate, right: _Predicate) -> _Predicate:
    return lambda node, root: left(node, root) and right(node, root)


def _operand_value(operand: _Operand, node: Any, root: Any) -> Any:
    if operand[0] != "path":
        return operand[1]
    try:
        return _evaluate(operand[2], root if operand[1] else node)
    except PathNotFound:
        return _MISSING


def _exists(operand: _Operand) -> _Predicate:
    return lambda node, root: _operand_value(operand, node, root) is not _MISSING


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but true is not 1."""
    if _is_number(a) and _is_number(b):
        return a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return type(a) is type(b) and a == b


def _ordered(a: Any, b: Any, test: Callable[[Any, Any], bool]) -> bool:
    if _is_number(a) and _is_number(b):
        return test(a, b)
    if isinstance(a, str) and isinstance(b, str):
        return test(a, b)
    return False


def _contains(container: Any, value: Any) -> bool:
    return isinstance(container, list) and any(_same(value, item) for item in container)


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": _same,
    "!=": lambda a, b: not _same(a, b),
    "<": lambda a, b: _ordered(a, b, lambda x, y: x < y),
    "<=": lambda a, b: _ordered(a, b, lambda x, y: x <= y),
    ">": lambda a, b: _ordered(a, b, lambda x, y: x > y),
    ">=": lambda a, b: _ordered(a, b, lambda x, y: x >= y),
    "=~": lambda a, b: isinstance(a, str) and b.fullmatch(a) is not None,
    "in": lambda a, b: _contains(b, a),
    "nin": lambda a, b: isinstance(b, list) and not _contains(b, a),
    "subsetof": lambda a, b: isinstance(a, list) and all(_contains(b, x) for x in a),
    "anyof": lambda a, b: isinstance(a, list) and any(_contains(b, x) for x in a),
    "noneof": lambda a, b: isinstance(a, list) and not any(_contains(b, x) for x in a),
    "size": lambda a, b: isinstance(a, (list, str)) and _same(len(a), b),
    "empty": lambda a, b: isinstance(a, (list, str)) and (len(a) == 0) is b,
}


def _compare(operator: str, left: _Operand, right: _Operand) -> _Predicate:
    test = _COMPARE[operator]

    def predicate(node: Any, root: Any) -> bool:
        a = _operand_value(left, node, root)
        b = _operand_value(right, node, root)
        if a is _MISSING or b is _MISSING:
            return False
        return test(a, b)

    return predicate


# --------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------


def read(
    data: Any,
    path: str,
    context: dict[str, Any] | None = None,
    variables: Mapping[str, Any] | None = None,
) -> Any:
    """Evaluate ``path`` on ``data`` (``$$...`` on ``context``, ``$name...`` on the
    workflow ``variables``).

    A definite path returns the node it names and raises :class:`PathNotFound` when
    there is none; an indefinite one returns the list of its matches.
    Raises :class:`PathSyntaxError` for a path that does not parse.
    """
    compiled = compile_path(path)
    if compiled.variable is not None:
        if variables is None or compiled.variable not in variables:
            raise PathNotFound(f"Variable '{compiled.variable}' is not defined", path)
        return _evaluate(compiled, variables[compiled.variable])
    return _evaluate(compiled, (context or {}) if compiled.context else data)


def _evaluate(compiled: CompiledPath, root: Any) -> Any:
    if compiled.definite:
        result = _walk_definite(compiled, root)
    else:
        nodes = [root]
        last = len(compiled.steps) - 1
        for position, step in enumerate(compiled.steps):
            nodes = _apply_step(step, nodes, root, position == last)
        result = nodes
    if not compiled.function:
        return result
    if compiled.definite:
        return _call_function(compiled, result)
    if compiled.steps[0][0] == SCAN:
        # Jayway rewrites "$..x.f()" as "$.f($..x)": the function sees every match at
        # once, and length() counts their children ("$..book.length()" is the number
        # of books, not of book arrays).
        if compiled.function == "length":
            result = _apply_step((WILDCARD,), result, root, False)
        return _call_function(compiled, result)
    # Otherwise the function is one more step, applied to each match.
    return [_call_function(compiled, node) for node in result]


def _walk_definite(compiled: CompiledPath, node: Any) -> Any:
    steps = compiled.steps
    last = len(steps) - 1
    for position, (kind, key) in enumerate(steps):
        if kind == NAME:
            if not isinstance(node, dict):
                raise PathNotFound(
                    f"Expected to find an object with property ['{key}'] in path "
                    f"{_render(steps, position)} but found '{json_type(node)}'. "
                    "This is not a json object.",
                    compiled.text,
                )
            if key not in node:
                if position == last:
                    raise PathNotFound(f"No results for path: {compiled.jayway}", compiled.text)
                raise PathNotFound(
                    f"Missing property in path {_render(steps, position + 1)}", compiled.text
                )
            node = node[key]
        else:
            if not isinstance(node, list):
                raise PathNotFound(
                    f"Filter: [{key}] can only be applied to arrays. Current context is: "
                    f"{compact_json(node)}",
                    compiled.text,
                )
            if not -len(node) <= key < len(node):
                raise PathNotFound(f"No results for path: {compiled.jayway}", compiled.text)
            node = node[key]
    return node


def _apply_step(step: Step, nodes: list[Any], root: Any, leaf: bool) -> list[Any]:
    """One step of an indefinite path: what it yields from each node, in order."""
    kind = step[0]
    out: list[Any] = []
    for node in nodes:
        if kind == NAME:
            if isinstance(node, dict) and step[1] in node:
                out.append(node[step[1]])
        elif kind == INDEX:
            if isinstance(node, list) and -len(node) <= step[1] < len(node):
                out.append(node[step[1]])
        elif kind == NAMES:
            if isinstance(node, dict):
                present = [key for key in step[1] if key in node]
                # Jayway: several names at the end of a path make one object of them.
                if leaf:
                    out.append({key: node[key] for key in present})
                else:
                    out.extend(node[key] for key in present)
        elif kind == INDEXES:
            if isinstance(node, list):
                out.extend(node[i] for i in step[1] if -len(node) <= i < len(node))
        elif kind == WILDCARD:
            if isinstance(node, dict):
                out.extend(node.values())
            elif isinstance(node, list):
                out.extend(node)
        elif kind == SLICE:
            if isinstance(node, list):
                out.extend(node[step[1] : step[2]])
        elif kind == FILTER:
            predicate = step[1]
            if isinstance(node, list):
                out.extend(item for item in node if predicate(item, root))
            elif isinstance(node, dict) and predicate(node, root):
                out.append(node)
        else:  # SCAN
            out.extend(_scan(step[1], node, root, leaf))
    return out


def _scan(step: Step, node: Any, root: Any, leaf: bool) -> list[Any]:
    """``..step``: the step applied to ``node`` and every node below it, depth first."""
    out: list[Any] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if step[0] == FILTER:
            # Jayway tests every object in the tree against a scanned filter.
            if isinstance(current, dict) and step[1](current, root):
                out.append(current)
        else:
            out.extend(_apply_step(step, [current], root, leaf))
        if isinstance(current, dict):
            stack.extend(reversed(list(current.values())))
        elif isinstance(current, list):
            stack.extend(reversed(current))
    return out


def _call_function(compiled: CompiledPath, value: Any) -> Any:
    """Jayway's path functions; the numeric ones return doubles, as Jayway's do."""
    name = compiled.function
    if name == "length":
        return len(value) if isinstance(value, (list, dict)) else None
    if name == "keys" and isinstance(value, dict):
        return list(value)
    if name in ("first", "last") and isinstance(value, list) and value:
        return value[0] if name == "first" else value[-1]
    if isinstance(value, list) and name in _AGGREGATIONS:
        numbers = [float(item) for item in value if _is_number(item)]
        if numbers:
            return _AGGREGATIONS[name](numbers)
    raise PathNotFound(
        f"Function {name}() cannot be applied to {json_type(value)} "
        f"{compact_json(value)} in path {compiled.text}",
        compiled.text,
    )


_AGGREGATIONS: dict[str, Callable[[list[float]], float]] = {
    "min": min,
    "max": max,
    "sum": math.fsum,
    "avg": lambda numbers: math.fsum(numbers) / len(numbers),
    "stddev": lambda numbers: math.sqrt(statistics.pvariance(numbers)),
}
