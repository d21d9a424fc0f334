"""The box form of "some rule is eligible" kept between checks in one process
(`box_measure.KeptUnion`, read by `Analysis.eligible_cell_boxes`): after each edit it is the
box form made afresh over the new cells, box for box and in order, while the cells move (a
new constant splits a cell, a removed one merges two); and only the edited rule's part is
made again.
"""

from __future__ import annotations

import random

import pytest

from pedrag.compiler import analysis as analysis_module
from pedrag.compiler import box_measure
from pedrag.compiler.analysis import Analysis
from pedrag.dsl.loader import load_text
from tests.compiler.test_recheck_edits import _theory


def _condition(rng: random.Random) -> str:
    """One or two atoms with constants drawn from many, so most edits move some cells."""
    atoms = []
    for _ in range(rng.randint(1, 2)):
        kind = rng.choice(["float", "float", "int", "enum", "bool"])
        if kind == "float":
            variable = rng.choice(["frustration", "confidence"])
            atoms.append(
                f"{variable} {rng.choice(['<', '>=', '<=', '>'])} {rng.randint(1, 99) / 100}"
            )
        elif kind == "int":
            atoms.append(f"hints {rng.choice(['<', '>=', '=='])} {rng.randint(0, 5)}")
        elif kind == "enum":
            atoms.append(f"affect {rng.choice(['==', '!='])} calm")
        else:
            atoms.append(rng.choice(["exam", "not exam"]))
    return " and ".join(atoms)


def _rule(name: str, rng: random.Random) -> str:
    return f'  - {{id: {name}, when: "{_condition(rng)}", then: a{rng.randrange(5)}}}'


def _analysis(rules: list[str]) -> Analysis:
    loaded = load_text(_theory(rules, "weighted"), "kept.yaml")
    assert loaded.theory is not None, loaded.diagnostics
    return Analysis(loaded.theory)


def test_the_kept_union_is_the_fresh_box_form_along_random_edits() -> None:
    rng = random.Random(5)
    rules = [_rule(f"r{i}", rng) for i in range(30)]
    analysis_module._KEPT_UNIONS.clear()
    moved = 0
    for step in range(60):
        if step:
            index = rng.randrange(len(rules))
            kind = rng.choice(["condition", "condition", "delete", "insert"])
            if kind == "delete" and len(rules) > 5:
                rules = rules[:index] + rules[index + 1 :]
            else:
                new = _rule(f"n{step}", rng)
                rules = [*rules[:index], new, *rules[index + (kind == "condition") :]]
        analysis = _analysis(rules)
        kept = next(iter(analysis_module._KEPT_UNIONS.values()), None)
        before = dict(kept.cells) if kept is not None else {}
        made = analysis.eligible_cell_boxes()
        assert made is not None
        found, boxes = made
        values = {var: [cell.value for cell in each] for var, each in found.items()}
        assert boxes == box_measure.cell_boxes(analysis.any_eligible, values), step
        moved += any(var in before and len(before[var]) != len(found[var]) for var in found)
    assert moved >= 20  # the cells moved under kept parts, not only new parts made


def test_an_edit_makes_only_the_edited_rules_part(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(8)
    rules = [_rule(f"r{i}", rng) for i in range(30)]
    analysis_module._KEPT_UNIONS.clear()
    _analysis(rules).eligible_cell_boxes()
    made: list[object] = []
    real = box_measure.boxes_of

    def counting(node: object, *args: object) -> object:
        made.append(node)
        return real(node, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(box_measure, "boxes_of", counting)
    rules[7] = '  - {id: r7, when: "frustration >= 0.573 and not exam", then: a2}'
    analysis = _analysis(rules)
    analysis.eligible_cell_boxes()
    edited = analysis.eligible[analysis.rules[7].id]
    assert made == [edited]


def test_the_atoms_kept_per_rule_are_the_whole_unions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where formulas are shared (the language server), "some rule is eligible"'s atoms are
    gathered from each rule's part, walked once per process: the same atoms and cuts as a
    walk of the whole formula, after each edit."""
    from pedrag.compiler import encode
    from pedrag.compiler import formula as F

    monkeypatch.setattr(encode, "SHARING", True)
    rng = random.Random(9)
    rules = [_rule(f"r{i}", rng) for i in range(30)]
    for step in range(15):
        if step:
            rules[rng.randrange(len(rules))] = _rule(f"n{step}", rng)
        analysis = _analysis(rules)
        node = analysis.any_eligible
        assert set(analysis._atoms(node)) == set(F.atoms(node))
        assert len(analysis._atoms(node)) == len(F.atoms(node))
        assert analysis.eligible_cuts == F.breakpoints(node)
