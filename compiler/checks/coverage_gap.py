"""coverage-gap: regions of the state space where no rule is eligible.

Semantic check. Gaps are regions, not points: each uncovered witness is grown into a maximal
box of metric ranges (`compiler/regions.py`); the largest few are reported in the designer's
terms with their share of the state space, each with a suggested rule that `--fix` can
append (marked safe or unsafe, see `compiler/fixes.py`). The exact covered share is in the
summary (`coverage`, `compiler/measure.py`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pedrag.compiler.checks import CheckInfo
from pedrag.dsl.diagnostics import Diagnostic, Severity

if TYPE_CHECKING:  # z3 loads only when a semantic check runs
    from pedrag.compiler.analysis import Analysis

INFO = CheckInfo(
    name="coverage-gap",
    severity=Severity.WARNING,
    summary="reachable states where no rule is eligible, reported as regions with their share",
    explanation=(
        "Where no rule is eligible the runtime falls back to its strategy selector, outside the "
        "theory's control; the seed paper's residual failures were such gaps. Each region is a "
        "box of metric ranges in which no rule is eligible, grown as large as it can be, with "
        "its share of the state space (states drawn uniformly per metric)."
    ),
    example=(
        "rules:\n"
        '  - {id: frustrated, when: "frustration >= 0.7", then: encourage}\n'
        '  - {id: calm, when: "frustration < 0.4", then: probe}\n'
    ),
    fix="Add a rule for the region (`pedrag check --fix` inserts the suggested one), or widen a neighbouring rule.",
)

REPORTED = 3


def _percent(share: float) -> str:
    value = share * 100
    return f"{value:.3g}%" if value >= 0.01 or value == 0 else "<0.01%"


def run(analysis: Analysis) -> Iterator[Diagnostic]:
    regions = analysis.gaps()
    if not regions:
        return
    # Imported for a gap only: the fixes (difflib, the YAML writer) are no part of a check of
    # a covering theory, as most re-checks are.
    from pedrag.compiler.fixes import suggest

    share, _ = analysis.coverage()
    uncovered = max(0.0, 1.0 - share)
    for number, region in enumerate(regions[:REPORTED], start=1):
        suggestion = suggest(analysis, region, number)
        more = (
            f"; {len(regions) - REPORTED} more region(s) found"
            if number == REPORTED and len(regions) > REPORTED
            else ""
        )
        yield Diagnostic(
            check=INFO.name,
            severity=INFO.severity,
            message=f"no rule is eligible when {region.condition} ({_percent(region.share)} of the state space)",
            span=analysis.theory.span,
            items=(f"theory:{analysis.theory.id}",),
            witness=region.witness,
            help=(
                f'add a rule such as `{{id: {suggestion.rule_id}, when: "{suggestion.when}", then: {suggestion.then}}}` '
                f"({'safe' if suggestion.safe else 'unsafe: ' + suggestion.reason}); "
                f"{_percent(uncovered)} of the state space is uncovered in all{more}"
            ),
            data={
                "region": region.condition,
                "share": round(region.share, 6),
                "uncovered": round(uncovered, 6),
                "suggested_rule": suggestion.as_dict(),
            },
        )
