"""ASL intrinsic functions: ``States.Format(...)`` and the rest, parsed and evaluated.

An intrinsic is the value of a ``.$`` key in a payload template (Parameters,
ResultSelector, ItemSelector). Its arguments are string literals in single quotes,
numbers, ``true``/``false``/``null``, paths (``$.x``, ``$$.Execution.Id``) and nested
intrinsic calls. Inside a string literal the reserved characters ``' { } \\`` are
escaped with a backslash; "If an open escape backslash \\ is found in the intrinsic
invocation string, the interpreter will throw a runtime error" (Step Functions
developer guide, "Intrinsic functions"), and we reject it when the definition is checked.

Invocations are parsed once and cached. Failures at run time (an argument of the wrong
type, a documented limit exceeded) raise ``StatesError("States.IntrinsicFailure", ...)``;
a definite path argument that matches nothing raises :class:`jsonpath.PathNotFound`, which
the payload template turns into ``States.Runtime`` naming the field.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import random
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeGuard

from . import jsonpath
from .errors import INTRINSIC_FAILURE, StatesError
from .jsonvalue import compact_json, integral_floats_as_ints, json_type

if TYPE_CHECKING:
    from typing import Protocol

    class _Digest(Protocol):
        def hexdigest(self) -> str: ...


class IntrinsicSyntaxError(ValueError):
    """An intrinsic invocation that does not parse, or names/arguments that are wrong."""


# --------------------------------------------------------------------------------------
# Parsed form
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Literal:
    """A literal argument. ``pieces`` is set for strings: the text between ``{}``s."""

    value: Any
    pieces: tuple[str, ...] | None = None


@dataclass(frozen=True)
class PathArg:
    """A path argument, evaluated on the state's data (or ``$$`` on the context)."""

    path: jsonpath.CompiledPath


@dataclass(frozen=True)
class Call:
    """A call of a ``States.*`` function."""

    name: str
    args: tuple[Literal | PathArg | Call, ...]


# "You can nest up to 10 intrinsic functions within a field" (developer guide).
MAX_FUNCTIONS_PER_FIELD = 10

# Documented limits.
MAX_RANGE_ITEMS = 1000  # ArrayRange: "can't contain more than 1000 items"
MAX_BASE64_INPUT = 10_000  # Base64Encode/Decode: "a data string of up to 10,000 characters"
MAX_HASH_INPUT = 10_000  # Hash: "10,000 characters or less"
INT32 = (-(2**31), 2**31 - 1)  # MathAdd: "integer values in the range" of a Java int

_HASHES: dict[str, Callable[[bytes], _Digest]] = {
    "MD5": hashlib.md5,
    "SHA-1": hashlib.sha1,
    "SHA-256": hashlib.sha256,
    "SHA-384": hashlib.sha384,
    "SHA-512": hashlib.sha512,
}


def is_intrinsic(text: str) -> bool:
    """Whether a ``.$`` value is an intrinsic function call rather than a path."""
    return isinstance(text, str) and text.lstrip().startswith("States.")


# --------------------------------------------------------------------------------------
# Parser
# --------------------------------------------------------------------------------------

_NAME = re.compile(r"States\.([A-Za-z0-9]+)")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_KEYWORD = re.compile(r"(true|false|null)(?![A-Za-z0-9_])")
_ESCAPABLE = "'{}\\"


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.calls = 0

    def error(self, what: str) -> IntrinsicSyntaxError:
        return IntrinsicSyntaxError(
            f"Invalid intrinsic function '{self.text}': {what} at position {self.pos}"
        )

    def skip_spaces(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t\n\r":
            self.pos += 1

    def parse(self) -> Call:
        self.skip_spaces()
        call = self.call()
        self.skip_spaces()
        if self.pos != len(self.text):
            raise self.error(f"unexpected '{self.text[self.pos]}' after the call")
        return call

    def call(self) -> Call:
        match = _NAME.match(self.text, self.pos)
        if not match:
            raise self.error("expected a function name such as States.Format")
        name = match.group(1)
        if name not in _SIGNATURES:
            raise self.error(f"unknown function 'States.{name}'")
        self.calls += 1
        if self.calls > MAX_FUNCTIONS_PER_FIELD:
            raise self.error(
                f"more than {MAX_FUNCTIONS_PER_FIELD} intrinsic functions in one field"
            )
        self.pos = match.end()
        self.skip_spaces()
        if self.text[self.pos : self.pos + 1] != "(":
            raise self.error(f"expected '(' after States.{name}")
        self.pos += 1
        args: list[Literal | PathArg | Call] = []
        self.skip_spaces()
        if self.text[self.pos : self.pos + 1] == ")":
            self.pos += 1
        else:
            while True:
                args.append(self.argument())
                self.skip_spaces()
                char = self.text[self.pos : self.pos + 1]
                self.pos += 1
                if char == ")":
                    break
                if char != ",":
                    self.pos -= 1
                    raise self.error(f"expected ',' or ')' but found '{char or 'end of text'}'")
                self.skip_spaces()
        call = Call(name, tuple(args))
        _check_signature(call, self.error)
        return call

    def argument(self) -> Literal | PathArg | Call:
        char = self.text[self.pos : self.pos + 1]
        if char == "'":
            return self.string()
        if char == "$":
            return self.path()
        if self.text.startswith("States.", self.pos):
            return self.call()
        for pattern in (_NUMBER, _KEYWORD):
            match = pattern.match(self.text, self.pos)
            if match:
                self.pos = match.end()
                return Literal(json.loads(match.group()))
        raise self.error(f"unexpected '{char or 'end of text'}' where an argument belongs")

    def string(self) -> Literal:
        self.pos += 1  # opening quote
        pieces: list[str] = []
        current: list[str] = []
        while True:
            if self.pos >= len(self.text):
                raise self.error("unterminated string literal")
            char = self.text[self.pos]
            if char == "\\":
                escaped = self.text[self.pos + 1 : self.pos + 2]
                if escaped == "" or escaped not in _ESCAPABLE:
                    raise self.error("open escape backslash in a string literal")
                current.append(escaped)
                self.pos += 2
            elif char == "'":
                self.pos += 1
                pieces.append("".join(current))
                return Literal("{}".join(pieces), tuple(pieces))
            elif char == "{" and self.text[self.pos + 1 : self.pos + 2] == "}":
                pieces.append("".join(current))
                current = []
                self.pos += 2
            else:
                # The specification reserves '{' and '}', but AWS takes a lone one as
                # itself: States.StringToJson('{"constant_in_literal": "false"}') ran
                # (LocalStack's recorded test_json_merge_escaped_argument).
                current.append(char)
                self.pos += 1

    def path(self) -> PathArg:
        # A path runs to the next ',' or ')' outside brackets, parentheses and quotes.
        start = self.pos
        depth = 0
        quote = ""
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if quote:
                if char == "\\":
                    self.pos += 1
                elif char == quote:
                    quote = ""
            elif char in "'\"":
                quote = char
            elif char in "[(":
                depth += 1
            elif char in "])":
                if depth == 0:
                    break
                depth -= 1
            elif char == "," and depth == 0:
                break
            self.pos += 1
        text = self.text[start : self.pos].rstrip()
        try:
            return PathArg(jsonpath.compile_path(text))
        except jsonpath.PathSyntaxError as exc:
            raise IntrinsicSyntaxError(f"Invalid intrinsic function '{self.text}': {exc}") from None


@lru_cache(maxsize=2048)
def parse(text: str) -> Call:
    """Parse an intrinsic invocation (cached); raises :class:`IntrinsicSyntaxError`."""
    if not isinstance(text, str):
        raise IntrinsicSyntaxError("An intrinsic function must be a string")
    return _Parser(text).parse()


def check(text: str) -> None:
    """Check syntax, function names and argument counts; raises IntrinsicSyntaxError."""
    parse(text)


# --------------------------------------------------------------------------------------
# Signatures (argument counts and what must be known when the definition is checked)
# --------------------------------------------------------------------------------------

# name -> (fewest arguments, most arguments or None for no limit)
_SIGNATURES: dict[str, tuple[int, int | None]] = {
    "Format": (1, None),
    "StringToJson": (1, 1),
    "JsonToString": (1, 1),
    "Array": (0, None),
    "ArrayPartition": (2, 2),
    "ArrayContains": (2, 2),
    "ArrayRange": (3, 3),
    "ArrayGetItem": (2, 2),
    "ArrayLength": (1, 1),
    "ArrayUnique": (1, 1),
    "Base64Encode": (1, 1),
    "Base64Decode": (1, 1),
    "Hash": (2, 2),
    "JsonMerge": (3, 3),
    "MathRandom": (2, 3),
    "MathAdd": (2, 2),
    "StringSplit": (2, 2),
    "UUID": (0, 0),
}


def _check_signature(call: Call, error: Callable[[str], IntrinsicSyntaxError]) -> None:
    fewest, most = _SIGNATURES[call.name]
    count = len(call.args)
    if count < fewest or (most is not None and count > most):
        expected = (
            f"{fewest}" if fewest == most
            else f"at least {fewest}" if most is None
            else f"{fewest} to {most}"
        )
        raise error(f"States.{call.name} takes {expected} argument(s), got {count}")
    if call.name == "Format":
        template = call.args[0]
        if isinstance(template, Literal):
            # "The value of the first argument must be a string ... There must be as many
            # remaining arguments ... as there are occurrences of {}."
            if template.pieces is None:
                raise error("the first argument of States.Format must be a string")
            if len(template.pieces) - 1 != count - 1:
                raise error(
                    f"States.Format has {len(template.pieces) - 1} '{{}}' but "
                    f"{count - 1} value(s) to put in them"
                )
    if call.name == "JsonToString" and not isinstance(call.args[0], PathArg):
        # "This argument must be a Path" (Amazon States Language specification).
        raise error("the argument of States.JsonToString must be a path")
    kinds = _LITERAL_KINDS.get(call.name, ())
    for position, (arg, kind) in enumerate(zip(call.args, kinds, strict=False)):
        if isinstance(arg, Literal) and kind is not None and not _LITERAL_TESTS[kind](arg.value):
            raise error(
                f"argument {position + 1} of States.{call.name} must be {kind}, "
                f"got {compact_json(arg.value)}"
            )


# What a *literal* argument must be, by position (None: anything). Arrays and objects
# cannot be written as literals, so those positions take only paths and calls.
_LITERAL_KINDS: dict[str, tuple[str | None, ...]] = {
    "StringToJson": ("a string",),
    "ArrayPartition": ("an array", "a number"),
    "ArrayContains": ("an array", None),
    "ArrayRange": ("a number", "a number", "a number"),
    "ArrayGetItem": ("an array", "a number"),
    "ArrayLength": ("an array",),
    "ArrayUnique": ("an array",),
    "Base64Encode": ("a string",),
    "Base64Decode": ("a string",),
    "Hash": ("a string", "one of " + ", ".join(_HASHES)),
    "JsonMerge": ("an object", "an object", "false"),
    "MathRandom": ("a number", "a number", "a number"),
    "MathAdd": ("a number", "a number"),
    "StringSplit": ("a string", "a string"),
}
_LITERAL_TESTS: dict[str, Callable[[Any], bool]] = {
    "a string": lambda v: isinstance(v, str),
    "a number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "an array": lambda v: False,
    "an object": lambda v: False,
    "false": lambda v: v is False,
    "one of " + ", ".join(_HASHES): lambda v: v in _HASHES,
}


# --------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Scope:
    """What path arguments read: the state's data, the context object, variables."""

    data: Any
    context: dict[str, Any]
    variables: Mapping[str, Any] | None


def evaluate(
    text: str,
    data: Any,
    context: dict[str, Any],
    variables: Mapping[str, Any] | None = None,
) -> Any:
    """Evaluate an intrinsic invocation on the state's data, the context object and
    (for ``$name`` arguments) the workflow variables."""
    try:
        call = parse(text)
    except IntrinsicSyntaxError as exc:  # the validator rejects these before any run
        raise StatesError(INTRINSIC_FAILURE, str(exc)) from None
    return _call(call, _Scope(data, context, variables))


def _value(arg: Literal | PathArg | Call, scope: _Scope) -> Any:
    if isinstance(arg, Literal):
        return arg.value
    if isinstance(arg, PathArg):
        return jsonpath.read(scope.data, arg.path.text, scope.context, scope.variables)
    return _call(arg, scope)


def _call(call: Call, scope: _Scope) -> Any:
    if call.name == "Format":
        return _format(call, scope)
    args = [_value(arg, scope) for arg in call.args]
    return _IMPLEMENTATIONS[call.name](*args)


def _fail(function: str, why: str) -> StatesError:
    return StatesError(INTRINSIC_FAILURE, f"Invalid arguments in States.{function}: {why}")


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _integer(function: str, what: str, value: Any) -> int:
    """An integer argument. Step Functions rounds a non-integer to the nearest integer."""
    if not _is_number(value) or (isinstance(value, float) and not math.isfinite(value)):
        raise _fail(function, f"{what} must be an integer, got {_show(value)}")
    if isinstance(value, float):
        return math.floor(value + 0.5)  # Java's Math.round: halves go up
    return value


def _array(function: str, what: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(function, f"{what} must be an array, got {_show(value)}")
    return value


def _string(function: str, what: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _fail(function, f"{what} must be a string, got {_show(value)}")
    return value


def _show(value: Any) -> str:
    return f"{json_type(value)} {compact_json(value)}"


def _format(call: Call, scope: _Scope) -> str:
    template = call.args[0]
    if isinstance(template, Literal):
        pieces = list(template.pieces or ())
    else:
        pieces = _string("Format", "the template", _value(template, scope)).split("{}")
    values = [_value(arg, scope) for arg in call.args[1:]]
    if len(pieces) - 1 != len(values):
        raise _fail("Format", f"{len(pieces) - 1} '{{}}' but {len(values)} value(s)")
    out = [pieces[0]]
    for value, piece in zip(values, pieces[1:], strict=True):
        # Strings appear without quotes. The ASL specification says "The Value MUST NOT
        # be a JSON array or object", but AWS formats them as Java prints its maps and
        # lists: {"Arg1": 1, "Arg2": []} as "{Arg1=1, Arg2=[]}" (LocalStack's recorded
        # test_format_2 and test_context_json_path).
        out.append(_format_value(value))
        out.append(piece)
    return "".join(out)


def _format_value(value: Any) -> str:
    """A value in States.Format's output, as AWS prints it: ``{Arg1=1, Arg2=[a, b]}``.
    Iterative (the value may be as deep as json reads): the stack holds values still to
    print and, as ``(text,)``, the punctuation between them."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if type(item) is tuple:
            out.append(item[0])
        elif isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            parts: list[Any] = [("{",)]
            for index, (key, child) in enumerate(item.items()):
                parts += [(f"{', ' if index else ''}{key}=",), child]
            stack.extend(reversed([*parts, ("}",)]))
        elif isinstance(item, list):
            parts = [("[",)]
            for index, child in enumerate(item):
                parts += [(", ",), child] if index else [child]
            stack.extend(reversed([*parts, ("]",)]))
        else:
            out.append(compact_json(item))
    return "".join(out)


def _string_to_json(text: Any) -> Any:
    text = _string("StringToJson", "the argument", text)
    if not text.strip():
        # AWS answers null for an empty or blank string (LocalStack's recorded
        # test_string_to_json with "" and " ").
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise _fail("StringToJson", f"not valid JSON ({exc})") from None


def _json_to_string(value: Any) -> str:
    return compact_json(value)


def _array_of(*values: Any) -> list[Any]:
    return list(values)


def _array_partition(array: Any, size: Any) -> list[Any]:
    array = _array("ArrayPartition", "the first argument", array)
    size = _integer("ArrayPartition", "the chunk size", size)
    if size <= 0:
        raise _fail("ArrayPartition", f"the chunk size must be a positive integer, got {size}")
    return [array[i : i + size] for i in range(0, len(array), size)]


def _array_contains(array: Any, value: Any) -> bool:
    array = _array("ArrayContains", "the first argument", array)
    key = _canonical(value)
    return any(_canonical(item) == key for item in array)


def _array_range(first: Any, last: Any, step: Any) -> list[Any]:
    first = _integer("ArrayRange", "the first element", first)
    last = _integer("ArrayRange", "the final element", last)
    step = _integer("ArrayRange", "the increment", step)
    if step == 0:
        raise _fail("ArrayRange", "the increment must not be zero")
    count = max(0, (last - first) // step + 1)
    if count > MAX_RANGE_ITEMS:
        raise _fail(
            "ArrayRange",
            f"the array would have {count} items; it can't contain more than {MAX_RANGE_ITEMS}",
        )
    return [first + i * step for i in range(count)]


def _array_get_item(array: Any, index: Any) -> Any:
    array = _array("ArrayGetItem", "the first argument", array)
    if not isinstance(index, int) or isinstance(index, bool):
        raise _fail("ArrayGetItem", f"the index must be an integer, got {_show(index)}")
    if not 0 <= index < len(array):
        raise _fail("ArrayGetItem", f"index {index} is out of bounds for length {len(array)}")
    return array[index]


def _array_length(array: Any) -> int:
    return len(_array("ArrayLength", "the argument", array))


def _array_unique(array: Any) -> list[Any]:
    array = _array("ArrayUnique", "the argument", array)
    seen: set[str] = set()
    out = []
    for item in array:
        key = _canonical(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _canonical(value: Any) -> str:
    """A key equal for equal JSON values (1 and 1.0 alike, object keys in any order)."""

    return json.dumps(integral_floats_as_ints(value), sort_keys=True, separators=(",", ":"))


def _limited(function: str, value: Any, limit: int) -> str:
    text = _string(function, "the input", value)
    if len(text) > limit:
        raise _fail(function, f"the input has {len(text)} characters; the limit is {limit}")
    return text


def _base64_encode(text: Any) -> str:
    data = _limited("Base64Encode", text, MAX_BASE64_INPUT).encode("utf-8")
    return base64.b64encode(data).decode("ascii")


def _base64_decode(text: Any) -> str:
    encoded = _limited("Base64Decode", text, MAX_BASE64_INPUT)
    try:
        return base64.b64decode(encoded.encode("ascii"), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeError) as exc:
        raise _fail("Base64Decode", f"not a Base64 encoding of UTF-8 text ({exc})") from None


def _hash(text: Any, algorithm: Any) -> str:
    text = _limited("Hash", text, MAX_HASH_INPUT)
    if algorithm not in _HASHES:
        raise _fail(
            "Hash", f"the algorithm must be one of {', '.join(_HASHES)}, got {_show(algorithm)}"
        )
    return _HASHES[algorithm](text.encode("utf-8")).hexdigest()


def _json_merge(first: Any, second: Any, deep: Any) -> dict[str, Any]:
    for what, value in (("first", first), ("second", second)):
        if not isinstance(value, dict):
            raise _fail("JsonMerge", f"the {what} argument must be an object, got {_show(value)}")
    if deep is not False:
        # "Step Functions only supports the shallow merging mode; therefore, you must
        # specify the boolean value as false."
        raise _fail("JsonMerge", f"the third argument must be false (shallow merge), got "
                    f"{_show(deep)}")
    return {**first, **second}


def _math_random(start: Any, end: Any, seed: Any = None) -> int:
    start = _integer("MathRandom", "the start number", start)
    end = _integer("MathRandom", "the end number", end)
    if start > end:
        raise _fail("MathRandom", f"the start number {start} is greater than the end {end}")
    # "If you use this function with the same seed value, it returns an identical number."
    generator = random.Random(_integer("MathRandom", "the seed", seed)) if seed is not None \
        else random.Random()
    return generator.randint(start, end)


def _math_add(first: Any, second: Any) -> int:
    total = 0
    for what, value in (("the first argument", first), ("the second argument", second)):
        number = _integer("MathAdd", what, value)
        if not INT32[0] <= number <= INT32[1]:
            raise _fail("MathAdd", f"{what} {number} is outside [{INT32[0]}, {INT32[1]}]")
        total += number
    return total


def _string_split(text: Any, delimiters: Any) -> list[str]:
    text = _string("StringSplit", "the string", text)
    delimiters = _string("StringSplit", "the delimiter", delimiters)
    # Every character of the second argument delimits, and empty pieces are dropped:
    # "This.is+a,test=string" split on ".+,=" gives five words (developer guide).
    if not delimiters:
        return [text] if text else []
    pattern = "[" + re.escape(delimiters) + "]+"
    return [piece for piece in re.split(pattern, text) if piece]


def _uuid() -> str:
    return str(uuid.uuid4())


_IMPLEMENTATIONS: dict[str, Callable[..., Any]] = {
    "StringToJson": _string_to_json,
    "JsonToString": _json_to_string,
    "Array": _array_of,
    "ArrayPartition": _array_partition,
    "ArrayContains": _array_contains,
    "ArrayRange": _array_range,
    "ArrayGetItem": _array_get_item,
    "ArrayLength": _array_length,
    "ArrayUnique": _array_unique,
    "Base64Encode": _base64_encode,
    "Base64Decode": _base64_decode,
    "Hash": _hash,
    "JsonMerge": _json_merge,
    "MathRandom": _math_random,
    "MathAdd": _math_add,
    "StringSplit": _string_split,
    "UUID": _uuid,
}


def implementation(name: str) -> Callable[..., Any]:
    """The function behind ``States.<name>``: the JSONata functions Step Functions adds
    (``$partition``, ``$range``, ``$hash``, ``$uuid``) are documented as these."""
    return _IMPLEMENTATIONS[name]
