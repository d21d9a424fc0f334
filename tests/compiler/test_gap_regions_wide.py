"""Gap regions over a linear atom of wide ints: large boxes first, none inside another."""

from __future__ import annotations

from pedrag.compiler import formula as F
from pedrag.compiler.analysis import Analysis
from pedrag.compiler.regions import gap_regions
from pedrag.dsl.loader import load_text

THEORY = """\
pedrag: 1
theory: {id: g, name: G}
metrics:
  a: {type: int, range: [0, 1000], source: trusted}
  b: {type: int, range: [0, 1000], source: trusted}
  c: {type: int, range: [0, 1000], source: trusted}
actions:
  probe: {rung: H0, priority: 5, description: P.}
ceiling: {start: H4, steps: []}
rules:
  - {id: big, when: "a - b + 2 * c > 990", then: probe}
"""


def test_wide_linear_gaps_list_large_boxes_first_and_no_nested_ones() -> None:
    loaded = load_text(THEORY, "g.yaml")
    assert loaded.theory is not None
    analysis = Analysis(loaded.theory)
    regions = gap_regions(analysis)
    shares = [r.share for r in regions]
    # Grown one variable after another from a corner, the boxes were slivers (`a == 0 and
    # c <= 11`, 0.001%) nested in one another; grown together, the first is a tenth of the space.
    assert shares == sorted(shares, reverse=True) and shares[0] > 0.1
    uncovered = F.not_(analysis.any_eligible)
    for index, region in enumerate(regions):
        assert analysis.decide([region.node, F.not_(uncovered)], witness=False).unsat
        for other in regions[:index]:
            assert not analysis.decide([region.node, F.not_(other.node)], witness=False).unsat
