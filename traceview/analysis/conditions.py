"""The `when` conditions of the findings rules: a tiny expression language parsed into polars
expressions (no `eval`).

Grammar: or_expr := and_expr ('or' and_expr)*; and_expr := not_expr ('and' not_expr)*;
not_expr := 'not' not_expr | '(' or_expr ')' | operand [op operand]; op is one of < <= > >= == !=;
an operand is a fact name (a column), a number (finite), a quoted string, or true/false; a bare
operand must be a Boolean fact. Comparisons with a null are null, which a filter treats as false.

Limits: at most MAX_TERMS terms (comparisons and bare Boolean facts) and MAX_DEPTH levels of
`not` and parentheses nested in each other. A chain of `and` (or `or`) terms becomes one
`pl.all_horizontal` (`pl.any_horizontal`), the same Kleene logic as `&` (`|`) but a flat
expression: polars' optimiser takes time cubic in the depth of a left-deep `a & b & c ...` chain
(2,000 terms ran for minutes). The tokenizer and the parser stop at the first term or level past a
limit, so a condition of any length fails in time linear in its length.
Errors are one ValueError line naming the rule, the text (cut short when long) and the column.
"""

from __future__ import annotations

import math
import re

import polars as pl

#: The most terms (comparisons and bare Boolean facts) a condition may hold.
MAX_TERMS = 200
#: The most levels of `not` and parentheses nested in each other.
MAX_DEPTH = 32
_SPACE = re.compile(r"\s*")

_TOKEN = re.compile(
    r"\s*(?:(?P<num>-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)|(?P<op><=|>=|==|!=|<|>)|(?P<par>[()])"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<str>\"[^\"]*\"|'[^']*'))"
)
_COMPARE = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


def _shown(text: str) -> str:
    """The condition as an error line quotes it: cut to 60 characters."""
    return repr(text) if len(text) <= 60 else repr(text[:55] + " ...")


def _tokens(text: str, where: str):
    """(kind, text, column) of each token, lazily: a parser that stops early reads no further."""
    pos = _SPACE.match(text, 0).end()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            rest = text[pos : pos + 10].rstrip()
            raise ValueError(f"{where}: 'when' {_shown(text)}: unexpected {rest!r} at column {pos + 1}")
        kind = m.lastgroup
        yield kind, m.group(kind), m.start(kind) + 1
        pos = _SPACE.match(text, m.end()).end()


class _Parser:
    """Recursive descent: or_expr := and_expr ('or' and_expr)*; and_expr := not_expr ('and' not_expr)*;
    not_expr := 'not' not_expr | '(' or_expr ')' | operand [op operand]."""

    def __init__(self, text: str, where: str, facts: dict):
        self.text, self.where, self.facts = text, where, facts
        self.stream = _tokens(text, where)
        self.tok: tuple[str, str, int] | None = next(self.stream, None)
        self.terms = self.depth = 0

    def advance(self) -> None:
        self.tok = next(self.stream, None)

    def fail(self, what: str) -> ValueError:
        at = f"{self.tok[1][:20]!r} at column {self.tok[2]}" if self.tok else "the end"
        return ValueError(f"{self.where}: 'when' {_shown(self.text)}: {what}, found {at}")

    def peek(self, value: str | None = None, kind: str | None = None) -> bool:
        if self.tok is None:
            return False
        k, v, _ = self.tok
        return (value is None or v == value) and (kind is None or k == kind)

    def parse(self) -> pl.Expr:
        if self.tok is None:
            raise self.fail("an empty condition")
        expr = self.or_expr()
        if self.tok is not None:
            raise self.fail("expected 'and', 'or' or the end")
        return expr

    def or_expr(self) -> pl.Expr:
        terms = [self.and_expr()]
        while self.peek("or", "name"):
            self.advance()
            terms.append(self.and_expr())
        return terms[0] if len(terms) == 1 else pl.any_horizontal(terms)

    def and_expr(self) -> pl.Expr:
        terms = [self.not_expr()]
        while self.peek("and", "name"):
            self.advance()
            terms.append(self.not_expr())
        return terms[0] if len(terms) == 1 else pl.all_horizontal(terms)

    def nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"more than {MAX_DEPTH} levels of 'not' and parentheses nested in each other")

    def not_expr(self) -> pl.Expr:
        if self.peek("not", "name"):
            self.nest()
            self.advance()
            expr = ~self.not_expr()
            self.depth -= 1
            return expr
        if self.peek("(", "par"):
            self.nest()
            self.advance()
            expr = self.or_expr()
            if not self.peek(")", "par"):
                raise self.fail("expected ')'")
            self.advance()
            self.depth -= 1
            return expr
        self.terms += 1
        if self.terms > MAX_TERMS:
            raise self.fail(f"more than {MAX_TERMS} terms (comparisons or Boolean facts)")
        left, left_kind = self.operand()
        if not self.peek(kind="op"):
            if left_kind != "bool_fact":
                raise self.fail("expected a comparison operator")
            return left
        op = self.tok[1]  # type: ignore[index]
        self.advance()
        right, _ = self.operand()
        return _COMPARE[op](left, right)

    def operand(self) -> tuple[pl.Expr, str]:
        if self.tok is None:
            raise self.fail("expected a fact, a number or a string")
        kind, value, _ = self.tok
        if kind == "num":
            number = float(value)
            if not math.isfinite(number):
                raise self.fail("a number must be finite")
            self.advance()
            return pl.lit(number), "lit"
        if kind == "str":
            self.advance()
            return pl.lit(value[1:-1]), "lit"
        if kind == "name" and value in ("true", "false"):
            self.advance()
            return pl.lit(value == "true"), "lit"
        if kind == "name" and value not in ("and", "or", "not"):
            if value not in self.facts:
                raise self.fail(f"unknown fact {value[:40]!r}")
            self.advance()
            return pl.col(value), "bool_fact" if self.facts[value][0] == pl.Boolean else "fact"
        raise self.fail("expected a fact, a number or a string")


def parse_condition(text: str, facts: dict, where: str = "condition") -> pl.Expr:
    """The polars Boolean expression of a `when` condition (grammar and limits in the module
    docstring) over the columns named in `facts` (name -> (dtype, definition)); ValueError naming
    `where`, the text and the column of the problem otherwise."""
    return _Parser(text, where, facts).parse()
