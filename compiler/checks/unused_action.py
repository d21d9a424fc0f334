"""unused-action: an action no rule chooses and no adaptation reaches.

Semantic check (a graph check over rules -> actions). An action is used when it is the `then`
of some rule or a target of adaptation (`escalate` values, `alternatives` lists).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pedrag.compiler.checks import CheckInfo
from pedrag.dsl.diagnostics import Diagnostic, Severity

if TYPE_CHECKING:  # z3 loads only when a semantic check runs
    from pedrag.compiler.analysis import Analysis

INFO = CheckInfo(
    name="unused-action",
    severity=Severity.WARNING,
    summary="an action is never selected: no rule chooses it and no adaptation reaches it",
    explanation=(
        "An action that no rule names in `then:` and that is not an adaptation target "
        "(`escalate`, `alternatives`) can never be chosen, so its guidance is dead text."
    ),
    example=(
        "actions:\n"
        "  encourage: {rung: H0, priority: 5, description: Encourage.}\n"
        "  summarise: {rung: H1, priority: 5, description: Summarise.}\n"
        "rules:\n"
        '  - {id: always, when: "true", then: encourage}\n'
    ),
    fix="Add a rule that chooses the action, make it an adaptation target, or delete it.",
)


def used_actions(analysis: Analysis) -> set[str]:
    theory = analysis.theory
    used = {rule.then for rule in theory.model.rules}
    used |= set(theory.escalate.values())
    for targets in theory.alternatives.values():
        used |= set(targets)
    return used


def run(analysis: Analysis) -> Iterator[Diagnostic]:
    used = used_actions(analysis)
    for name, action in analysis.theory.actions.items():
        if name not in used:
            yield Diagnostic(
                check=INFO.name,
                severity=INFO.severity,
                message=f"action `{name}` is never selected: no rule chooses it and no adaptation reaches it",
                span=action.span,
                items=(f"action:{name}",),
                help=INFO.fix,
            )
