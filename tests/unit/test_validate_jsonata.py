"""The JSONata syntax checker behind validate (faastlane.validation.jsonata)."""

from __future__ import annotations

import pytest

from faastlane.validation.jsonata_syntax import (
    JSONataSyntaxError,
    check_expression,
    is_expression,
    is_half_wrapped,
)

VALID = [
    "$states.input.items",
    "$sum($states.input.items.(price * quantity))",
    "Account.Order[0].Product[Price > 30 and Quantity <= 2].SKU",
    "$count(Phone[type='mobile']) = 1 ? 'one' : 'many'",
    "($x := 3; $y := $x * 2; [$x, $y, 1..5])",
    "{'a': 1, \"b\": [true, false, null], `odd name`: -2.5e3}",
    "$map([1, 2], function($v, $i)<n-n:n> { $v * $i })",
    "$match(email, /^[a-z]+@[a-z.]+$/i) ~> $exists()",
    "Account.Order^(>Product.Price, <Quantity).Product.SKU",
    "library.loans@$l.books@$b[$l.isbn = $b.isbn]",
    "Employee#$i[$i < 2]",
    "$ ~> | Account.Order.Product | {'Total': Price * Quantity}, ['Description'] |",
    "Order.Product{`Product Name`: Price}",
    "$string(10 % 3) & '' & $uppercase('x') /* a comment */",
    "$f := $substring(?, 0, 2)",
    "**.Price[%.Quantity > 1]",
    "$x ?? 'default'",
    "$x ?: 'default'",
    "$not(a in ['x', 'y']) or b != 2",
]

INVALID = [
    "10 + * 2",
    "420.",
    "$.store.book[?(@.price < 10)].title",
    "$sum($states.input.items.numbers",
    "[1, 2",
    "{'a' 1}",
    "'unterminated",
    "/unterminated",
    "function($v) $v",
    "a ? : b",
    "1 := 2",
    "x @ y",
    "'bad \\q escape'",
    ")",
    "$f(1,)",
    "/* open comment",
]


@pytest.mark.parametrize("expression", VALID)
def test_valid_expressions_parse(expression: str) -> None:
    check_expression("{% " + expression + " %}")


@pytest.mark.parametrize("expression", INVALID)
def test_invalid_expressions_are_rejected_with_a_position(expression: str) -> None:
    with pytest.raises(JSONataSyntaxError, match="position"):
        check_expression("{% " + expression + " %}")


@pytest.mark.parametrize("text", ["{%  %}", "{%%}"])
def test_empty_expressions_are_rejected(text: str) -> None:
    with pytest.raises(JSONataSyntaxError, match="empty"):
        check_expression(text)


@pytest.mark.parametrize(
    ("text", "expression", "half"),
    [
        ("{% 1 %}", True, False),
        ("{%1%}", True, False),
        ("{% 1 %", False, True),
        ("1 %}", False, True),
        ("{%", False, True),
        ("100 % done", False, False),
        # AWS takes a padded expression as a literal string (test_base_cases[BASE_LITERALS]).
        (" {% states.input %} ", False, False),
        ("plain", False, False),
    ],
)
def test_recognising_expressions(text: str, expression: bool, half: bool) -> None:
    assert is_expression(text) is expression
    assert is_half_wrapped(text) is half
