"""Condition text -> AST without lark, for well-formed conditions (front-end stage).

Takes one condition's text; gives the AST lark's parser (`dsl/parser.py`) would give, spans
included, or raises `Declined` for anything it does not read with certainty: a syntax error,
a number too large, nesting near `MAX_DEPTH`, a character outside the grammar. The caller
then asks lark, which stays the grammar's reference and the only reporter of syntax errors.

Why: on a cold check of a 5,000-rule theory lark's LALR parser with position propagation was
a fifth of the CPU (about 2 ms a condition). This is a recursive-descent reading of the same
grammar (`grammar/condition.lark`), about 20 times faster.
`tests/dsl/test_fast_parse.py` compares the two, spans included, on generated conditions
and on every condition of the shipped theories.

Spans follow lark's position propagation: a node built from the parser's positions (a
comparison, `and`, `not`, a list, a call, `-x`) runs from the start of its first child's
*container* to the end of its last one, where a parenthesised expression's container is its
outermost parentheses; names, numbers and strings span their token; a sum or product spans
its outer operands' own spans.
"""

from __future__ import annotations

import re

from pedrag.dsl import ast
from pedrag.kernel.errors import PedragError
from pedrag.kernel.rungs import is_rung_name, parse_rung

KEYWORDS = frozenset({"and", "or", "not", "in", "implies", "true", "false"})

# The grammar's terminals, in the order lark's basic lexer tries them at one position.
_TOKEN = re.compile(
    r"(?P<ws>[ \t\f\r\n]+)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\.\d+)"
    r"|(?P<string>'[^'\n]*'|\"[^\"\n]*\")"
    r"|(?P<op>==|!=|<=|>=|<|>)"
    r"|(?P<punct>[-+*()\[\],])"
)


class Declined(PedragError):  # noqa: N818 - not an error: the caller asks lark instead
    """This reader does not vouch for the text; lark's parser decides."""


# (kind, text, start, end); kind is a keyword, "name", "number", "string", "op" or the
# punctuation itself.
Token = tuple[str, str, int, int]
_END: Token = ("$end", "", -1, -1)


def _tokens(text: str) -> list[Token]:
    out: list[Token] = []
    position, size = 0, len(text)
    match = _TOKEN.match
    while position < size:
        found = match(text, position)
        if found is None:
            raise Declined
        kind = found.lastgroup
        value = found.group()
        end = found.end()
        if kind == "name" and value in KEYWORDS:
            kind = value
        elif kind == "punct":
            kind = value
        if kind != "ws":
            out.append((kind or "", value, position, end))  # type: ignore[arg-type]
        position = end
    return out


class _Reader:
    """Recursive descent over the token list. Each rule returns (node, start, end, height):
    the node's container (the extent lark's position propagation gives its parent) and the
    height of lark's tree under it (what `lark_parse._check_depth` measures)."""

    def __init__(self, text: str, limit: int, max_literal: float) -> None:
        self.tokens = _tokens(text)
        self.index = 0
        self.limit = limit
        self.max_literal = max_literal
        self.nesting = 0

    def peek(self, ahead: int = 0) -> Token:
        at = self.index + ahead
        return self.tokens[at] if at < len(self.tokens) else _END

    def take(self, kind: str) -> Token:
        token = self.peek()
        if token[0] != kind:
            raise Declined
        self.index += 1
        return token

    def height(self, height: int) -> int:
        if height >= self.limit:
            raise Declined
        return height

    # expr: or_expr ("implies" expr)?
    def expr(self) -> tuple[ast.Expr, int, int, int]:
        self.nesting += 1
        if self.nesting > self.limit:
            raise Declined
        left, start, end, height = self.or_expr()
        if self.peek()[0] == "implies":
            self.index += 1
            right, _, end, right_height = self.expr()
            node: ast.Expr = ast.Implies(left, right, span=(start, end))
            height = self.height(1 + max(height, right_height))
            left = node
        self.nesting -= 1
        return left, start, end, height

    def or_expr(self) -> tuple[ast.Expr, int, int, int]:
        first = self.and_expr()
        if self.peek()[0] != "or":
            return first
        items, height = [first[0]], first[3]
        end = first[2]
        while self.peek()[0] == "or":
            self.index += 1
            node, _, end, child = self.and_expr()
            items.append(node)
            height = max(height, child)
        joined = ast.disjoin(items)
        return _with_span(joined, (first[1], end)), first[1], end, self.height(1 + height)

    def and_expr(self) -> tuple[ast.Expr, int, int, int]:
        first = self.not_expr()
        if self.peek()[0] != "and":
            return first
        items, height = [first[0]], first[3]
        end = first[2]
        while self.peek()[0] == "and":
            self.index += 1
            node, _, end, child = self.not_expr()
            items.append(node)
            height = max(height, child)
        joined = ast.conjoin(items)
        return _with_span(joined, (first[1], end)), first[1], end, self.height(1 + height)

    def not_expr(self) -> tuple[ast.Expr, int, int, int]:
        token = self.peek()
        if token[0] == "not":
            self.index += 1
            self.nesting += 1
            if self.nesting > self.limit:
                raise Declined
            operand, _, end, height = self.not_expr()
            self.nesting -= 1
            return ast.Not(operand, span=(token[2], end)), token[2], end, self.height(1 + height)
        return self.comparison()

    def comparison(self) -> tuple[ast.Expr, int, int, int]:
        first = self.sum()
        kind = self.peek()[0]
        if kind == "op":
            operands, ops, height, end = [first[0]], [], first[3], first[2]
            while self.peek()[0] == "op":
                ops.append(self.take("op")[1])
                node, _, end, child = self.sum()
                operands.append(node)
                height = max(height, child)
            span = (first[1], end)
            compare = ast.Compare(tuple(operands), tuple(ops), span=span)
            return compare, first[1], end, self.height(1 + height)
        negated = kind == "not" and self.peek(1)[0] == "in"
        if kind == "in" or negated:
            self.index += 2 if negated else 1
            container, _, end, child = self.list_() if self.peek()[0] == "[" else self.sum()
            node = ast.In(first[0], container, negated, span=(first[1], end))
            return node, first[1], end, self.height(1 + max(first[3], child))
        return first

    def list_(self) -> tuple[ast.Expr, int, int, int]:
        start = self.take("[")[2]
        items: list[ast.Expr] = []
        height = 0
        if self.peek()[0] == ",":
            self.index += 1
        elif self.peek()[0] != "]":
            while True:
                node, _, _, child = self.sum()
                items.append(node)
                height = max(height, child)
                if self.peek()[0] != ",":
                    break
                self.index += 1
                if self.peek()[0] == "]":
                    break
        end = self.take("]")[3]
        node = ast.ListExpr(tuple(items), span=(start, end))
        return node, start, end, self.height(1 + height)

    def sum(self) -> tuple[ast.Expr, int, int, int]:
        first = self.product()
        node, start, end, height = first
        count = 1
        while self.peek()[0] in ("+", "-"):
            op = self.peek()[1]
            self.index += 1
            right, _, end, child = self.product()
            node = ast.Arith(node, op, right, span=(node.span[0], right.span[1]))
            height = max(height, child)
            count += 1
        if count == 1:
            return first
        return node, start, end, self.height(count - 1 + height)  # lark: 1 + (count - 2)

    def product(self) -> tuple[ast.Expr, int, int, int]:
        first = self.unary()
        node, start, end, height = first
        count = 1
        while self.peek()[0] == "*":
            self.index += 1
            right, _, end, child = self.unary()
            node = ast.Mul(node, right, span=(node.span[0], right.span[1]))
            height = max(height, child)
            count += 1
        if count == 1:
            return first
        return node, start, end, self.height(count - 1 + height)

    def unary(self) -> tuple[ast.Expr, int, int, int]:
        token = self.peek()
        if token[0] == "-":
            self.index += 1
            self.nesting += 1
            if self.nesting > self.limit:
                raise Declined
            operand, _, end, height = self.unary()
            self.nesting -= 1
            return ast.Neg(operand, span=(token[2], end)), token[2], end, self.height(1 + height)
        return self.atom()

    def atom(self) -> tuple[ast.Expr, int, int, int]:
        token = self.peek()
        kind, value, start, end = token
        self.index += 1
        if kind == "number":
            number: int | float = float(value) if any(c in value for c in ".eE") else int(value)
            if not abs(number) <= self.max_literal:
                raise Declined
            return ast.Number(number, span=(start, end)), start, end, 1
        if kind == "name":
            if self.peek()[0] == "(":
                return self.call(token)
            if is_rung_name(value):
                return ast.Rung(parse_rung(value), span=(start, end)), start, end, 1
            return ast.Name(value, span=(start, end)), start, end, 1
        if kind == "true" or kind == "false":
            return ast.Bool(kind == "true", span=(start, end)), start, end, 1
        if kind == "string":
            return ast.String(value[1:-1], span=(start, end)), start, end, 1
        if kind == "(":
            node, _, _, height = self.expr()
            close = self.take(")")
            return node, start, close[3], height
        raise Declined

    def call(self, name: Token) -> tuple[ast.Expr, int, int, int]:
        self.take("(")
        args: list[ast.Expr] = []
        height = 0
        if self.peek()[0] != ")":
            while True:
                node, _, _, child = self.expr()
                args.append(node)
                height = max(height, child)
                if self.peek()[0] != ",":
                    break
                self.index += 1
        end = self.take(")")[3]
        node = ast.Call(name[1], tuple(args), span=(name[2], end))
        return node, name[2], end, self.height(1 + height)


def _with_span(node: ast.Expr, span: tuple[int, int]) -> ast.Expr:
    from dataclasses import replace

    return replace(node, span=span)


def read_condition(text: str, max_depth: int, max_literal: float) -> ast.Expr:
    """The AST of a well-formed condition, as lark's parser gives it; `Declined` otherwise
    (then lark decides, and reports any error). Declines nesting within a few levels of
    `max_depth` and numbers beyond `max_literal` (`parser.MAX_DEPTH`, `parser.MAX_LITERAL`),
    so those limits are lark's side to enforce and word."""
    reader = _Reader(text, max_depth - 2, max_literal)
    if not reader.tokens:
        raise Declined
    node = reader.expr()[0]
    if reader.index != len(reader.tokens):
        raise Declined
    return node


__all__ = ["Declined", "read_condition"]
