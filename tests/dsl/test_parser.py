"""The condition parser and printer: precedence, spans, errors, and the print/parse round trip."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pedrag.dsl import ast
from pedrag.dsl.parser import MAX_DEPTH, ConditionSyntaxError, parse_condition
from pedrag.dsl.printer import to_text

names = st.sampled_from(
    ["frustration", "hint_requests", "affect", "exam_active", "calm", "x_1", "mastery"]
)
numbers = st.one_of(
    st.integers(0, 1000),
    st.floats(0, 1000, allow_nan=False, allow_infinity=False).map(lambda f: round(f, 3)),
)


def atoms() -> st.SearchStrategy[ast.Expr]:
    return st.one_of(
        names.map(ast.Name),
        numbers.map(ast.Number),
        st.booleans().map(ast.Bool),
        st.integers(0, 7).map(ast.Rung),
        st.sampled_from(["affect_support", "probe"]).map(ast.String),
    )


def sums(leaf: st.SearchStrategy[ast.Expr]) -> st.SearchStrategy[ast.Expr]:
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(["+", "-"]), inner).map(lambda t: ast.Arith(*t)),
            st.tuples(inner, inner).map(lambda t: ast.Mul(*t)),
            inner.map(ast.Neg).filter(lambda n: not isinstance(n.operand, ast.Number)),
            st.tuples(names, inner).map(
                lambda t: ast.Call("trend", (ast.Name(t[0]), ast.Number(3)))
            ),
        ),
        max_leaves=4,
    )


def conditions() -> st.SearchStrategy[ast.Expr]:
    value = sums(atoms())
    comparison = st.one_of(
        st.tuples(st.lists(value, min_size=2, max_size=3), st.data())
        .map(lambda t: t[0])
        .flatmap(
            lambda operands: st.lists(
                st.sampled_from(["==", "!=", "<", "<=", ">", ">="]),
                min_size=len(operands) - 1,
                max_size=len(operands) - 1,
            ).map(lambda ops: ast.Compare(tuple(operands), tuple(ops)))
        ),
        st.tuples(value, st.lists(value, max_size=3), st.booleans()).map(
            lambda t: ast.In(t[0], ast.ListExpr(tuple(t[1])), t[2])
        ),
        names.map(ast.Name),
        st.booleans().map(ast.Bool),
    )
    return st.recursive(
        comparison,
        lambda inner: st.one_of(
            inner.map(ast.Not),
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: ast.conjoin(xs)),
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: ast.disjoin(xs)),
            st.tuples(inner, inner).map(lambda t: ast.Implies(*t)),
        ),
        max_leaves=8,
    )


@settings(max_examples=300, deadline=None)
@given(conditions())
def test_printed_ast_reparses_to_the_same_ast(tree: ast.Expr) -> None:
    text = to_text(tree)
    assert parse_condition(text) == tree, text


@settings(max_examples=300, deadline=None)
@given(conditions())
def test_printing_is_canonical(tree: ast.Expr) -> None:
    text = to_text(tree)
    assert to_text(parse_condition(text)) == text


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=60))
def test_arbitrary_text_parses_or_raises_a_positioned_syntax_error(text: str) -> None:
    try:
        parse_condition(text)
    except ConditionSyntaxError as exc:
        assert 0 <= exc.offset <= len(text)
        assert exc.message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a or b and c", ast.Or((ast.Name("a"), ast.And((ast.Name("b"), ast.Name("c")))))),
        ("not a and b", ast.And((ast.Not(ast.Name("a")), ast.Name("b")))),
        (
            "a implies b implies c",
            ast.Implies(ast.Name("a"), ast.Implies(ast.Name("b"), ast.Name("c"))),
        ),
        (
            "0.4 <= x < 0.7",
            ast.Compare((ast.Number(0.4), ast.Name("x"), ast.Number(0.7)), ("<=", "<")),
        ),
        ("rung > H2", ast.Compare((ast.Name("rung"), ast.Rung(2)), (">",))),
        (
            "x not in [a, b]",
            ast.In(ast.Name("x"), ast.ListExpr((ast.Name("a"), ast.Name("b"))), True),
        ),
        (
            "2 * x - y <= 4",
            ast.Compare(
                (
                    ast.Arith(ast.Mul(ast.Number(2), ast.Name("x")), "-", ast.Name("y")),
                    ast.Number(4),
                ),
                ("<=",),
            ),
        ),
        ("'affect_support' in tags", ast.In(ast.String("affect_support"), ast.Name("tags"))),
        (
            "trend(frustration, 3) > -0.1",
            ast.Compare(
                (
                    ast.Call("trend", (ast.Name("frustration"), ast.Number(3))),
                    ast.Neg(ast.Number(0.1)),
                ),
                (">",),
            ),
        ),
        ("android and notable", ast.And((ast.Name("android"), ast.Name("notable")))),
    ],
)
def test_precedence_and_shapes(text: str, expected: ast.Expr) -> None:
    assert parse_condition(text) == expected


def test_nodes_carry_offsets_into_the_condition() -> None:
    tree = parse_condition("frustration >= 0.7 and affect == calm")
    assert isinstance(tree, ast.And)
    right = tree.operands[1]
    assert isinstance(right, ast.Compare)
    start, end = right.operands[1].span
    assert "frustration >= 0.7 and affect == calm"[start:end] == "calm"


@pytest.mark.parametrize(
    ("text", "offset", "expects"),
    [
        ("x >= and y", 5, "a number"),
        ("x == 3 3", 7, "end of condition"),
        ("(x > 3", 6, "`)`"),
        ("x ! 3", 2, None),
        ("", 0, None),
    ],
)
def test_syntax_errors_point_at_the_offending_offset(
    text: str, offset: int, expects: str | None
) -> None:
    with pytest.raises(ConditionSyntaxError) as info:
        parse_condition(text)
    assert info.value.offset == offset
    if expects:
        assert expects in info.value.expected


def test_keywords_are_not_names() -> None:
    with pytest.raises(ConditionSyntaxError):
        parse_condition("and == 1")


def test_long_or_and_and_chains_parse_flat_without_recursion() -> None:
    disjuncts = " or ".join(f"x >= {i}" for i in range(3000))
    tree = parse_condition(disjuncts)
    assert isinstance(tree, ast.Or) and len(tree.operands) == 3000
    conjuncts = " and ".join(f"x != {i}" for i in range(3000))
    tree = parse_condition(conjuncts)
    assert isinstance(tree, ast.And) and len(tree.operands) == 3000


def test_sums_and_products_stay_left_associative_with_spans() -> None:
    text = "a - b - c * 2 * 3"
    tree = parse_condition(text)
    assert to_text(tree) == "a - b - c * 2 * 3"
    assert isinstance(tree, ast.Arith) and isinstance(tree.left, ast.Arith)
    assert isinstance(tree.right, ast.Mul) and isinstance(tree.right.left, ast.Mul)
    start, end = tree.left.span
    assert text[start:end] == "a - b"


@pytest.mark.parametrize(
    "text",
    [
        "not " * 1000 + "x",
        "(not " * 1000 + "x" + ")" * 1000,
        "-" * 1000 + "x > 0",
        " - ".join(["x"] * 3000) + " > 0",
        " * ".join(["2"] * 3000) + " > x",
        " implies ".join(["x"] * 1000),
    ],
)
def test_too_deep_nesting_is_a_syntax_error_not_a_recursion_error(text: str) -> None:
    with pytest.raises(ConditionSyntaxError) as info:
        parse_condition(text)
    assert "nested too deeply" in info.value.message
    assert 0 <= info.value.offset < len(text)


def test_nesting_up_to_the_limit_is_accepted() -> None:
    depth = MAX_DEPTH - 2
    assert isinstance(parse_condition("not " * depth + "x"), ast.Not)
    assert isinstance(parse_condition(" - ".join(["x"] * depth) + " > 0"), ast.Compare)
    # Parentheses alone add no level.
    assert parse_condition("(" * 1000 + "x > 1" + ")" * 1000) == parse_condition("x > 1")
