"""unused-metric: a metric nothing reads.

Semantic check (a graph check over metrics -> conditions). A metric is read when it occurs in
a rule condition, a ceiling step, an invariant, a monitor, a switch condition, or another
metric's `compute:` expression.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from typing import TYPE_CHECKING

from pedrag.compiler.checks import CheckInfo
from pedrag.dsl.diagnostics import Diagnostic, Severity

if TYPE_CHECKING:  # z3 loads only when a semantic check runs
    from pedrag.compiler.analysis import Analysis

INFO = CheckInfo(
    name="unused-metric",
    severity=Severity.WARNING,
    summary="a metric is never read by any condition, computation, monitor or switch",
    explanation=(
        "Every metric costs something at runtime (an analyzer field, a classifier label, a "
        "tracked history). One that no rule, ceiling step, invariant, monitor, switch or "
        "computed metric reads has no effect on the tutor."
    ),
    example=(
        "metrics:\n"
        "  frustration: {type: float, range: [0, 1], source: inferred}\n"
        "  boredom: {type: float, range: [0, 1], source: inferred}\n"
        "rules:\n"
        '  - {id: frustrated, when: "frustration >= 0.7", then: encourage}\n'
    ),
    fix="Read the metric in a rule or monitor, or delete it.",
)


def read_metrics(analysis: Analysis) -> set[str]:
    """The declared metrics some condition reads. The walk stops once every declared metric
    has been seen: a theory's first few dozen rules usually read them all, and walking the
    other thousands of conditions was a twentieth of a one-rule edit's re-check."""
    theory = analysis.theory
    declared = set(theory.metrics)
    reads = chain(
        (analysis.reads(m.compute) for m in theory.metrics.values() if m.compute is not None),
        (step.when.reads for step in theory.ceiling_steps),
        (inv.condition.reads for inv in theory.invariants),
        (located.reads for located in theory.monitors.values()),
        (switch.when.reads for switch in theory.switches),
        (rule.when.reads for rule in theory.rules),
    )
    found: set[str] = set()
    for metrics in reads:
        found |= metrics
        if declared <= found:
            break
    return found


def run(analysis: Analysis) -> Iterator[Diagnostic]:
    read = read_metrics(analysis)
    for name, metric in analysis.theory.metrics.items():
        if name not in read:
            yield Diagnostic(
                check=INFO.name,
                severity=INFO.severity,
                message=f"metric `{name}` is never read by any condition, computation, monitor or switch",
                span=metric.span,
                items=(f"metric:{name}",),
                help=INFO.fix,
            )
