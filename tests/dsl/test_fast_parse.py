"""The lark-free condition reader against lark's parser: the same AST, spans included, for
every condition it reads, and a refusal (lark decides) for every text lark rejects."""

from __future__ import annotations

import random
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import yaml

from pedrag.dsl import ast
from pedrag.dsl.fast_parse import Declined, read_condition
from pedrag.dsl.parser import (
    MAX_DEPTH,
    MAX_LITERAL,
    ConditionSyntaxError,
    parse_condition,
    parse_with_lark,
)

ROOT = Path(__file__).resolve().parents[2]


def shape(node: Any) -> Any:
    """A node as nested tuples with its span (ASTs compare without spans)."""
    if isinstance(node, tuple):
        return tuple(shape(item) for item in node)
    if not hasattr(node, "__dataclass_fields__"):
        return node
    return (type(node).__name__, *((f.name, shape(getattr(node, f.name))) for f in fields(node)))


def lark_or_error(text: str) -> Any:
    try:
        return shape(parse_with_lark(text))
    except ConditionSyntaxError as exc:
        return ("error", exc.message, exc.offset)


def fast(text: str) -> Any:
    try:
        return shape(read_condition(text, MAX_DEPTH, MAX_LITERAL))
    except Declined:
        return None


def _space(rng: random.Random) -> str:
    return rng.choice(["", " ", " ", "  ", "\t", "\n "])


def _value(rng: random.Random, depth: int) -> str:
    s = lambda: _space(rng)  # noqa: E731
    roll = rng.random()
    if depth <= 0 or roll < 0.45:
        return rng.choice(
            [
                "frustration", "hints", "H3", "x_1", "true", "false", "'probe'", '"a b"',
                "3", "0.25", ".5", "1e3", "2E-2", "100", "trend(x, 3)", "mean(a)", "f()",
                "notes", "andy", "in_x", "H9", "h2",
            ]
        )  # fmt: skip
    if roll < 0.6:
        return f"-{s()}{_value(rng, depth - 1)}"
    if roll < 0.75:
        op = rng.choice(["+", "-", "*"])
        return f"{_value(rng, depth - 1)}{s()}{op}{s()}{_value(rng, depth - 1)}"
    if roll < 0.85:
        return f"({s()}{_value(rng, depth - 1)}{s()})"
    args = ", ".join(_condition(rng, depth - 1) for _ in range(rng.randint(1, 2)))
    return f"count({args})"


def _condition(rng: random.Random, depth: int) -> str:
    s = lambda: _space(rng)  # noqa: E731
    roll = rng.random()
    if depth <= 0 or roll < 0.35:
        form = rng.random()
        if form < 0.5:
            ops = [rng.choice(["==", "!=", "<", "<=", ">", ">="]) for _ in range(rng.randint(1, 2))]
            out = _value(rng, depth - 1)
            for op in ops:
                out += f"{s()}{op}{s()}{_value(rng, depth - 1)}"
            return out
        if form < 0.75:
            items = [_value(rng, 0) for _ in range(rng.randint(0, 3))]
            inside = f",{s()}".join(items) + rng.choice(["", ","])
            negated = rng.choice(["in", "not in", "not  in"])
            container = f"[{s()}{inside}{s()}]" if rng.random() < 0.85 else _value(rng, 1)
            return f"{_value(rng, 0)} {negated}{s()}{container}"
        return _value(rng, 1)
    if roll < 0.5:
        return f"not{rng.choice([' ', '  ', '('])}{_condition(rng, depth - 1)}".replace(
            "not(", "not ("
        )
    if roll < 0.75:
        joiner = rng.choice(["and", "or"])
        parts = [_condition(rng, depth - 1) for _ in range(rng.randint(2, 3))]
        return f" {joiner} ".join(parts)
    if roll < 0.85:
        return f"{_condition(rng, depth - 1)} implies {_condition(rng, depth - 1)}"
    return f"({s()}{_condition(rng, depth - 1)}{s()})"


def _mutate(rng: random.Random, text: str) -> str:
    """A near miss: one character dropped, doubled or replaced by a grammar character."""
    if not text:
        return text
    at = rng.randrange(len(text))
    roll = rng.random()
    if roll < 0.35:
        return text[:at] + text[at + 1 :]
    if roll < 0.55:
        return text[:at] + text[at] + text[at:]
    return text[:at] + rng.choice("()[],=!<>-+*.'\"&|# 9ea") + text[at + 1 :]


def generated(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        text = _condition(rng, rng.randint(0, 4))
        texts.append(text)
        texts.append(_mutate(rng, text))
    return texts


def shipped_conditions() -> list[str]:
    found: list[str] = []

    def visit(value: Any, key: str | None = None) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                visit(v, str(k))
        elif isinstance(value, list):
            for item in value:
                visit(item, key)
        elif isinstance(value, str) and key in ("when", "never", "always", "if"):
            found.append(value)

    for path in sorted((ROOT / "theories").glob("*.yaml")):
        visit(yaml.safe_load(path.read_text("utf-8")))
    return found


@pytest.mark.parametrize("seed", [1, 2])
def test_the_reader_gives_lark_s_tree_or_declines(seed: int) -> None:
    read = 0
    for text in generated(1000, seed):
        expected = lark_or_error(text)
        got = fast(text)
        if got is None:
            continue
        read += 1
        assert got == expected, text
    assert read > 600  # most well-formed conditions are read without lark


def test_every_shipped_condition_is_read_as_lark_reads_it() -> None:
    texts = shipped_conditions()
    assert len(texts) > 100
    for text in texts:
        assert fast(text) == lark_or_error(text), text


@pytest.mark.parametrize(
    "text",
    [
        "(a and b) and c",
        "((a < b))",
        "(a) + b < 3",
        "x in [,]",
        "x in []",
        "x not in [1, 2,]",
        "x < 3and y",
        "-(a) * (b) - c > 0",
        "not not (a)",
        "f(a or b, (c)) > 1",
        "a implies (b implies c) implies d",
        "((a or b)) and (c)",
        "trueish and notx or in_",
        "x in y + 1",
        "H3 < rung",
    ],
)
def test_spans_follow_lark_s_position_propagation(text: str) -> None:
    assert fast(text) == lark_or_error(text)


@pytest.mark.parametrize(
    "text",
    [
        "a && b",
        "a = 1",
        "1e400 > x",
        "x > 1e16",
        "a not b",
        "a < b in [1]",
        "not " * 70 + "a",
        " + ".join(["a"] * 70) + " > 1",
        "a\u00a0and b",
        "f(a,)",
        "1. > x",
        "",
    ],
)
def test_errors_and_limits_are_left_to_lark(text: str) -> None:
    assert fast(text) is None
    if text:
        with pytest.raises(ConditionSyntaxError):
            parse_condition(text)


def test_deep_parentheses_are_left_to_lark_too() -> None:
    text = "(" * 70 + "a" + ")" * 70  # no tree node per pair: lark accepts it
    assert fast(text) is None
    assert parse_condition(text) == ast.Name("a")
