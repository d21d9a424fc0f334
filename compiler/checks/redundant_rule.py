"""redundant-rule: a rule whose condition implies another rule's with the same action.

Semantic check. Among rules choosing the same action, rule A is redundant when B holds
wherever A holds (of two equivalent rules, the later one is reported). Candidates are
indexed so most pairs are never formed; a pair is ruled out when B is false at a known
state of A or A's box leaves B's hull, proved when A's box lies inside B's; only what
structure cannot decide asks z3 whether `A and not B` is satisfiable.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING

from pedrag.compiler.checks import CheckInfo
from pedrag.compiler.diagnose import Remembered, rule_item, unknown
from pedrag.dsl.diagnostics import Diagnostic, Severity

if TYPE_CHECKING:  # z3 loads only when a semantic check runs
    from pedrag.compiler.analysis import Analysis, Finding

INFO = CheckInfo(
    name="redundant-rule",
    severity=Severity.WARNING,
    summary="same action, condition implied by another rule's",
    explanation=(
        "Two rules choose the same action and one's condition implies the other's, so the "
        "narrower rule adds nothing but weight. Under weighted selection it silently makes the "
        "action more likely in its region; say so with `weight:` on one rule instead."
    ),
    example=(
        "rules:\n"
        '  - {id: frustrated, when: "frustration >= 0.7", then: encourage}\n'
        '  - {id: very_frustrated, when: "frustration >= 0.9", then: encourage}\n'
    ),
    fix="Delete the narrower rule, or give the wider rule a `weight:`.",
)


REMEMBERED: Remembered[Diagnostic] = Remembered()
GROUPS: Remembered[list[Diagnostic]] = Remembered()
"""A same-action group's diagnostics, by its findings' list: an edit leaves the other
actions' lists the same objects (`Analysis.redundant_by_action`), so their 4,000 findings
at 5,000 rules are not looked up one by one."""


def run(analysis: Analysis) -> Iterator[Diagnostic]:
    REMEMBERED.begin()
    GROUPS.begin()
    for _, found in analysis.redundant_by_action().values():
        yield from GROUPS.get((found,), partial(_group, found))


def _group(found: list[Finding]) -> list[Diagnostic]:
    out = []
    for finding in found:
        rule, other = finding.rules
        out.append(REMEMBERED.get((rule, other, finding.outcome), partial(_diagnostic, finding)))
    return out


def _diagnostic(finding: Finding) -> Diagnostic:
    rule, other = finding.rules
    items = (rule_item(rule), rule_item(other))
    if finding.outcome.unknown:
        return unknown(
            INFO.name,
            f"whether rule `{rule.id}` implies rule `{other.id}`",
            rule.when.span,
            items,
        )
    return Diagnostic(
        check=INFO.name,
        severity=INFO.severity,
        message=(
            f"rule `{rule.id}` is redundant: rule `{other.id}` chooses the same action "
            f"`{rule.action}` wherever `{rule.id}` holds"
        ),
        span=rule.when.span,
        items=items,
        related=(other.when.span,) if other.when.span.file == rule.when.span.file else (),
        witness=finding.outcome.witness,
        help=INFO.fix,
    )
