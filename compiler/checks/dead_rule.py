"""dead-rule: a rule whose condition can never hold within the metric domains.

Semantic check. Asks z3 whether the rule's condition is satisfiable; when it is not, the
unsat core over the condition's conjuncts (chained comparisons split into links) is shrunk
to a minimal set, and those exact atoms get carets.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING

from pedrag.compiler.checks import CheckInfo
from pedrag.compiler.diagnose import Remembered, rule_item, unknown
from pedrag.dsl.diagnostics import Diagnostic, Severity

if TYPE_CHECKING:  # z3 loads only when a semantic check runs
    from pedrag.compiler.analysis import Analysis, RuleStatus
    from pedrag.dsl.ir import RuleInfo

INFO = CheckInfo(
    name="dead-rule",
    severity=Severity.ERROR,
    summary="the condition can never hold within the metric domains",
    explanation=(
        "A rule whose condition contradicts itself (or the metrics' ranges) never fires, so the "
        "behaviour its author intended never happens. The carets mark a minimal set of parts of "
        "the condition that cannot all hold together."
    ),
    example=(
        "rules:\n"
        "  - id: calm_but_frustrated\n"
        '    when: "frustration >= 0.7 and frustration < 0.3"\n'
        "    then: encourage\n"
    ),
    fix="Relax or remove one of the marked parts, or delete the rule.",
)


REMEMBERED: Remembered[Diagnostic] = Remembered()


def run(analysis: Analysis) -> Iterator[Diagnostic]:
    REMEMBERED.begin()
    yield from analysis.each_rule(INFO.name, partial(_findings, analysis))


def _findings(analysis: Analysis, rule: RuleInfo) -> list[Diagnostic]:
    status = analysis.rule_status(rule)
    if status.holds.unknown or status.dead:
        # Printing and placing a core's pieces is most of a dead rule's finding.
        return [REMEMBERED.get((rule, status), partial(_diagnostic, analysis, rule, status))]
    return []


def _diagnostic(analysis: Analysis, rule: RuleInfo, status: RuleStatus) -> Diagnostic:
    if status.holds.unknown:
        return unknown(
            INFO.name,
            f"whether rule `{rule.id}` can ever hold",
            rule.when.span,
            (rule_item(rule),),
        )
    core = analysis.shown_pieces(rule.when, status.dead_core)
    if core:
        parts = " and ".join(f"`{text}`" for text, _ in core)
        message = (
            f"rule `{rule.id}` can never fire: {parts} cannot hold together"
            if len(core) > 1
            else f"rule `{rule.id}` can never fire: `{core[0][0]}` is impossible within the metric domains"
        )
    else:
        message = f"rule `{rule.id}` can never fire: its condition is unsatisfiable"
    main = core[0][1] if core else rule.when.span
    return Diagnostic(
        check=INFO.name,
        severity=INFO.severity,
        message=message,
        span=main,
        items=(rule_item(rule),),
        related=tuple(span for _, span in core[1:]),
        help=INFO.fix,
        data={"core": [text for text, _ in core]},
    )
