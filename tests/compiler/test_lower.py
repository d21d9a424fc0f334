"""Lowering: resolved theory -> compiled-policy data (deterministic, hashed, code-free)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from pedrag.compiler.lower import (
    canonical_json,
    content_hash,
    dumps,
    lower,
    lower_expr,
)
from pedrag.dsl import ast
from pedrag.dsl.loader import load_file, load_text
from pedrag.runtime.policy.theory_set import compile_theory

ROOT = Path(__file__).resolve().parents[2]


def test_every_shipped_theory_lowers_and_loads() -> None:
    for path in sorted((ROOT / "theories").glob("*.yaml")):
        loaded = load_file(path)
        if loaded.kind != "theory":
            continue
        assert loaded.theory is not None, (path, loaded.diagnostics)
        policy = compile_theory(loaded.theory)
        assert len(policy.rules) == len(loaded.theory.rules)


def test_lowered_policy_has_format_and_a_hash_over_the_rest() -> None:
    theory = load_file(ROOT / "theories" / "socratic.yaml").theory
    assert theory is not None
    data = lower(theory)
    assert data["format"] == 1
    assert len(data["content_hash"]) == 64
    assert data["content_hash"] == content_hash(data)
    assert json.loads(dumps(data)) == data


def test_same_theory_same_bytes_and_an_edit_changes_the_hash() -> None:
    text = (ROOT / "theories" / "socratic.yaml").read_text()
    first = load_text(text, "a.yaml").theory
    second = load_text(text, "elsewhere/b.yaml").theory
    assert first is not None and second is not None
    assert dumps(lower(first)) == dumps(lower(second))  # the path is not part of the policy
    edited = load_text(text.replace("weight: 3", "weight: 4", 1), "a.yaml").theory
    assert edited is not None
    assert lower(edited)["content_hash"] != lower(first)["content_hash"]


def test_conditions_are_lowered_as_data_not_code() -> None:
    loaded = load_text(
        "pedrag: 1\ntheory: {id: t, name: T}\nmetrics:\n  x: {type: float, range: [-1, 1], source: inferred}\n"
        "  y: {type: enum, values: [a, b, c], source: inferred}\nactions:\n  act: {rung: H1, priority: 2, description: d}\n"
        "rules:\n  - {id: r, when: '0.4 <= x < 0.7 and not (y in [a, b]) or -x * 2 + 1 > 0 implies true', then: act}\n",
        "t.yaml",
    )
    assert loaded.theory is not None, loaded.diagnostics
    tree = lower(loaded.theory)["rules"][0]["when"]
    assert tree[0] == "implies"
    assert [
        "not",
        ["in", ["metric", "y"], ["list", [["enum", "a"], ["enum", "b"]]], False],
    ] in tree[1][1][0][1]
    resolved = ast.Compare((ast.MetricRef("x"), ast.Number(0.5)), ("<",))
    assert lower_expr(resolved) == ["compare", ["<"], [["metric", "x"], ["number", 0.5]]]
    with pytest.raises(TypeError, match="resolve"):
        lower_expr(ast.Name("unresolved"))


def test_ints_and_floats_keep_their_type() -> None:
    assert lower_expr(ast.Number(1)) == ["number", 1]
    assert canonical_json(lower_expr(ast.Number(1.0))) == '["number",1.0]'


EXACT = """\
pedrag: 1
theory: {id: exact, name: Exact}
metrics:
  f: {type: float, range: [0, 1], source: inferred}
  n: {type: int, range: [0, 9], source: observed}
actions:
  a: {rung: H0, priority: 5, description: A.}
rules:
  - {id: sum_equal, when: "f == 0.1 + 0.2", then: a}
  - {id: product_equal, when: "f * 3 == 0.3", then: a}
  - {id: negated, when: "0.3 - f > 0.1 * 2", then: a}
  - {id: divided, when: "0.7 <= f * 10 - 2 < 1.1", then: a}
  - {id: ints, when: "n * 2 + 1 > 4.5", then: a}
  - {id: constant, when: "0.1 + 0.2 == 0.3", then: a}
"""


def test_arithmetic_in_conditions_matches_the_compilers_exact_decimals() -> None:
    """z3 (and the brute-force oracle) read 0.1 + 0.2 as 3/10; the compiled matcher must agree
    on every decimal state, not evaluate binary floats where 0.1 + 0.2 != 0.3."""
    from tests.oracles.brute import evaluate

    loaded = load_text(EXACT, "exact.yaml")
    assert loaded.theory is not None, loaded.diagnostics
    policy = compile_theory(loaded.theory)
    for tenth in range(0, 101):
        f = tenth / 100
        for n in range(10):
            state = {"f": f, "n": n}
            expected = tuple(
                index
                for index, rule in enumerate(loaded.theory.rules)
                if evaluate(rule.when.expr, {"f": Fraction(tenth, 100), "n": n})
            )
            assert policy.matching([state]) == expected, state


DERIVED = (
    "pedrag: 1\ntheory: {id: t, name: T}\nmetrics:\n"
    "  x: {type: float, range: [0, 1], source: inferred}\nactions:\n"
    "  plan: {rung: H3, priority: 2, description: d, tags: [probe],"
    ' variants: ["A rough plan: {hint}", "Try: {outline}"]}\n'
    "  nudge: {rung: H3, priority: 2, description: d, tags: [hint],"
    ' variants: ["Look: {hint}"]}\n'
    "  ask: {rung: H1, priority: 2, description: d, tags: [probe]}\n"
    "rules:\n  - {id: r, when: 'x > 0.5', then: plan}\n"
    "  - {id: s, when: 'x <= 0.5', then: nudge}\n  - {id: u, when: 'x < 0.2', then: ask}\n"
)


def test_the_policy_names_the_tags_only_a_wording_gives() -> None:
    theory = load_text(DERIVED, "t.yaml").theory
    assert theory is not None
    actions = lower(theory)["actions"]
    # `tags` keeps its meaning (the union the runtime reads); the derived ones are named apart.
    assert actions["plan"]["tags"] == ["hint", "partial_solution", "probe"]
    assert actions["plan"]["derived_tags"] == {"hint": "hint", "partial_solution": "outline"}
    assert actions["nudge"]["tags"] == ["hint"] and "derived_tags" not in actions["nudge"]
    assert "derived_tags" not in actions["ask"]
    policy = compile_theory(theory)
    assert dict(policy.actions["plan"].derived_tags) == actions["plan"]["derived_tags"]
    assert policy.actions["nudge"].derived_tags == ()
