"""`pedrag diff`: the changed regions equal brute-force enumeration, and realistic edits of
the shipped socratic theory are answered exactly, region by region."""

from __future__ import annotations

import json
import os
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pedrag.cli import main
from pedrag.compiler import formula as F
from pedrag.compiler.diff_boxes import Interval
from pedrag.compiler.diffing import FALLBACK, DiffResult, Region, diff
from pedrag.compiler.encode import Translator
from pedrag.compiler.measure import Measure
from pedrag.dsl.ir import ResolvedTheory
from pedrag.dsl.loader import load_text
from tests.compiler.test_cross_check import conditions, theories
from tests.oracles.brute import ceiling, evaluate, states

ROOT = Path(__file__).resolve().parents[2]
SOCRATIC = (ROOT / "theories" / "socratic.yaml").read_text()
RULE = re.compile(r'^  - \{id: (r\d+), when: "([^"]*)", then: (a\d)(.*)\}$')


def load(text: str) -> ResolvedTheory:
    loaded = load_text(text, "t.yaml")
    assert loaded.ok and loaded.theory is not None, [d.message for d in loaded.diagnostics]
    return loaded.theory


# -- the oracle ----------------------------------------------------------------------------
def brute_choice(theory: ResolvedTheory, state: dict[str, Any]) -> dict[str, Fraction]:
    """The runtime's choice in one state, from the condition ASTs (runtime/policy/compiled.py)."""
    level = ceiling(theory, state)
    eligible = [
        r
        for r in theory.rules
        if evaluate(r.when.expr, state) and theory.actions[r.action].rung <= level
    ]
    if not eligible:
        return {FALLBACK: Fraction(1)}
    if theory.selection == "priority":
        best = min(eligible, key=lambda r: (-r.priority, -Fraction(str(r.weight)), r.index))
        return {best.action: Fraction(1)}
    masses: dict[str, Fraction] = {}
    for rule in eligible:
        masses[rule.action] = (
            masses.get(rule.action, Fraction(0)) + Fraction(str(rule.weight)) * rule.priority
        )
    total = sum(masses.values())
    return {a: m / total for a, m in masses.items()}


def inside(region: Region, state: dict[str, Any]) -> bool:
    for var, part in region.box.items():
        value = state[var]
        if isinstance(part, Interval):
            number = Fraction(value)
            if not (
                (part.low < number or (number == part.low and part.low_closed))
                and (number < part.high or (number == part.high and part.high_closed))
            ):
                return False
        elif value not in part:
            return False
    return True


def assert_agrees_with_brute_force(
    old: ResolvedTheory, new: ResolvedTheory, result: DiffResult
) -> None:
    assert result.complete and result.exact and result.listed_all
    all_states = states(old)
    changed = 0
    for state in all_states:
        before, after = brute_choice(old, state), brute_choice(new, state)
        holders = [r for r in result.regions if inside(r, state)]
        assert len(holders) <= 1, f"regions overlap at {state}"
        if before != after:
            changed += 1
            assert holders, f"the change at {state} is in no region: {before} -> {after}"
            if holders[0].uniform:
                assert (holders[0].old, holders[0].new) == (before, after)
        else:
            assert not holders, f"{holders[0].condition} holds at {state}, where nothing changes"
    assert result.changed_share == Fraction(changed, len(all_states))
    for region in result.regions:
        witness = {k: v for k, v in region.witness.items() if k in old.metrics}
        assert inside(region, witness)
        assert (region.old, region.new) == (brute_choice(old, witness), brute_choice(new, witness))


# -- generated theories and edits ------------------------------------------------------------
@st.composite
def edited(draw: st.DrawFn) -> tuple[str, str]:
    """A generated theory and a version of it with a few realistic edits."""
    text = draw(theories())
    lines = text.splitlines()
    highs = {
        m.group(1): int(m.group(2))
        for m in (re.match(r"  (n\d): \{type: int, range: \[0, (\d+)\]", line) for line in lines)
        if m
    }
    rule_lines = [i for i, line in enumerate(lines) if RULE.match(line)]
    actions = sorted({a for line in lines for a in re.findall(r"^  (a\d): \{rung", line)})
    for _ in range(draw(st.integers(1, 3))):
        if not rule_lines:  # every rule line was rewritten into a form RULE does not parse
            break
        kind = draw(
            st.sampled_from(
                [
                    "condition",
                    "action",
                    "weight",
                    "priority",
                    "add",
                    "remove",
                    "rename",
                    "reorder",
                    "rung",
                    "ceiling",
                    "selection",
                ]
            )
        )
        index = draw(st.sampled_from(rule_lines))
        match = RULE.match(lines[index])
        if match is None:
            continue
        rule_id, when, action, extra = match.groups()
        if kind == "condition":
            when = draw(conditions(highs))
        elif kind == "action":
            action = draw(st.sampled_from(actions))
        elif kind == "weight":
            extra = (
                re.sub(r", weight: \d+", "", extra)
                + f", weight: {draw(st.sampled_from([1, 2, 3]))}"
            )
        elif kind == "priority":
            extra = re.sub(r", priority: \d+", "", extra) + f", priority: {draw(st.integers(1, 3))}"
        elif kind == "add":
            new_id = f"r{len(lines)}x"
            lines.insert(
                index,
                f'  - {{id: {new_id}, when: "{draw(conditions(highs))}", then: {draw(st.sampled_from(actions))}}}',
            )
            rule_lines = [i for i, line in enumerate(lines) if RULE.match(line)]
            continue
        elif kind == "remove" and len(rule_lines) > 1:
            del lines[index]
            rule_lines = [i for i, line in enumerate(lines) if RULE.match(line)]
            continue
        elif kind == "rename":
            rule_id = rule_id + "b"
        elif kind == "reorder" and len(rule_lines) > 1:
            other = draw(st.sampled_from(rule_lines))
            lines[index], lines[other] = lines[other], lines[index]
            continue
        elif kind == "rung":
            target = draw(st.sampled_from(actions))
            lines = [
                re.sub(r"rung: H\d", f"rung: H{draw(st.integers(0, 7))}", line)
                if line.startswith(f"  {target}: {{rung")
                else line
                for line in lines
            ]
            continue
        elif kind == "ceiling":
            lines = [
                re.sub(
                    r"(at_most|at_least|set): H\d",
                    lambda m: f"{m.group(1)}: H{draw(st.integers(0, 7))}",
                    line,
                )
                if line.startswith("    - {when:")
                else re.sub(r"start: H\d", f"start: H{draw(st.integers(0, 7))}", line)
                for line in lines
            ]
            continue
        elif kind == "selection":
            lines = [
                line.replace("weighted", "priority") if line.startswith("selection:") else line
                for line in lines
            ]
            continue
        lines[index] = f'  - {{id: {rule_id}, when: "{when}", then: {action}{extra}}}'
    return text, "\n".join(lines) + "\n"


@settings(
    max_examples=int(os.environ.get("PEDRAG_CROSSCHECK_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(edited())
def test_diff_regions_equal_brute_force_enumeration(pair: tuple[str, str]) -> None:
    old, new = load(pair[0]), load(pair[1])
    assert_agrees_with_brute_force(old, new, diff(old, new))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(theories())
def test_a_theory_does_not_differ_from_itself(text: str) -> None:
    result = diff(load(text), load(text))
    assert not result.regions and result.changed_share == 0 and result.complete


# -- small fixed cases -----------------------------------------------------------------------
BASE = """\
pedrag: 1
theory: {id: t, name: T}
selection: SELECTION
metrics:
  frustration: {type: float, range: [0, 1], source: inferred}
  hints: {type: int, range: [0, 5], source: observed}
  mood: {type: enum, values: [calm, frustrated, bored], source: inferred}
actions:
  encourage: {rung: H0, priority: 5, description: E.}
  probe: {rung: H1, priority: 5, description: P.}
  hint: {rung: H2, priority: 4, description: H.}
rules:
  - {id: calm, when: "frustration < 0.8 and mood != frustrated", then: probe}
  - {id: upset, when: "frustration >= 0.8", then: encourage}
  - {id: asked, when: "hints >= 2", then: hint}
"""


def test_threshold_edit_regions_name_their_closed_end_and_their_choices() -> None:
    text = BASE.replace("SELECTION", "priority")
    moved = text.replace("frustration < 0.8", "frustration < 0.75").replace(
        "frustration >= 0.8", "frustration >= 0.75"
    )
    result = diff(load(text), load(moved))
    found = [(r.condition, r.share, r.old, r.new) for r in result.regions]
    assert found == [
        (
            "0.75 <= frustration < 0.8 and mood != frustrated",
            Fraction(1, 30),
            {"probe": 1},
            {"encourage": 1},
        ),
        (
            "0.75 <= frustration < 0.8 and 2 <= hints and mood == frustrated",
            Fraction(1, 90),
            {"hint": 1},
            {"encourage": 1},
        ),
        (
            "0.75 <= frustration < 0.8 and hints <= 1 and mood == frustrated",
            Fraction(1, 180),
            {FALLBACK: 1},
            {"encourage": 1},
        ),
    ]
    assert all(r.uniform for r in result.regions)
    assert result.regions[0].no_longer_eligible == ["calm"]
    assert result.regions[0].newly_eligible == ["upset"]
    assert result.changed_share == Fraction(1, 20)


def test_a_boundary_change_is_reported_though_it_has_no_volume() -> None:
    text = BASE.replace("SELECTION", "priority")
    result = diff(load(text), load(text.replace("frustration >= 0.8", "frustration > 0.8")))
    assert [(r.condition, r.new) for r in result.regions] == [
        ("frustration == 0.8 and 2 <= hints", {"hint": 1}),
        ("frustration == 0.8 and hints <= 1", {FALLBACK: 1}),
    ]
    assert result.changed_share == 0 and result.changed


def test_a_renamed_rule_changes_nothing_and_is_reported_as_renamed() -> None:
    text = BASE.replace("SELECTION", "weighted")
    result = diff(load(text), load(text.replace("id: asked", "id: asked_for_hints")))
    assert not result.regions
    assert [(c.kind, c.rule, c.details) for c in result.rules] == [
        ("renamed", "asked_for_hints", ("asked",))
    ]


def _one(outcome: dict[str, Fraction]) -> str:
    ((action, _),) = outcome.items()
    return action


def test_reordering_equal_priority_rules_changes_the_winner() -> None:
    text = BASE.replace("SELECTION", "priority")
    lines = text.splitlines()
    swapped = "\n".join([*lines[:-3], lines[-2], lines[-3], lines[-1]]) + "\n"
    swapped = swapped.replace("then: hint", "then: hint, priority: 5").replace(
        "frustration >= 0.8", "frustration >= 0.5"
    )
    result = diff(load(text.replace("then: hint", "then: hint, priority: 5")), load(swapped))
    assert [(c.kind, c.rule, c.details) for c in result.rules] == [
        ("changed", "calm", ("order",)),
        ("changed", "upset", ("condition",)),
    ]
    found = {(r.condition, _one(r.old), _one(r.new)) for r in result.regions}
    assert ("0.5 <= frustration < 0.8 and mood != frustrated", "probe", "encourage") in found


def test_weighted_regions_show_the_probabilities_that_change() -> None:
    text = BASE.replace("SELECTION", "weighted")
    result = diff(load(text), load(text.replace("then: hint", "then: hint, weight: 3")))
    assert [(r.condition, r.share) for r in result.regions] == [
        ("2 <= hints and mood != frustrated", Fraction(4, 9)),
        ("0.8 <= frustration and 2 <= hints and mood == frustrated", Fraction(2, 45)),
    ]
    first = result.regions[0]
    assert not first.uniform and first.edited_eligible == ["asked"]
    assert (first.old, first.new) == (
        {"probe": Fraction(5, 9), "hint": Fraction(4, 9)},
        {"probe": Fraction(5, 17), "hint": Fraction(12, 17)},
    )


# -- socratic ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def socratic() -> ResolvedTheory:
    return load(SOCRATIC)


def _changed_rule_share(theory: ResolvedTheory, ids: set[str], extra: F.Node) -> float:
    translator = Translator(theory)
    node = F.and_([extra, F.or_(translator.eligible(r) for r in theory.rules if r.id in ids)])
    return Measure(translator.domains, [node]).share(node)


def test_socratic_shared_threshold_edit_changes_exactly_where_an_edited_rule_was_eligible(
    socratic: ResolvedTheory,
) -> None:
    new = load(SOCRATIC.replace("frustration < 0.8", "frustration < 0.75"))
    result = diff(socratic, new, limit=10)
    assert result.complete and result.exact and len(result.regions) == 10
    edited = {c.rule for c in result.rules if c.kind == "changed"}
    expected = {r.id for r in socratic.rules if "frustration < 0.8" in r.when.text}
    assert len(expected) >= 40 and edited == expected
    assert all(c.details == ("condition",) for c in result.rules)
    # The catch-all rule keeps encourage_to_continue in every distribution, so the choice
    # changes exactly where some edited rule was eligible before, inside the new gap.
    slab = F.and_(
        [F.cmp("frustration", ">=", Fraction(3, 4)), F.cmp("frustration", "<", Fraction(4, 5))]
    )
    expected = _changed_rule_share(socratic, edited, slab)
    assert abs(float(result.changed_share) - expected) < 1e-12
    assert all("0.75 <= frustration < 0.8" in r.condition for r in result.regions)
    assert result.regions[0].condition == (
        "not exam_active and intent in [exam_leak, off_topic] and 0.75 <= frustration < 0.8"
    )
    assert result.regions[0].share == Fraction(1, 160)
    assert 0 < result.unlisted_share < result.changed_share


def test_socratic_action_edit_is_the_rules_eligibility_region(socratic: ResolvedTheory) -> None:
    new = load(
        SOCRATIC.replace(
            "then: request_prediction\n    source: graesser_2005",
            "then: analogy\n    source: graesser_2005",
        )
    )
    result = diff(socratic, new)
    assert [(c.kind, c.rule, c.details) for c in result.rules] == [
        ("changed", "curious_prediction", ("action", "priority"))
    ]
    assert [r.condition for r in result.regions] == [
        "not exam_active and not conduct_restricted and intent not in [exam_leak, injection,"
        " hostile] and affect == curious and frustration < 0.8"
    ]
    region = result.regions[0]
    assert region.share == Fraction(1, 48) == result.changed_share
    assert region.old.get("request_prediction", 0) > region.new.get("request_prediction", 0)
    assert result.listed_all


def test_socratic_added_rule_changes_exactly_where_it_is_eligible(socratic: ResolvedTheory) -> None:
    rule = (
        '  - id: bored_switch\n    when: "affect == bored and engagement < 0.4 and'
        ' frustration < 0.8"\n    then: switch_representation\n    weight: 2\n'
    )
    new = load(SOCRATIC.replace("\nceiling:\n", rule + "\nceiling:\n"))
    result = diff(socratic, new)
    assert [(c.kind, c.rule) for c in result.rules] == [("added", "bored_switch")]
    expected = _changed_rule_share(new, {"bored_switch"}, F.TRUE)
    assert abs(float(result.changed_share) - expected) < 1e-12
    assert result.listed_all and all(r.newly_eligible == ["bored_switch"] for r in result.regions)
    assert sum(r.share for r in result.regions) == result.changed_share


# -- the command ---------------------------------------------------------------------------
def test_diff_command_json_and_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "old.yaml"
    new = tmp_path / "new.yaml"
    old.write_text(SOCRATIC)
    new.write_text(SOCRATIC.replace("frustration < 0.8", "frustration < 0.75"))
    assert main(["diff", str(old), str(new), "--format", "json", "--exit-code"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["complete"] and report["exact"] and not report["all_regions_listed"]
    assert len(report["regions"]) == 10
    first = report["regions"][0]
    assert first["share_exact"] == "1/160"
    assert first["witness"]["frustration"] == 0.77
    assert first["old"]["withhold_and_redirect"] > 0 and "withhold_and_redirect" not in first["new"]
    assert main(["diff", str(old), str(old), "--exit-code"]) == 0
    assert "no behaviour change" in capsys.readouterr().out
    assert main(["diff", str(old), str(new)]) == 0
    text = capsys.readouterr().out
    assert "and more regions covering" in text and "--all" in text


@pytest.mark.parametrize(
    ("edit", "listed"),
    [
        (
            (
                "as one leading question.\n    tags: [hint, help_path]\n",
                "as one leading question.\n    tags: [hint, help_path, affect_support]\n",
            ),
            "action help_leading: tags +affect_support",
        ),
        (
            (
                '"What is the very first thing you would work out in this {topic} question?"',
                '"Which part of this {topic} question would you work out first?"',
            ),
            "action help_leading: template edited",
        ),
        (
            ("      count: [wrong_answer]\n", "      count: [new_wrong_answer]\n"),
            "metric wrong_answers: writer {count: wrong_answer} -> {count: new_wrong_answer}",
        ),
    ],
)
def test_a_change_of_what_an_action_does_is_listed_and_fails_the_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: tuple[str, str], listed: str
) -> None:
    """The same choice everywhere, but the runtime reads tags (the fallback selector's
    `affect_support`, `hint` for the monitors, the invariants), says the wording, and writes
    metrics by their writers: a review that printed "no behaviour change" hid it."""
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(SOCRATIC)
    assert SOCRATIC.count(edit[0]) == 1
    new.write_text(SOCRATIC.replace(*edit))
    assert main(["diff", str(old), str(new), "--exit-code"]) == 1
    text = capsys.readouterr().out
    assert listed in text.splitlines()
    assert "no behaviour change" not in text and "what the runtime does with it changed" in text
    assert main(["diff", str(old), str(new), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["runtime_changes"] == [listed]
    assert report["changed"] and not report["choice_changed"] and report["verdict"] == "unchanged"


def test_a_metrics_default_edit_is_listed_beside_the_regions_it_changes(
    socratic: ResolvedTheory,
) -> None:
    text = SOCRATIC.replace(
        "    default: 0\n    source: trusted\n    writer:\n      count: [wrong_answer]",
        "    default: 1\n    source: trusted\n    writer:\n      count: [wrong_answer]",
    )
    assert text != SOCRATIC
    result = diff(socratic, load(text))
    assert result.runtime == ["metric wrong_answers: default 0 -> 1"]
    assert not result.same_behaviour
    assert diff(socratic, socratic).runtime == [] and diff(socratic, socratic).same_behaviour
