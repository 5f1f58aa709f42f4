"""JSONata expressions in ASL: recognising ``{% ... %}`` and checking their syntax.

Step Functions evaluates a string as JSONata when it is written ``"{% <expression> %}"``
in a JSONata state, and rejects a definition whose expressions do not parse. This module
is the validator's syntax checker (the runtime evaluates expressions with the
jsonata-python engine, ``runtime/asl/jsonata.py``): a tokenizer and a Pratt parser that
follow the reference implementation's grammar (jsonata-js ``parser.js``: the same
operators, binding powers and constructs), building no tree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OPEN, CLOSE = "{%", "%}"


class JSONataSyntaxError(ValueError):
    """A JSONata expression that does not parse; the message gives the position."""


def is_expression(text: str) -> bool:
    """Whether ``text`` is a ``{% ... %}`` JSONata expression string."""
    return len(text) >= len(OPEN) + len(CLOSE) and text.startswith(OPEN) and text.endswith(CLOSE)


def is_half_wrapped(text: str) -> bool:
    """A string that opens ``{%`` without closing ``%}`` (or the reverse): a typo.

    A string with spaces around a whole ``{% %}`` is a literal string, which AWS accepts
    (LocalStack's recorded test_base_cases[BASE_LITERALS]: " {% states.input %} ")."""
    return not is_expression(text) and (text.startswith(OPEN) or text.endswith(CLOSE))


def check_expression(text: str) -> None:
    """Check a ``{% ... %}`` string; raises :class:`JSONataSyntaxError`."""
    if not is_expression(text):
        raise JSONataSyntaxError("a JSONata expression must be written '{% expression %}'")
    body = text[len(OPEN) : -len(CLOSE)]
    if not body.strip():
        raise JSONataSyntaxError("the expression between '{%' and '%}' is empty")
    _Parser(body).parse()


# ---------------------------------------------------------------------------- tokens

# Binding powers of jsonata-js (operators that only separate, like ':' or ';', bind 0).
_INFIX = {
    ".": 75,
    "[": 80,
    "{": 70,
    "(": 80,
    "@": 80,
    "#": 80,
    "?": 20,
    "+": 50,
    "-": 50,
    "*": 60,
    "/": 60,
    "%": 60,
    "=": 40,
    "<": 40,
    ">": 40,
    "^": 40,
    "!=": 40,
    "<=": 40,
    ">=": 40,
    "~>": 40,
    "?:": 40,
    "??": 40,
    "and": 30,
    "or": 25,
    "in": 40,
    "&": 50,
    ":=": 10,
}
_TWO_CHAR = ("..", ":=", "!=", ">=", "<=", "**", "~>", "?:", "??")
_SINGLE = set(".[]{}(),@#;:?+-*/%|=<>^&!~")
_NUMBER = re.compile(r"(0|[1-9][0-9]*)(\.[0-9]+)?([Ee][-+]?[0-9]+)?")
_ESCAPES = set("\"\\/bfnrtu'")
# Tokens after which '/' divides; anywhere else it starts a regular expression.
_VALUE_END = {"name", "variable", "number", "string", "value", "regex"}


@dataclass(frozen=True)
class _Token:
    kind: str  # operator, name, variable, number, string, value, regex, end
    value: str
    position: int


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    position, length = 0, len(text)

    def fail(message: str, at: int) -> JSONataSyntaxError:
        return JSONataSyntaxError(f"{message} at position {at + 1}")

    while position < length:
        char = text[position]
        if char.isspace():
            position += 1
            continue
        if text.startswith("/*", position):
            end = text.find("*/", position + 2)
            if end < 0:
                raise fail("comment is not closed", position)
            position = end + 2
            continue
        previous = tokens[-1] if tokens else None
        operand_expected = previous is None or (
            previous.kind == "operator" and previous.value not in (")", "]", "}")
        )
        if char == "/" and operand_expected:
            position = _scan_regex(text, position, fail)
            tokens.append(_Token("regex", text[:position], position))
            continue
        pair = text[position : position + 2]
        if pair in _TWO_CHAR:
            tokens.append(_Token("operator", pair, position))
            position += 2
            continue
        if char in _SINGLE:
            tokens.append(_Token("operator", char, position))
            position += 1
            continue
        if char in "\"'":
            position = _scan_string(text, position, fail)
            tokens.append(_Token("string", char, position))
            continue
        number = _NUMBER.match(text, position)
        if number:
            tokens.append(_Token("number", number.group(), position))
            position = number.end()
            continue
        if char == "`":
            end = text.find("`", position + 1)
            if end < 0:
                raise fail("quoted name is not closed with '`'", position)
            tokens.append(_Token("name", text[position + 1 : end], position))
            position = end + 1
            continue
        start = position
        while (
            position < length
            and not text[position].isspace()
            and text[position] not in _SINGLE
            and text[position] not in "\"'`"
        ):
            position += 1
        word = text[start:position]
        if word.startswith("$"):
            tokens.append(_Token("variable", word[1:], start))
        elif word in ("and", "or", "in"):
            tokens.append(_Token("operator", word, start))
        elif word in ("true", "false", "null"):
            tokens.append(_Token("value", word, start))
        else:
            tokens.append(_Token("name", word, start))
    tokens.append(_Token("end", "", length))
    return tokens


def _scan_string(text: str, position: int, fail) -> int:  # type: ignore[no-untyped-def]
    quote, index = text[position], position + 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            if index + 1 >= len(text) or text[index + 1] not in _ESCAPES:
                raise fail("unsupported escape sequence in string", index)
            if text[index + 1] == "u" and not re.fullmatch(
                r"[0-9a-fA-F]{4}", text[index + 2 : index + 6]
            ):
                raise fail("\\u must be followed by four hex digits", index)
            index += 2
            continue
        if char == quote:
            return index + 1
        index += 1
    raise fail("string is not terminated", position)


def _scan_regex(text: str, position: int, fail) -> int:  # type: ignore[no-untyped-def]
    # As jsonata-js: the closing '/' is one not escaped and outside (), [] and {}.
    depth, index = 0, position + 1
    while index < len(text):
        char = text[index]
        escaped = text[index - 1] == "\\"
        if char == "/" and depth == 0:
            backslashes = len(text[:index]) - len(text[:index].rstrip("\\"))
            if backslashes % 2 == 0:
                if index == position + 1:
                    raise fail("empty regular expression", position)
                index += 1
                while index < len(text) and text[index] in "im":
                    index += 1
                return index
        if char in "([{" and not escaped:
            depth += 1
        elif char in ")]}" and not escaped:
            depth -= 1
        index += 1
    raise fail("no terminating '/' in regular expression", position)


# ---------------------------------------------------------------------------- parser


class _Parser:
    """A Pratt parser over the token list; each method consumes one construct."""

    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.index = 0

    @property
    def token(self) -> _Token:
        return self.tokens[self.index]

    def error(self, message: str, token: _Token | None = None) -> JSONataSyntaxError:
        token = token or self.token
        found = (
            "the end of the expression"
            if token.kind == "end"
            else repr(token.value if token.kind != "string" else "string")
        )
        return JSONataSyntaxError(f"{message}, found {found} at position {token.position + 1}")

    def is_op(self, value: str) -> bool:
        return self.token.kind == "operator" and self.token.value == value

    def advance(self, expected: str | None = None) -> _Token:
        token = self.token
        if expected is not None and not self.is_op(expected):
            raise self.error(f"expected {expected!r}")
        if token.kind != "end":
            self.index += 1
        return token

    def parse(self) -> None:
        self.expression(0)
        if self.token.kind != "end":
            raise self.error("syntax error: unexpected token")

    def binding(self, token: _Token) -> int:
        return _INFIX.get(token.value, 0) if token.kind == "operator" else 0

    def expression(self, rbp: int) -> _Token:
        """Parse an expression; returns its first token (to recognise ``function``)."""
        token = self.advance()
        self.prefix(token)
        left = token
        while rbp < self.binding(self.token):
            self.infix(self.advance(), left)
            left = _Token("expression", "", token.position)
        return left

    def sequence(self, close: str, item) -> None:  # type: ignore[no-untyped-def]
        """Comma-separated ``item``s up to ``close`` (which may come at once)."""
        if not self.is_op(close):
            while True:
                item()
                if not self.is_op(","):
                    break
                self.advance(",")
        self.advance(close)

    def prefix(self, token: _Token) -> None:
        if token.kind in ("name", "variable", "number", "string", "value", "regex"):
            return
        if token.kind == "end":
            raise self.error("unexpected end of expression", token)
        op = token.value
        if op in ("and", "or", "in", "*", "**", "%"):
            return  # field names, wildcard, descendants, parent
        if op == "-":
            self.expression(70)
        elif op == "(":  # block: expressions separated by ';'
            while not self.is_op(")"):
                self.expression(0)
                if not self.is_op(";"):
                    break
                self.advance(";")
            self.advance(")")
        elif op == "[":  # array constructor, with ranges
            self.sequence("]", self.array_item)
        elif op == "{":  # object constructor
            self.sequence("}", self.pair)
        elif op == "|":  # transform: | pattern | update [, delete] |
            self.expression(0)
            self.advance("|")
            self.expression(0)
            if self.is_op(","):
                self.advance(",")
                self.expression(0)
            self.advance("|")
        else:
            raise self.error("syntax error", token)

    def array_item(self) -> None:
        self.expression(0)
        if self.is_op(".."):
            self.advance("..")
            self.expression(0)

    def pair(self) -> None:
        self.expression(0)
        self.advance(":")
        self.expression(0)

    def argument(self) -> None:
        if self.is_op("?"):  # partial application placeholder
            self.advance("?")
        else:
            self.expression(0)

    def infix(self, token: _Token, left: _Token) -> None:
        op = token.value
        if op == "(":
            if left.kind == "name" and left.value in ("function", "\u03bb"):
                self.lambda_definition()
            else:
                self.sequence(")", self.argument)
        elif op == "[":
            if self.is_op("]"):
                self.advance("]")
            else:
                self.expression(0)
                self.advance("]")
        elif op == "{":  # group-by
            self.sequence("}", self.pair)
        elif op == "?":
            self.expression(0)
            if self.is_op(":"):
                self.advance(":")
                self.expression(0)
        elif op == "^":  # order-by
            self.advance("(")
            self.sequence(")", self.sort_term)
        elif op in ("@", "#"):
            if self.token.kind != "variable":
                raise self.error(f"{op!r} must be followed by a variable")
            self.expression(_INFIX[op])
        elif op == ":=":
            if left.kind != "variable":
                raise self.error("the left side of ':=' must be a variable", token)
            self.expression(_INFIX[op] - 1)
        else:
            self.expression(_INFIX[op])

    def sort_term(self) -> None:
        if self.is_op("<") or self.is_op(">"):
            self.advance()
        self.expression(0)

    def lambda_definition(self) -> None:
        """``function($a, $b)<signature>? { body }``; the '(' is already consumed."""

        def parameter() -> None:
            if self.token.kind != "variable":
                raise self.error("a function parameter must be a variable")
            self.advance()

        self.sequence(")", parameter)
        if self.is_op("<"):  # type signature: skip to the matching '>'
            depth = 0
            while True:
                if self.token.kind == "end":
                    raise self.error("function signature is not closed with '>'")
                if self.is_op("<"):
                    depth += 1
                elif self.is_op(">"):
                    depth -= 1
                self.advance()
                if depth == 0:
                    break
        self.advance("{")
        self.expression(0)
        self.advance("}")
