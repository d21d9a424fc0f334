"""Condition text -> AST, with offsets, using the Lark grammar shipped in `grammar/`.

One LALR parser is built once per process (a few milliseconds) and reused. Syntax errors
raise `ConditionSyntaxError` carrying the offset and what the parser expected, which the
loader turns into a diagnostic at the YAML file's line and column.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from importlib import resources
from typing import Any, Protocol

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)

from pedrag.dsl import ast
from pedrag.dsl.fast_parse import Declined, read_condition
from pedrag.kernel.errors import PedragError
from pedrag.kernel.rungs import is_rung_name, parse_rung
from pedrag.kernel.suggest import phrase

# How deeply a condition may nest (`not not ...`, parentheses inside arithmetic, a chain of
# `implies`, a long sum). Every later stage (resolution, z3 encoding, lowering, the runtime's
# generated Python, whose parser allows 200 nested parentheses) walks the tree recursively, so
# the limit is enforced once, here, where it can be reported at the offending column.
MAX_DEPTH = 64

_TERMINAL_NAMES = {
    "NAME": "a name",
    "NUMBER": "a number",
    "STRING": "a quoted string",
    "COMP_OP": "a comparison",
    "PLUS": "`+`",
    "LPAR": "`(`",
    "RPAR": "`)`",
    "LSQB": "`[`",
    "RSQB": "`]`",
    "COMMA": "`,`",
    "STAR": "`*`",
    "MINUS": "`-`",
    "AND": "`and`",
    "OR": "`or`",
    "NOT": "`not`",
    "IN": "`in`",
    "IMPLIES": "`implies`",
    "TRUE": "`true`",
    "FALSE": "`false`",
    "$END": "end of condition",
}


MAX_LITERAL = 1e15
"""The largest magnitude a number in a condition may have: metric ranges are finite, and a
literal beyond exact float range would make comparisons (and the solver's rationals) lie."""


class ConditionSyntaxError(PedragError):
    def __init__(
        self,
        message: str,
        offset: int,
        expected: tuple[str, ...] = (),
        suggestion: str | None = None,
        length: int = 1,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.expected = expected
        self.suggestion = suggestion  # a did-you-mean for a slip from another language
        self.length = length  # how many characters the slip takes


# Operators from Python, C, JavaScript or SQL that designers write out of habit, and what the
# condition language says instead. Longest first: `=>` before `=`.
_SLIPS = (
    ("&&", "and", "`&&` is written `and` here"),
    ("||", "or", "`||` is written `or` here"),
    ("=>", ">=", "`=>` is not an operator"),
    ("=<", "<=", "`=<` is not an operator"),
    ("<>", "!=", "`<>` is not an operator"),
    ("&", "and", "`&` is written `and` here"),
    ("|", "or", "`|` is written `or` here"),
    ("!", "not", "`!` is written `not` here"),
    ("=", "==", "`=` is not a comparison"),
)


def _slip(text: str, position: int) -> tuple[int, int, str, str] | None:
    """(start, length, message, did-you-mean) when the text at `position` (where the lexer
    stopped) is an operator from another language."""
    for written, meant, message in _SLIPS:
        # `<>` and `=<` fail on their second character: look one back too.
        for start in (position, position - 1):
            if start < 0 or not text.startswith(written, start):
                continue
            if written == "!" and text.startswith("!=", start):
                continue
            if written == "=" and (
                text.startswith("==", start) or (start > 0 and text[start - 1] in "<>!=")
            ):
                continue
            return start, len(written), message, phrase(meant)
    return None


@lru_cache(maxsize=1)
def grammar_text() -> str:
    """The condition grammar (what a remembered parse depends on besides its text)."""
    return resources.files("pedrag.grammar").joinpath("condition.lark").read_text("utf-8")


_TABLES: list[str] = []


def keep_tables(path: str) -> None:
    """Keep the grammar's LALR tables in the file at `path` between processes (lark's
    `cache`, which stores a hash of the grammar and options with them and rebuilds them on a
    mismatch or a damaged file): building them is most of the time a re-check spends parsing
    the one condition an edit changed. Takes effect if called before the first parse."""
    _TABLES[:] = [path]


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(
        grammar_text(),
        parser="lalr",
        lexer="basic",
        propagate_positions=True,
        maybe_placeholders=False,
        cache=_TABLES[0] if _TABLES else False,
    )


def _span(meta_or_token: object) -> tuple[int, int]:
    start = getattr(meta_or_token, "start_pos", None)
    end = getattr(meta_or_token, "end_pos", None)
    if start is None or end is None:
        return ast.NO_SPAN
    return (int(start), int(end))


@v_args(meta=True)
class _ToAst(Transformer):  # type: ignore[type-arg]
    def number(self, meta, children):  # type: ignore[no-untyped-def]
        token = children[0]
        text = str(token)
        value: int | float = float(text) if any(c in text for c in ".eE") else int(text)
        if not abs(value) <= MAX_LITERAL:  # also catches 1e400, which reads as inf
            raise ConditionSyntaxError(
                f"the number `{text if len(text) <= 24 else text[:20] + '...'}` is too large "
                f"(a condition's numbers are at most {MAX_LITERAL:.0e} in magnitude)",
                int(token.start_pos or 0),
                length=len(text),
            )
        return ast.Number(value, span=_span(token))

    def true(self, meta, children):  # type: ignore[no-untyped-def]
        return ast.Bool(True, span=_span(meta))

    def false(self, meta, children):  # type: ignore[no-untyped-def]
        return ast.Bool(False, span=_span(meta))

    def string(self, meta, children):  # type: ignore[no-untyped-def]
        return ast.String(str(children[0])[1:-1], span=_span(children[0]))

    def name(self, meta, children):  # type: ignore[no-untyped-def]
        token = children[0]
        text = str(token)
        if is_rung_name(text):
            return ast.Rung(parse_rung(text), span=_span(token))
        return ast.Name(text, span=_span(token))

    def call(self, meta, children):  # type: ignore[no-untyped-def]
        return ast.Call(str(children[0]), tuple(children[1:]), span=_span(meta))

    def neg(self, meta, children):  # type: ignore[no-untyped-def]
        return ast.Neg(children[-1], span=_span(meta))

    def sum(self, meta, children):  # type: ignore[no-untyped-def]
        # operand (op operand)+, folded left-associatively: a - b - c is (a - b) - c.
        node = children[0]
        for op, right in zip(children[1::2], children[2::2], strict=True):
            node = ast.Arith(node, str(op), right, span=(node.span[0], right.span[1]))
        return node

    def product(self, meta, children):  # type: ignore[no-untyped-def]
        node = children[0]
        for right in children[1:]:
            node = ast.Mul(node, right, span=(node.span[0], right.span[1]))
        return node

    def compare(self, meta, children):  # type: ignore[no-untyped-def]
        operands = tuple(c for c in children if not isinstance(c, Token))
        ops = tuple(str(c) for c in children if isinstance(c, Token))
        return ast.Compare(operands, ops, span=_span(meta))

    def list(self, meta, children):  # type: ignore[no-untyped-def]
        return ast.ListExpr(tuple(c for c in children if c is not None), span=_span(meta))

    def in_(self, meta, children):  # type: ignore[no-untyped-def]
        return ast.In(children[0], children[1], False, span=_span(meta))

    def not_in(self, meta, children):  # type: ignore[no-untyped-def]
        return ast.In(children[0], children[1], True, span=_span(meta))

    def not_(self, meta, children):  # type: ignore[no-untyped-def]
        return ast.Not(children[0], span=_span(meta))

    def and_expr(self, meta, children):  # type: ignore[no-untyped-def]
        node = ast.conjoin(list(children))
        return _respan(node, _span(meta))

    def or_expr(self, meta, children):  # type: ignore[no-untyped-def]
        node = ast.disjoin(list(children))
        return _respan(node, _span(meta))

    def implies(self, meta, children):  # type: ignore[no-untyped-def]
        return ast.Implies(children[0], children[1], span=_span(meta))


def _respan(node: ast.Expr, span: tuple[int, int]) -> ast.Expr:
    from dataclasses import replace

    return replace(node, span=span)


def _describe_expected(expected: set[str] | frozenset[str]) -> tuple[str, ...]:
    names = sorted(
        {_TERMINAL_NAMES.get(e, f"`{e.lower()}`") for e in expected if not e.startswith("__")}
    )
    return tuple(names)


def _check_depth(tree: Tree) -> None:  # type: ignore[type-arg]
    """Reject a parse tree that nests more than MAX_DEPTH levels, without recursing.

    A flat chain of `and`/`or` costs one level; `a + b + c` folds into nested binary nodes, so
    a sum or product of k operands costs k - 1 levels.
    """
    stack: list[tuple[Tree, int]] = [(tree, 1)]  # type: ignore[type-arg]
    while stack:
        node, depth = stack.pop()
        if node.data in ("sum", "product"):
            depth += sum(1 for c in node.children if not isinstance(c, Token)) - 2
        if depth > MAX_DEPTH:
            offset = getattr(node.meta, "start_pos", 0) if not node.meta.empty else 0
            raise ConditionSyntaxError(
                f"condition is nested too deeply (more than {MAX_DEPTH} levels); "
                "simplify it or split it across rules",
                int(offset or 0),
            )
        stack.extend((child, depth + 1) for child in node.children if isinstance(child, Tree))


class ParsedConditions(Protocol):
    """Where parsed conditions are remembered by their text (a dict, an on-disk cache shard)."""

    def get(self, text: str, default: Any = None, /) -> Any: ...
    def __setitem__(self, text: str, expr: ast.Expr, /) -> None: ...


_REMEMBERED: ContextVar[ParsedConditions | None] = ContextVar("parsed_conditions", default=None)


@contextmanager
def remembering(parsed: ParsedConditions) -> Iterator[None]:
    """Parse with `parsed` as a memo: a condition's AST depends on its text alone (spans are
    offsets into that text), so a re-check after a one-rule edit parses only that rule.
    Failed parses are never remembered: their diagnostics are made afresh."""
    token = _REMEMBERED.set(parsed)
    try:
        yield
    finally:
        _REMEMBERED.reset(token)


def parse_condition(text: str) -> ast.Expr:
    """Parse one condition. Raises ConditionSyntaxError with the failing offset."""
    memo = _REMEMBERED.get()
    if memo is not None:
        known = memo.get(text)
        if known is not None:
            return known  # type: ignore[no-any-return]
        expr = _parse_condition(text)
        memo[text] = expr
        return expr
    return _parse_condition(text)


def _parse_condition(text: str) -> ast.Expr:
    if not text.strip():
        raise ConditionSyntaxError("empty condition", 0, ("a condition",))
    try:
        return read_condition(text, MAX_DEPTH, MAX_LITERAL)
    except Declined:
        return parse_with_lark(text)  # not certainly well formed: lark decides, words errors


def parse_with_lark(text: str) -> ast.Expr:
    """`parse_condition` by the grammar's LALR parser alone (the reference `fast_parse` is
    tested against)."""
    if not text.strip():
        raise ConditionSyntaxError("empty condition", 0, ("a condition",))
    try:
        tree = _parser().parse(text)
    except UnexpectedCharacters as exc:
        position = exc.pos_in_stream or 0
        slip = _slip(text, position)
        if slip is not None:
            start, length, message, suggestion = slip
            raise ConditionSyntaxError(
                message, start, _describe_expected(exc.allowed or set()), suggestion, length
            ) from None
        raise ConditionSyntaxError(
            f"unexpected character {text[position]!r}",
            position,
            _describe_expected(exc.allowed or set()),
        ) from None
    except UnexpectedEOF as exc:
        raise ConditionSyntaxError(
            "condition ends too early",
            len(text.rstrip()),
            _describe_expected(set(exc.expected)),
        ) from None
    except UnexpectedToken as exc:
        token = exc.token
        if token.type == "$END":
            offset = len(text.rstrip())
            found = "end of condition"
        else:
            offset = token.start_pos or 0
            found = repr(str(token))
            slip = _slip(text, offset)
            if slip is not None:
                start, length, message, suggestion = slip
                raise ConditionSyntaxError(
                    message, start, _describe_expected(exc.expected or set()), suggestion, length
                ) from None
        raise ConditionSyntaxError(
            f"unexpected {found}",
            offset,
            _describe_expected(exc.expected or set()),
        ) from None
    except UnexpectedInput as exc:  # pragma: no cover - other lark errors
        raise ConditionSyntaxError(str(exc), getattr(exc, "pos_in_stream", 0) or 0) from None
    if isinstance(tree, Tree):
        _check_depth(tree)
        try:
            return _ToAst().transform(tree)  # type: ignore[no-any-return]
        except VisitError as exc:  # lark wraps what a callback raises
            if isinstance(exc.orig_exc, ConditionSyntaxError):
                raise exc.orig_exc from None
            raise
    raise ConditionSyntaxError("not a condition", 0)  # pragma: no cover
