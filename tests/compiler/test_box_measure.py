"""The box form of coverage (`compiler/box_measure.py`) against the formula expansion it
replaced for one-variable atoms: the same exact rational, the same gap regions and witnesses,
and the expansion still used where boxes do not apply."""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import pytest

from pedrag.compiler import box_measure
from pedrag.compiler import formula as F
from pedrag.compiler.analysis import Analysis
from pedrag.compiler.measure import Measure
from pedrag.compiler.regions import gap_regions
from pedrag.dsl.loader import load_text

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from theory_gen import generate  # noqa: E402


def _analysis(text: str) -> Analysis:
    loaded = load_text(text, "t.yaml")
    assert loaded.theory is not None, [d.message for d in loaded.diagnostics]
    return Analysis(loaded.theory)


CASES = [(rules, seed) for rules in (8, 16, 30) for seed in range(4)] + [(45, 0), (45, 1)]


@pytest.mark.parametrize(("rules", "seed"), CASES)
def test_box_coverage_equals_the_formula_expansion_exactly(rules: int, seed: int) -> None:
    analysis = _analysis(generate(rules, seed, "weighted"))
    node = analysis.any_eligible
    by_boxes = Measure(analysis.domains, [node])._by_boxes(node)
    assert by_boxes is not None  # the generator writes one-variable atoms only
    expanded, error = Measure(analysis.domains, [node])._exact(node)
    assert error == 0
    assert by_boxes == expanded
    assert 0 < by_boxes <= 1


@pytest.mark.parametrize("seed", range(3))
def test_gap_regions_equal_those_found_by_the_formula_search(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each region's first state is the first uncovered cell either way, and `clear` answers
    what z3 answers: so the regions, shares and witnesses are the same."""
    text = generate(12, seed, "weighted")
    fast = gap_regions(_analysis(text))
    monkeypatch.setattr(box_measure, "boxes_of", lambda *args: None)
    # no shared box form either: the gap search cuts cells itself and asks z3
    monkeypatch.setattr("pedrag.compiler.analysis.Analysis.eligible_cell_boxes", lambda self: None)
    monkeypatch.setattr("pedrag.compiler.analysis.SEARCH_BUDGET", 10**9)
    slow = gap_regions(_analysis(text))
    assert fast, "the generated theory should leave gaps"
    assert [(r.condition, r.share, r.witness) for r in fast] == [
        (r.condition, r.share, r.witness) for r in slow
    ]


THEORY = """\
pedrag: 1
theory: {id: t, name: T}
metrics:
  m: {type: float, range: [0, 1], source: trusted}
  n: {type: float, range: [0, 1], source: trusted}
actions:
  a: {rung: H0, priority: 1, description: Do a.}
rules:
  - {id: r, when: "WHEN", then: a}
ceiling:
  start: H0
  steps: []
"""


def test_a_single_uncovered_point_is_a_gap() -> None:
    """`m != 0.1` covers all but a point: the share is 1, yet the point is a gap."""
    analysis = _analysis(THEORY.replace("WHEN", "m != 0.1"))
    assert Measure(analysis.domains, [analysis.any_eligible]).share(analysis.any_eligible) == 1
    (region,) = gap_regions(analysis)
    assert region.witness == {"m": 0.1}
    assert region.share == 0


def test_linear_atoms_are_left_to_the_expansion() -> None:
    analysis = _analysis(THEORY.replace("WHEN", "m + n > 1"))
    node = analysis.any_eligible
    measure = Measure(analysis.domains, [node])
    assert measure._by_boxes(node) is None
    assert measure.exact_share(node) == (Fraction(1, 2), Fraction(0))


@pytest.mark.parametrize("limit", ["MAX_BOXES", "MAX_PIECES"])
def test_past_a_size_limit_the_expansion_answers_the_same(
    limit: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    analysis = _analysis(generate(20, 3, "weighted"))
    node = analysis.any_eligible
    exact = Measure(analysis.domains, [node]).exact_share(node)
    monkeypatch.setattr(box_measure, limit, 1)
    measure = Measure(analysis.domains, [node])
    assert measure._by_boxes(node) is None
    assert measure.exact_share(node) == exact


def test_union_of_overlapping_boxes_counts_the_overlap_once() -> None:
    shares = {"x": [Fraction(1, 4)] * 4, "y": [Fraction(1, 2)] * 2}
    # x in cells {0,1} (half), and y in cell 0 (half): union = 1/2 + 1/2 - 1/4.
    boxes: list[box_measure.Box] = [{"x": 0b0011}, {"y": 0b01}]
    assert box_measure.union_share(boxes, ["x", "y"], shares) == Fraction(3, 4)
    assert box_measure.first_outside(boxes, ["x", "y"], {"x": 0b1111, "y": 0b11}) == [2, 1]
    everything = [{"x": 0b1111}]
    assert box_measure.first_outside(everything, ["x"], {"x": 0b1111}) is box_measure.NOTHING


def test_negation_of_a_conjunction_becomes_one_box_per_part() -> None:
    x_low = F.cmp("x", "<", Fraction(1, 2))
    y_low = F.cmp("y", "<", Fraction(1, 2))
    node = F.not_(F.and_([x_low, y_low]))
    values = {"x": [Fraction(1, 4), Fraction(3, 4)], "y": [Fraction(1, 4), Fraction(3, 4)]}
    boxes = box_measure.boxes_of(
        node,
        lambda atom: (atom.var, box_measure.atom_mask(atom, values[atom.var])),  # type: ignore[arg-type,index]
        {"x": 0b11, "y": 0b11},
    )
    assert boxes == [{"x": 0b10}, {"y": 0b10}]


def test_the_recursive_searches_leave_no_cycles_for_the_collector() -> None:
    """Batch commands run without the cyclic collector (`pedrag.cli.BATCH`), so a question
    must not leave garbage only it could free: a recursive closure refers to itself until it
    is unbound (at 5,000 rules the leak was 40 MiB of a check)."""
    import gc

    analysis = _analysis(generate(30, 0, "weighted"))
    rules = list(analysis.rules)
    formulas = [analysis.eligible[rules[0].id], analysis.eligible[rules[1].id]]
    gc.collect()
    collecting = gc.isenabled()
    gc.disable()
    try:
        analysis._by_cells(formulas)  # boxes_of's walk
        analysis._first_witness(formulas)  # first_state's search
        analysis.first_state(F.and_(formulas), sorted(F.and_(formulas).vars))
        assert gc.collect() == 0
    finally:
        if collecting:
            gc.enable()


def _cells_of(box: box_measure.Box, full: dict[str, int]) -> set[tuple[int, ...]]:
    """Every cell tuple a box allows, listed one by one (the oracle for `covers`)."""
    import itertools

    choices = [
        [c for c in range(full[var].bit_length()) if box.get(var, full[var]) >> c & 1]
        for var in full
    ]
    return set(itertools.product(*choices))


@pytest.mark.parametrize("seed", range(40))
def test_covers_agrees_with_listing_every_cell(seed: int) -> None:
    import random

    rng = random.Random(seed)
    full = {"x": 0b1111, "y": 0b111, "z": 0b11}

    def box() -> box_measure.Box:
        chosen = rng.sample(list(full), rng.randint(1, 3))
        return {var: rng.randint(1, full[var]) for var in chosen}

    region = [box() for _ in range(rng.randint(1, 2))]
    boxes = [box() for _ in range(rng.randint(0, 12))]
    inside = set().union(*(_cells_of(b, full) for b in region))
    covered = set().union(set(), *(_cells_of(b, full) for b in boxes))
    assert box_measure.covers(region, boxes, full) == (inside <= covered)


def test_a_shadow_needing_two_higher_rules_is_decided_by_cutting() -> None:
    text = generate(4, 0, "priority").split("rules:")[0] + (
        "rules:\n"
        '  - {id: low, when: "frustration >= 0.2", then: a1, priority: 1}\n'
        '  - {id: left, when: "frustration < 0.6", then: a2, priority: 5}\n'
        '  - {id: right, when: "frustration >= 0.5", then: a3, priority: 5}\n'
        '  - {id: gap, when: "frustration >= 0.7", then: a4, priority: 5}\n'
    )
    analysis = _analysis(text)
    low, left, right, gap = analysis.rules
    assert analysis._covering(low, [left, right]) == (0, 1)
    assert analysis._covering(low, [left, gap]) == ()
    assert analysis._covering(low, [gap, left, right]) == (1, 2)  # `gap` is not needed
    assert [tuple(r.id for r in f.rules) for f in analysis.shadowed()] == [("low", "left", "right")]


@pytest.mark.parametrize("seed", [3, 7])
def test_the_rules_left_out_of_a_shadow_question_never_meet_the_rule(seed: int) -> None:
    # `_higher_meeting` files rules by cell and variable; z3 says every rule it leaves out
    # (of those that beat the rule) can never be eligible where the rule is.
    analysis = _analysis(generate(120, seed, "priority"))
    live = [r for r in analysis.rules if analysis.rule_status(r).live]
    left_out = 0
    for rule, higher in zip(live, analysis._higher_meeting(live), strict=True):
        assert [h.index for h in higher] == sorted(h.index for h in higher)
        named = {h.id for h in higher}
        for other in live:
            if other is rule or not analysis.beats(other, rule):
                assert other.id not in named
            elif other.id not in named:
                left_out += 1
                pair = [analysis.eligible[rule.id], analysis.eligible[other.id]]
                assert analysis.solve(pair, witness=False).unsat, (rule.id, other.id)
    assert left_out > 0


@pytest.mark.parametrize(("rules", "seed"), [*CASES, (30, 7), (60, 2)])
def test_the_gap_searchs_boxes_narrowed_measure_the_coverage_exactly(rules: int, seed: int) -> None:
    """The coverage share is read off the box form the gap search made over every cell
    (`Analysis.eligible_cell_boxes`), narrowed to the cells of positive share: the same exact
    rational as the box form made over those cells alone."""
    analysis = _analysis(generate(rules, seed, "weighted"))
    node = analysis.any_eligible
    made = analysis.eligible_cell_boxes()
    assert made is not None and made[1] is not None
    cells_of, boxes = made
    keep = {var: [i for i, c in enumerate(found) if c.share > 0] for var, found in cells_of.items()}
    shares = {var: [cells_of[var][i].share for i in kept] for var, kept in keep.items()}
    narrowed = box_measure.narrow_boxes(boxes, keep)
    order = sorted({var for box in narrowed for var in box})
    expected = Measure(analysis.domains, [node])._by_boxes(node)
    assert box_measure.union_share(narrowed, order, shares) == expected
    measure = Measure(analysis.domains, [node])
    assert measure.share_of_boxes(node, cells_of, boxes) == float(expected)  # type: ignore[arg-type]
    assert measure.error == 0


def test_coverage_from_the_gap_searchs_boxes_keeps_a_point_gap_and_a_size_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    analysis = _analysis(THEORY.replace("WHEN", "m != 0.1"))
    assert analysis.coverage() == (1.0, True)
    (region,) = analysis.gaps()  # the zero-share point is still a gap
    assert region.witness == {"m": 0.1}
    analysis = _analysis(generate(20, 3, "weighted"))
    exact = Measure(analysis.domains, [analysis.any_eligible]).share(analysis.any_eligible)
    monkeypatch.setattr(box_measure, "MAX_PIECES", 1)  # the narrowed cutting gives up
    assert analysis.coverage() == (exact, True)


def test_narrowing_renumbers_the_kept_cells_and_drops_what_is_left_empty() -> None:
    keep = {"x": [0, 2, 3], "y": [1]}
    assert box_measure.narrow_boxes([{"x": 0b0101}, {"x": 0b0010}], keep) == [{"x": 0b011}]
    assert box_measure.narrow_boxes([{"x": 0b1101, "y": 0b10}, {"x": 0b1}], keep) == [{}]
