"""The structural pair search finds exactly what the released z3 pair search finds.

`Analysis` decides rule status, implication (redundant rules) and shadowing by structure
first (boxes, known states, an index of candidate pairs) and asks z3 only for what is left;
`released_pairs.ReleasedAnalysis` is the released search that asks z3 about every pair. On
seeded generated theories (`benchmarks/theory_gen.py`, both selection modes) and on
Hypothesis' small theories, the two must report the same findings: the same rules, the same
answer (dead, blocked, redundant with which rule, shadowed or not, unknown). A shadowed rule's
named set is decided by cutting boxes, not by shrinking z3's unsat core, so where several
minimal sets exist the two may name different ones: z3 is asked here that the named set
covers the rule and that no rule of it can be dropped.
Witnesses are concrete examples and need not be the same state; each new one must be a state
where what the finding claims holds.
"""

from __future__ import annotations

import importlib.util
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from pedrag.compiler import analysis as analysis_module
from pedrag.compiler import formula as F
from pedrag.compiler.analysis import Analysis
from pedrag.dsl.loader import load_text
from tests.compiler.released_pairs import ReleasedAnalysis
from tests.compiler.test_cross_check import theories

_GEN = Path(__file__).resolve().parents[2] / "benchmarks" / "theory_gen.py"
_spec = importlib.util.spec_from_file_location("theory_gen", _GEN)
assert _spec is not None and _spec.loader is not None
theory_gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(theory_gen)

SAMPLES = int(os.environ.get("PEDRAG_PAIR_SAMPLES", "20"))


def _answers(analysis: Analysis) -> dict[str, Any]:
    statuses = {r.id: analysis.rule_status(r) for r in analysis.rules}
    return {
        "dead": sorted((i, s.dead_core) for i, s in statuses.items() if s.dead),
        "blocked": sorted(i for i, s in statuses.items() if s.blocked),
        "status": {
            i: (s.holds.status, s.eligible and s.eligible.status) for i, s in statuses.items()
        },
        "redundant": [
            (f.rules[0].id, f.rules[1].id, f.outcome.status) for f in analysis.redundant()
        ],
        "shadowed": [(f.rules[0].id, f.outcome.status) for f in analysis.shadowed()],
        "conflicts": [
            (f.rules[0].id, f.rules[1].id, f.outcome.status) for f in analysis.conflicts()
        ],
    }


def _holds_at(analysis: Analysis, node: F.Node, witness: dict[str, Any] | None) -> bool:
    assert witness is not None
    state = {k: v if isinstance(v, (bool, str)) else Fraction(str(v)) for k, v in witness.items()}
    assert node.vars <= state.keys(), (node.vars, state)
    return F.evaluate(node, state)


def _assert_minimal_cover(z3_search: Any, rule: Any, named: tuple[Any, ...]) -> None:
    """z3 (the released search's own solver): the rules `named` are eligible wherever `rule`
    is, and without any one of them they are not."""
    base = [z3_search.eligible[rule.id]]
    for left_out in (None, *named):
        tracked = [F.not_(z3_search.eligible[h.id]) for h in named if h is not left_out]
        outcome = z3_search.solve(base, tracked, witness=False)
        assert outcome.status == ("unsat" if left_out is None else "sat"), (rule.id, left_out)


def _compare(text: str) -> dict[str, Any]:
    loaded = load_text(text, "gen.yaml")
    assert loaded.ok and loaded.theory is not None, [d.message for d in loaded.diagnostics]
    analysis_module._CACHE.clear()
    new = Analysis(loaded.theory)
    old = ReleasedAnalysis(loaded.theory)
    found = _answers(new)
    assert found == _answers(old)
    for finding in new.redundant():
        if finding.outcome.sat:
            assert _holds_at(new, new.holds[finding.rules[0].id], finding.outcome.witness)
    for finding in new.shadowed():
        _assert_minimal_cover(old, finding.rules[0], finding.rules[1:])
        if finding.outcome.sat:
            rule, first, *_ = finding.rules
            assert _holds_at(new, new.eligible[rule.id], finding.outcome.witness)
            assert _holds_at(new, new.eligible[first.id], finding.outcome.witness)
    for finding in new.conflicts():
        if finding.outcome.sat:
            first, second = finding.rules
            assert _holds_at(new, new.eligible[first.id], finding.outcome.witness)
            assert _holds_at(new, new.eligible[second.id], finding.outcome.witness)
    for rule in new.rules:
        status = new.rule_status(rule)
        if status.blocked:
            assert _holds_at(new, new.holds[rule.id], status.holds.witness)
    return found


@pytest.mark.parametrize("selection", ["weighted", "priority"])
def test_structural_search_matches_the_released_search_on_generated_theories(
    selection: str,
) -> None:
    totals = {"redundant": 0, "shadowed": 0, "blocked": 0}
    for seed in range(SAMPLES):
        found = _compare(theory_gen.generate(12 + seed % 4 * 8, seed, selection))
        for key in totals:
            totals[key] += len(found[key])
    # The sample exercises what it compares (not a comparison of empty lists).
    assert totals["redundant"] > 0 and totals["blocked"] > 0
    if selection == "priority":
        assert totals["shadowed"] > 0


@settings(
    max_examples=int(os.environ.get("PEDRAG_CROSSCHECK_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(theories())
def test_structural_search_matches_the_released_search_on_small_theories(text: str) -> None:
    _compare(text)


def test_a_redundant_rule_is_found_without_asking_z3_about_the_pairs() -> None:
    text = theory_gen.generate(200, 3)
    loaded = load_text(text, "gen.yaml")
    assert loaded.theory is not None
    analysis_module._CACHE.clear()
    new = Analysis(loaded.theory)
    for rule in new.rules:
        new.rule_status(rule)
    before = new.queries
    found = new.redundant()
    old = ReleasedAnalysis(loaded.theory)
    for rule in old.rules:
        old.rule_status(rule)
    old_before = old.queries
    assert [(f.rules[0].id, f.rules[1].id) for f in found] == [
        (f.rules[0].id, f.rules[1].id) for f in old.redundant()
    ]
    assert found
    # Only pairs whose conditions are not plain boxes reach z3; the released search asked
    # it about every same-action pair one box could not settle.
    assert new.queries - before < (old.queries - old_before) / 3


def test_each_link_of_a_chained_comparison_is_translated_as_written() -> None:
    # Regression: links are temporaries, and a cache keyed by their id() handed one rule's
    # link the formula of an earlier, freed one (a live rule reported dead, or the reverse).
    rules = "\n".join(
        f'  - {{id: r{k}, when: "{k / 10:g} <= frustration < {(k + 1) / 10:g}", then: a}}'
        for k in range(9)
    )
    text = (
        "pedrag: 1\ntheory: {id: t, name: T}\n"
        "metrics:\n  frustration: {type: float, range: [0, 1], source: inferred}\n"
        "actions:\n  a: {rung: H0, priority: 1, description: D.}\n"
        f"rules:\n{rules}\n"
    )
    loaded = load_text(text, "chain.yaml")
    assert loaded.theory is not None
    analysis = Analysis(loaded.theory)
    for k, rule in enumerate(loaded.theory.rules):
        low, high = analysis.pieces(rule.when)
        assert low.node is F.cmp("frustration", ">=", Fraction(k, 10))
        assert high.node is F.cmp("frustration", "<", Fraction(k + 1, 10))
        assert not analysis.rule_status(rule).dead
