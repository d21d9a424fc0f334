"""ceiling-blocked: a rule that holds in some state but is never eligible.

Semantic check. The rule's condition is satisfiable, but in every state where it holds the
help ceiling (the ordered ceiling steps) is below its action's rung, so the runtime never
chooses it. The witness is a state where the condition holds, with the ceiling there.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING

from pedrag.compiler.checks import CheckInfo
from pedrag.compiler.diagnose import rule_item, unknown, with_ceiling
from pedrag.dsl.diagnostics import Diagnostic, Severity
from pedrag.kernel.rungs import rung_name

if TYPE_CHECKING:  # z3 loads only when a semantic check runs
    from pedrag.compiler.analysis import Analysis
    from pedrag.dsl.ir import RuleInfo

INFO = CheckInfo(
    name="ceiling-blocked",
    severity=Severity.ERROR,
    summary="the rule holds somewhere but its action is always above the help ceiling there",
    explanation=(
        "A rule is eligible only when its action's rung is at or below the per-turn help "
        "ceiling. If the ceiling is below that rung wherever the condition holds, the rule is "
        "dead in practice: the runtime never chooses it."
    ),
    example=(
        "ceiling:\n"
        "  start: H2\n"
        "rules:\n"
        "  - id: show_example\n"
        '    when: "attempts >= 3"\n'
        "    then: worked_example   # rung H5\n"
    ),
    fix="Lower the action's rung, add a ceiling step that raises the ceiling where the rule applies, or change the condition.",
)


def run(analysis: Analysis) -> Iterator[Diagnostic]:
    yield from analysis.each_rule(INFO.name, partial(_findings, analysis))


def _findings(analysis: Analysis, rule: RuleInfo) -> list[Diagnostic]:
    status = analysis.rule_status(rule)
    if status.eligible is not None and status.eligible.unknown:
        return [
            unknown(
                INFO.name,
                f"whether rule `{rule.id}` is ever eligible",
                rule.when.span,
                (rule_item(rule),),
            )
        ]
    if not status.blocked:
        return []
    action = analysis.theory.actions[rule.action]
    return [
        Diagnostic(
            check=INFO.name,
            severity=INFO.severity,
            message=(
                f"rule `{rule.id}` holds in some states but is never eligible: action `{action.name}` "
                f"({rung_name(action.rung)}) is above the help ceiling wherever the condition holds"
            ),
            span=rule.when.span,
            items=(rule_item(rule), f"action:{action.name}"),
            witness=with_ceiling(analysis, status.holds.witness),
            help=INFO.fix,
        )
    ]
