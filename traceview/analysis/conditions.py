"""The `when` conditions of the findings rules: a tiny expression language parsed into polars
expressions (no `eval`).

Grammar: or_expr := and_expr ('or' and_expr)*; and_expr := not_expr ('and' not_expr)*;
not_expr := 'not' not_expr | '(' or_expr ')' | operand [op operand]; op is one of < <= > >= == !=;
an operand is a fact name (a column), a number, a quoted string, or true/false; a bare operand
must be a Boolean fact. Comparisons with a null are null, which a filter treats as false.
Errors are one ValueError line naming the rule, the text and the column.
"""

from __future__ import annotations

import re

import polars as pl

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


def _tokens(text: str, where: str) -> list[tuple[str, str, int]]:
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            rest = text[pos:].lstrip()
            column = len(text) - len(rest) + 1
            raise ValueError(f"{where}: 'when' {text!r}: unexpected {rest.rstrip()[:10]!r} at column {column}")
        kind = m.lastgroup
        out.append((kind, m.group(kind), m.start(kind) + 1))
        pos = m.end()
    return out


class _Parser:
    """Recursive descent: or_expr := and_expr ('or' and_expr)*; and_expr := not_expr ('and' not_expr)*;
    not_expr := 'not' not_expr | '(' or_expr ')' | operand [op operand]."""

    def __init__(self, text: str, where: str, facts: dict):
        self.text, self.where, self.facts = text, where, facts
        self.toks = _tokens(text, where)
        self.i = 0

    def fail(self, what: str) -> ValueError:
        tok = self.toks[self.i] if self.i < len(self.toks) else None
        at = f"{tok[1]!r} at column {tok[2]}" if tok else "the end"
        return ValueError(f"{self.where}: 'when' {self.text!r}: {what}, found {at}")

    def peek(self, value: str | None = None, kind: str | None = None) -> bool:
        if self.i >= len(self.toks):
            return False
        k, v, _ = self.toks[self.i]
        return (value is None or v == value) and (kind is None or k == kind)

    def parse(self) -> pl.Expr:
        if not self.toks:
            raise self.fail("an empty condition")
        expr = self.or_expr()
        if self.i != len(self.toks):
            raise self.fail("expected 'and', 'or' or the end")
        return expr

    def or_expr(self) -> pl.Expr:
        expr = self.and_expr()
        while self.peek("or", "name"):
            self.i += 1
            expr = expr | self.and_expr()
        return expr

    def and_expr(self) -> pl.Expr:
        expr = self.not_expr()
        while self.peek("and", "name"):
            self.i += 1
            expr = expr & self.not_expr()
        return expr

    def not_expr(self) -> pl.Expr:
        if self.peek("not", "name"):
            self.i += 1
            return ~self.not_expr()
        if self.peek("(", "par"):
            self.i += 1
            expr = self.or_expr()
            if not self.peek(")", "par"):
                raise self.fail("expected ')'")
            self.i += 1
            return expr
        left, left_kind = self.operand()
        if not self.peek(kind="op"):
            if left_kind != "bool_fact":
                raise self.fail("expected a comparison operator")
            return left
        op = self.toks[self.i][1]
        self.i += 1
        right, _ = self.operand()
        return _COMPARE[op](left, right)

    def operand(self) -> tuple[pl.Expr, str]:
        if self.i >= len(self.toks):
            raise self.fail("expected a fact, a number or a string")
        kind, value, _ = self.toks[self.i]
        if kind == "num":
            self.i += 1
            return pl.lit(float(value)), "lit"
        if kind == "str":
            self.i += 1
            return pl.lit(value[1:-1]), "lit"
        if kind == "name" and value in ("true", "false"):
            self.i += 1
            return pl.lit(value == "true"), "lit"
        if kind == "name" and value not in ("and", "or", "not"):
            if value not in self.facts:
                raise self.fail(f"unknown fact {value!r}")
            self.i += 1
            return pl.col(value), "bool_fact" if self.facts[value][0] == pl.Boolean else "fact"
        raise self.fail("expected a fact, a number or a string")


def parse_condition(text: str, facts: dict, where: str = "condition") -> pl.Expr:
    """The polars Boolean expression of a `when` condition (grammar in the module docstring) over
    the columns named in `facts` (name -> (dtype, definition)); ValueError naming `where`, the
    text and the column of the problem otherwise."""
    return _Parser(text, where, facts).parse()
