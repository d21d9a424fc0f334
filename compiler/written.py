"""Witnesses a real session can produce: no finding rests on a value that nothing writes.

Compiler stage, between the analysis and the checks that show a witness state (conflict,
invariant-violation, shadowed-rule, redundant-rule). Takes the analysis, the formulas a finding
was decided on and its outcome; gives the outcome again when its state needs no metric that
nothing writes (`pedrag.kernel.sources.is_written`) away from its default, else the same
question asked with those metrics pinned to their defaults: a witness a session can reach, or
None when no such state exists (the finding cannot happen in a real session; the
`unwritten-metric` finding already names the rules that read the metric).

Why here and not in the encoding: the other checks (dead rules, coverage) range over every
state by definition (DESIGN, coverage share), and the analysis's answers are cached by content;
a pinned question is asked afresh, only for a finding whose witness needs it, so nothing cached
changes and a theory whose metrics are all written costs nothing.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

from pedrag.compiler import formula as F
from pedrag.compiler.formula import Node
from pedrag.kernel.sources import is_written

if TYPE_CHECKING:  # z3 loads only when a semantic check runs
    from pedrag.compiler.analysis import Analysis, Outcome


def unwritten_defaults(analysis: Analysis) -> dict[str, Any]:
    """The metrics nothing writes, each with the default it keeps in every session."""
    return {
        name: metric.default
        for name, metric in analysis.theory.metrics.items()
        if not is_written(name, metric.source, metric.type, metric.writer is not None)
    }


def _same(value: Any, default: Any) -> bool:
    if isinstance(default, bool) or isinstance(default, str):
        return bool(value == default)
    return Fraction(value) == Fraction(str(default) if isinstance(default, float) else default)


def _pin(analysis: Analysis, name: str, default: Any) -> Node:
    domain = analysis.domains[name]
    if domain.kind in ("bool", "enum"):
        return F.member(name, (default,), domain.values)
    return F.cmp(name, "==", Fraction(str(default)) if isinstance(default, float) else default)


def reachable(analysis: Analysis, formulas: list[Node], outcome: Outcome) -> Outcome | None:
    """`outcome`, or the question of `formulas` asked again with the unwritten metrics its
    state moves pinned to their defaults; None when only an unreachable state has it."""
    if not outcome.sat:
        return outcome
    pinned = unwritten_defaults(analysis)
    state = outcome.state or {}
    moved = {n: d for n, d in pinned.items() if n in state and not _same(state[n], d)}
    if not moved:
        return outcome
    again = analysis.decide([*formulas, *(_pin(analysis, n, d) for n, d in pinned.items())])
    return None if again.unsat else again
