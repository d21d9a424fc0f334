"""shadowed-rule: (priority selection) a rule that is eligible but never wins.

Semantic check. Wherever the rule is eligible, some rule that beats it (higher priority, or
equal priority and higher weight) is eligible too. The shadowing rules may do it only
together: the analysis asks whether the rule's eligible region lies inside the **union** of
the higher rules' regions (by cutting their boxes out of the rule's, `Analysis._shadow`; z3
for linear atoms) and names a minimal set of shadowing rules (pairwise checkers miss shadows
that take several rules). A known state where the rule is eligible and no higher rule is
settles "not shadowed" at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pedrag.compiler.checks import CheckInfo
from pedrag.compiler.diagnose import rule_item, unknown, with_ceiling
from pedrag.dsl.diagnostics import Diagnostic, Severity

if TYPE_CHECKING:  # z3 loads only when a semantic check runs
    from pedrag.compiler.analysis import Analysis
    from pedrag.dsl.ir import RuleInfo

INFO = CheckInfo(
    name="shadowed-rule",
    severity=Severity.WARNING,
    summary="(priority selection) higher-priority rules cover every state where this rule is eligible",
    explanation=(
        "Under `selection: priority` the highest-priority eligible rule wins. A rule whose "
        "eligible states are all covered by rules that beat it never wins, alone or because "
        "several higher rules together cover it. The message names a minimal set of them."
    ),
    example=(
        "selection: priority\n"
        "rules:\n"
        '  - {id: low, when: "frustration >= 0.5", then: encourage, priority: 9}\n'
        '  - {id: high, when: "frustration >= 0.6", then: encourage, priority: 9}\n'
        '  - {id: probe, when: "frustration >= 0.7", then: probe, priority: 3}\n'
    ),
    fix="Narrow or remove the shadowed rule, or raise its priority above the rules that shadow it.",
)


def run(analysis: Analysis) -> Iterator[Diagnostic]:
    for finding in analysis.shadowed():
        rule, *higher = finding.rules
        if finding.outcome.unknown:
            yield unknown(
                INFO.name,
                f"whether rule `{rule.id}` is shadowed",
                rule.when.span,
                (rule_item(rule),),
            )
            continue
        plural = "rules" if len(higher) > 1 else "rule"
        together = " together cover" if len(higher) > 1 else " covers"
        if all(h.priority > rule.priority for h in higher):
            names = ", ".join(f"`{h.id}`" for h in higher)
            head = f"rule `{rule.id}` (priority {rule.priority}) never wins: higher-priority {plural} {names}"
        else:  # say what beats it: a higher priority, or an equal one and a higher weight
            names = ", ".join(f"`{h.id}` ({_why_it_wins(h, rule)})" for h in higher)
            head = (
                f"rule `{rule.id}` (priority {rule.priority}, weight {_number(rule.weight)}) "
                f"never wins: {plural} {names}"
            )
        yield Diagnostic(
            check=INFO.name,
            severity=INFO.severity,
            message=f"{head}{together} every state where it is eligible",
            span=rule.when.span,
            items=(rule_item(rule), *(rule_item(h) for h in higher)),
            related=tuple(h.when.span for h in higher if h.when.span.file == rule.when.span.file),
            witness=with_ceiling(analysis, finding.outcome.witness),
            help=INFO.fix,
            data={"shadowed_by": [h.id for h in higher]},
        )


def _number(value: float) -> str:
    return f"{value:g}"


def _why_it_wins(winner: RuleInfo, rule: RuleInfo) -> str:
    """Why `winner` is chosen over `rule` under priority selection (`Analysis.beats`)."""
    if winner.priority > rule.priority:
        return f"priority {winner.priority}"
    return f"equal priority, weight {_number(winner.weight)}"
