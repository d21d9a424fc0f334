"""Questions decided without z3 (`Analysis._by_cells`, `Analysis._first_witness`) get z3's
answer: the same satisfiability, and the same witness a z3 answer shows.

A re-check after an edit asks about the edited rule's pairs; deciding them over cells is what
keeps z3 from loading at all. A wrong "unsat" here would hide a conflict or invent a
redundant rule, so both are compared with z3 on generated theories and on the boundary cases
cells get wrong most easily (a single point, an int between two cuts)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from pedrag.compiler import formula as F
from pedrag.compiler.analysis import Analysis
from pedrag.dsl.loader import load_text

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from theory_gen import generate  # noqa: E402

HEADER = """pedrag: 1
theory: {id: cells, name: Cells}
metrics:
  x: {type: float, range: [0, 1], source: inferred}
  n: {type: int, range: [0, 10], source: trusted}
  mood: {type: enum, values: [calm, tense, bored], source: inferred}
  flag: {type: bool, source: trusted}
actions:
  a: {rung: H1, priority: 5, description: A.}
  b: {rung: H2, priority: 5, description: B.}
rules:
"""


def _analysis(text: str) -> Analysis:
    loaded = load_text(text, "t.yaml")
    assert loaded.theory is not None, [d.message for d in loaded.diagnostics]
    return Analysis(loaded.theory)


def _rules(*conditions: str) -> Analysis:
    lines = [f'  - {{id: r{i}, when: "{c}", then: a}}' for i, c in enumerate(conditions)]
    return _analysis(HEADER + "\n".join(lines) + "\n")


BOUNDARIES = [
    # (condition of r0, condition of r1, can both hold?)
    ("x <= 0.5", "x >= 0.5", True),  # only the point x = 0.5
    ("x < 0.5", "x >= 0.5", False),
    ("n > 1.5 and n < 2", "n >= 0", False),  # no int strictly between 1.5 and 2
    ("n >= 1.5 and n <= 2", "n == 2", True),
    ("x != 0.25", "x >= 0.25 and x <= 0.25", False),
    ("mood == calm or mood == bored", "mood != calm and mood != bored", False),
    ("mood in [calm, tense] and not flag", "mood == tense or flag", True),
    ("flag and x > 0.9", "not flag or x < 0.9", False),
    ("(x > 0.2 or n > 8) and (x < 0.1 or n < 9)", "true", True),
    ("(x > 0.2 or n > 8) and x < 0.1 and n < 9", "true", False),
]


@pytest.mark.parametrize(("first", "second", "together"), BOUNDARIES)
def test_cells_decide_what_z3_decides_at_the_boundaries(
    first: str, second: str, together: bool
) -> None:
    analysis = _rules(first, second)
    a, b = (analysis.holds[r.id] for r in analysis.rules)
    assert analysis.solve([a, b], witness=False).status == ("sat" if together else "unsat")
    assert analysis._by_cells([a, b]) == ("sat" if together else "unsat")


def test_linear_atoms_are_left_to_z3() -> None:
    analysis = _rules("x + n > 3", "n >= 0")
    a, b = (analysis.holds[r.id] for r in analysis.rules)
    assert analysis._by_cells([a, b]) is None


@pytest.mark.parametrize("seed", range(4))
def test_cells_and_the_first_witness_agree_with_z3_on_generated_theories(seed: int) -> None:
    analysis = _analysis(generate(40, seed, "weighted"))
    rules = list(analysis.rules)
    pick = random.Random(seed)
    asked = {"sat": 0, "unsat": 0, "witness": 0}
    for _ in range(150):
        ra, rb = pick.sample(rules, 2)
        questions = [
            [analysis.eligible[ra.id], analysis.eligible[rb.id]],  # a conflict's question
            [analysis.holds[ra.id], F.not_(analysis.holds[rb.id])],  # an implication's
        ]
        for formulas in questions:
            z3_answer = analysis.solve(formulas)
            assert analysis._by_cells(formulas) == z3_answer.status
            asked[z3_answer.status] += 1
            quick = analysis._first_witness(formulas)
            if quick is not None:
                asked["witness"] += 1
                assert z3_answer.sat
                assert (quick.witness, quick.state) == (z3_answer.witness, z3_answer.state)
    # The sample must exercise both answers and the quick witness, or it proves nothing.
    assert min(asked.values()) > 0, asked
