"""Condition text -> AST, with offsets, for the grammar shipped in `grammar/`.

Front end. Takes a condition's text; gives its AST, read by the recursive-descent reader
(`fast_parse`) when it is certainly well formed, else by the grammar's LALR parser
(`lark_parse`, imported only then), remembered by text (`remembering`). Syntax errors raise
`ConditionSyntaxError` carrying the offset and what the parser expected, which the loader
turns into a diagnostic at the YAML file's line and column.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from importlib import resources
from typing import Any, Protocol

from pedrag.dsl import ast
from pedrag.dsl.fast_parse import Declined, read_condition
from pedrag.kernel.errors import PedragError
from pedrag.kernel.suggest import phrase

# How deeply a condition may nest (`not not ...`, parentheses inside arithmetic, a chain of
# `implies`, a long sum). Every later stage (resolution, z3 encoding, lowering, the runtime's
# generated Python, whose parser allows 200 nested parentheses) walks the tree recursively, so
# the limit is enforced once, here, where it can be reported at the offending column.
MAX_DEPTH = 64

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


def tables_path() -> str | None:
    """Where `keep_tables` asked the LALR tables to be kept (None: not kept)."""
    return _TABLES[0] if _TABLES else None


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
    tested against, and the only reporter of syntax errors). lark is imported only here: a
    check whose conditions the fast reader reads (or the cache remembers) never loads it."""
    from pedrag.dsl.lark_parse import parse

    return parse(text)
