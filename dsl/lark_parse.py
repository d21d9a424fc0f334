"""Condition text -> AST by the condition grammar's LALR parser (lark).

Front end. Takes a condition's text that the fast reader (`fast_parse`) declined, or that a
test compares it on; gives its AST with spans, or raises `ConditionSyntaxError` with the
offset and what the parser expected. Why a module of its own: importing lark (and `regex`,
which it imports) is a tenth of a re-check's imports, and a check whose conditions are well
formed or remembered never needs it (`parser.parse_with_lark` imports this module). One LALR
parser is built once per process and its tables kept between processes (`parser.keep_tables`).
"""

from __future__ import annotations

from functools import lru_cache

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)

from pedrag.dsl import ast
from pedrag.dsl.parser import (
    MAX_DEPTH,
    MAX_LITERAL,
    ConditionSyntaxError,
    _slip,
    grammar_text,
    tables_path,
)
from pedrag.kernel.rungs import is_rung_name, parse_rung

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


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(
        grammar_text(),
        parser="lalr",
        lexer="basic",
        propagate_positions=True,
        maybe_placeholders=False,
        cache=tables_path() or False,
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


def parse(text: str) -> ast.Expr:
    """`parse_condition` by the grammar's LALR parser alone (the reference `fast_parse` is
    tested against)."""
    if not text.strip():
        raise ConditionSyntaxError("empty condition", 0, ("a condition",))
    try:
        tree = _parser().parse(text)
    except UnexpectedCharacters as exc:
        position = exc.pos_in_stream or 0
        _raise_slip(text, position, exc.allowed or set())
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
            _raise_slip(text, offset, exc.expected or set())
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


def _raise_slip(text: str, offset: int, expected: set[str]) -> None:
    """Raise the slip's own message when the error at ``offset`` is a known slip (``=`` for
    ``==``, ``&&``, ...); return otherwise, so the caller reports the plain syntax error."""
    slip = _slip(text, offset)
    if slip is not None:
        start, length, message, suggestion = slip
        raise ConditionSyntaxError(
            message, start, _describe_expected(expected), suggestion, length
        ) from None
