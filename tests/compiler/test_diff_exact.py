"""`pedrag diff` is exact or says it is not: the issue-29 repros as golden reports, and a
property test against the independent oracle of `tests/compiler/oracle.py`.

The oracle enumerates every int and cuts every float at each constant it meets (a linear
atom's constant solved at the ints in it), so its representative states visit every truth
pattern of both versions. For random theory pairs differing by one edit, every such state
where the chosen action or its probability differs must lie in a reported region, no region
may hold a state where nothing changes, the changed share must be the oracle's, and
`changed: false` only when no state changes.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pedrag.cli import main
from pedrag.compiler.diffing import FALLBACK, diff
from pedrag.dsl.loader import load_text
from tests.compiler import oracle as O
from tests.compiler.test_diff import inside
from tests.compiler.test_differential import conditions, theories

ROOT = Path(__file__).resolve().parents[2]
DATA = Path("tests/data/diff")
PAIRS = sorted({p.name.split(".")[0] for p in (ROOT / DATA).glob("*.old.yaml")})


# -- golden reports ----------------------------------------------------------------------------
def _golden(path: Path, text: str) -> None:
    if os.environ.get("PEDRAG_REGEN_GOLDEN"):
        path.write_text(text, "utf-8")
    assert path.read_text("utf-8") == text, f"{path} differs; regenerate with PEDRAG_REGEN_GOLDEN=1"


@pytest.mark.parametrize("name", PAIRS)
def test_diff_reports_match_golden_files(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    old, new = str(DATA / f"{name}.old.yaml"), str(DATA / f"{name}.new.yaml")
    text_code = main(["diff", old, new, "--exit-code"])
    _golden(ROOT / DATA / f"{name}.txt", capsys.readouterr().out)
    assert main(["diff", old, new, "--format", "json", "--all"]) == 0
    report = json.loads(capsys.readouterr().out)
    report.pop("seconds")
    _golden(ROOT / DATA / f"{name}.json", json.dumps(report, indent=2) + "\n")
    assert text_code == 1 and report["changed"] is True


def test_a_weight_edit_that_matters_at_one_point_is_a_behaviour_change(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The repro: `mastered` (1 <= mastery) gets weight 2 beside an unrelated
    # `3 * mastery - attempts` atom; at mastery == 1 the probabilities change.
    monkeypatch.chdir(ROOT)
    old, new = (
        load_text((DATA / f"weight-at-a-point.{v}.yaml").read_text(), "t.yaml")
        for v in ("old", "new")
    )
    assert old.theory is not None and new.theory is not None
    result = diff(old.theory, new.theory)
    assert result.exact and result.complete and result.listed_all
    assert [r.condition for r in result.regions] == ["mastery == 1"]
    region = result.regions[0]
    assert region.old["advance"] < region.new["advance"]
    assert result.changed_share == 0 and result.verdict == "changed"


def test_an_atom_over_two_reals_is_approximate_and_never_proves_no_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    text = (DATA / "two-real-atom.old.yaml").read_text()
    old = load_text(text, "t.yaml").theory
    assert old is not None
    moved = load_text(text.replace("a - b > 0.2", "a - b > 0.2000001"), "t.yaml").theory
    assert moved is not None
    result = diff(old, moved)
    assert not result.exact and result.approximate == ["a", "b"]
    assert not result.listed_all
    # The slices are judged at their middles: a change a hair wide is missed, and the
    # answer says it is not ruled out, never "unchanged".
    assert not result.unchanged and result.verdict in ("changed", "not ruled out")
    for region in result.regions:  # every witness does change
        assert region.old != region.new


# -- the oracle grid ---------------------------------------------------------------------------
def _choice(
    theory: O.Theory, weights: dict[str, int], state: dict[str, Any]
) -> dict[str, Fraction]:
    """The runtime's choice, from the oracle's own evaluation (rule priority is its action's)."""
    actions = {a.name: a for a in theory.actions}
    level = O.ceiling(theory, state)
    eligible = [
        (index, rule)
        for index, rule in enumerate(theory.rules)
        if O.holds(rule.when, state) and actions[rule.action].rung <= level
    ]
    if not eligible:
        return {FALLBACK: Fraction(1)}
    if theory.selection == "priority":
        _, best = min(
            eligible,
            key=lambda p: (-actions[p[1].action].priority, -weights.get(p[1].id, 1), p[0]),
        )
        return {best.action: Fraction(1)}
    masses: dict[str, Fraction] = {}
    for _, rule in eligible:
        mass = Fraction(weights.get(rule.id, 1) * actions[rule.action].priority)
        masses[rule.action] = masses.get(rule.action, Fraction(0)) + mass
    total = sum(masses.values())
    return {action: mass / total for action, mass in masses.items()}


def _render(theory: O.Theory, weights: dict[str, int]) -> str:
    text = O.render(theory)
    for rule in theory.rules:
        if weights.get(rule.id, 1) != 1:
            line = f"  - {{id: {rule.id}, "
            start = text.index(line)
            end = text.index("}\n", start)
            text = text[:end] + f", weight: {weights[rule.id]}" + text[end:]
    return text


@st.composite
def edited_pairs(draw: st.DrawFn) -> tuple[O.Theory, dict[str, int], O.Theory, dict[str, int]]:
    old = draw(theories())
    weights = {r.id: draw(st.sampled_from([1, 1, 2])) for r in old.rules}
    names = [a.name for a in old.actions]
    index = draw(st.integers(0, len(old.rules) - 1))
    rule = old.rules[index]
    rules = list(old.rules)
    new_weights = dict(weights)
    kind = draw(st.sampled_from(["condition", "action", "weight", "add", "remove", "priority"]))
    actions = old.actions
    if kind == "condition":
        rules[index] = replace(rule, when=draw(conditions(old.metrics)))
    elif kind == "action":
        rules[index] = replace(rule, action=draw(st.sampled_from(names)))
    elif kind == "weight":
        new_weights[rule.id] = draw(st.sampled_from([1, 2, 3]))
    elif kind == "add":
        rules.insert(
            index, O.Rule("added", draw(conditions(old.metrics)), draw(st.sampled_from(names)))
        )
    elif kind == "remove" and len(rules) > 1:
        del rules[index]
    else:
        target = draw(st.integers(0, len(actions) - 1))
        changed = replace(actions[target], priority=3 - actions[target].priority)
        actions = (*actions[:target], changed, *actions[target + 1 :])
    return old, weights, replace(old, rules=tuple(rules), actions=actions), new_weights


@settings(
    max_examples=int(os.environ.get("PEDRAG_CROSSCHECK_EXAMPLES", "200")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(edited_pairs())
def test_every_changed_oracle_state_lies_in_a_reported_region(
    pair: tuple[O.Theory, dict[str, int], O.Theory, dict[str, int]],
) -> None:
    old, old_weights, new, new_weights = pair
    old_text, new_text = _render(old, old_weights), _render(new, new_weights)
    loaded = [load_text(t, "t.yaml").theory for t in (old_text, new_text)]
    assert loaded[0] is not None and loaded[1] is not None, old_text + new_text
    result = diff(loaded[0], loaded[1])
    assert result.complete and result.exact and result.listed_all, old_text + new_text
    # Both versions' cuts: the states of a theory holding both rule sets (ids kept apart).
    both = replace(
        old,
        rules=(*old.rules, *(replace(r, id=f"new_{r.id}") for r in new.rules)),
        invariants=(),
    )
    changed = Fraction(0)
    any_change = False
    for state, weight in O.states(both):
        before = _choice(old, old_weights, state)
        after = _choice(new, new_weights, state)
        holders = [r for r in result.regions if inside(r, state)]
        assert len(holders) <= 1, f"regions overlap at {state}"
        if before != after:
            any_change = True
            changed += weight
            assert holders, f"{state}: {before} -> {after} is in no region\n{old_text}{new_text}"
            if holders[0].uniform:
                assert (holders[0].old, holders[0].new) == (before, after)
        else:
            assert not holders, f"{holders[0].condition} holds at {state}, where nothing changes"
    assert result.changed_share == changed, old_text + new_text
    assert result.unchanged == (not any_change), old_text + new_text
