"""missing-ceiling: a theory without a `ceiling:` runs at the default ceiling.

Semantic check over the theory model. A theory that leaves out `ceiling:` gets the low default
(`start: H4`, no steps: no code, no worked example, no solution) rather than H7; the finding
says so, because a designer who never wrote a ceiling has not decided how much help the tutor
may give, and the runtime enforces answer-withholding against that ceiling every turn.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pedrag.compiler.checks import CheckInfo
from pedrag.dsl.diagnostics import Diagnostic, Severity
from pedrag.dsl.model import DEFAULT_CEILING_START

if TYPE_CHECKING:  # z3 loads only when a semantic check runs
    from pedrag.compiler.analysis import Analysis

INFO = CheckInfo(
    name="missing-ceiling",
    severity=Severity.WARNING,
    summary=f"the theory has no `ceiling:`, so every turn starts at the default {DEFAULT_CEILING_START}",
    explanation=(
        "The help ceiling decides how much help a turn may give and what the detector "
        f"withholds. Without a `ceiling:` the theory runs at `start: {DEFAULT_CEILING_START}` "
        "with no steps: approach in words, no code, no worked example, never the solution. "
        "Write the ceiling the theory means, even if it is the default."
    ),
    example=(
        "pedrag: 1\n"
        "theory: {id: plain, name: Plain}\n"
        "metrics: {...}\n"
        "actions: {...}\n"
        "rules: [...]\n"
        "# no ceiling: section\n"
    ),
    fix=f"Add `ceiling: {{start: {DEFAULT_CEILING_START}, steps: []}}` or the steps the theory needs.",
)


def run(analysis: Analysis) -> Iterator[Diagnostic]:
    theory = analysis.theory
    if "ceiling" in theory.model.model_fields_set:
        return
    yield Diagnostic(
        check=INFO.name,
        severity=INFO.severity,
        message=(
            f"theory `{theory.id}` has no `ceiling:`; every turn starts at "
            f"{DEFAULT_CEILING_START} with no steps"
        ),
        span=theory.span,
        items=(f"theory:{theory.id}",),
        help=INFO.fix,
    )
