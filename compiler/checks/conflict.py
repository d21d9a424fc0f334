"""conflict: two rules that can be eligible in the same state and must not be.

Semantic check. A pair conflicts when both rules are eligible in some state and either their
actions are declared `conflicts` (in either direction) or, under `selection: priority`, they
have equal priority and different actions (the choice between them is then arbitrary).
Only such pairs are examined; disjoint boxes are skipped before z3 is asked.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pedrag.compiler.checks import CheckInfo
from pedrag.compiler.diagnose import rule_item, unknown, with_ceiling
from pedrag.compiler.guards import MAX_GUARDED, Guard, guard_change, separating_guard
from pedrag.compiler.written import reachable, unwritten_defaults
from pedrag.dsl.diagnostics import Diagnostic, Severity
from pedrag.dsl.ir import RuleInfo

if TYPE_CHECKING:  # z3 loads only when a semantic check runs
    from pedrag.compiler.analysis import Analysis

INFO = CheckInfo(
    name="conflict",
    severity=Severity.ERROR,
    summary="two rules can be eligible together with conflicting actions (or tied priorities)",
    explanation=(
        "Actions may declare `conflicts`: they must never be candidates in the same turn (an "
        "encouragement and a counterexample challenge, say). Under `selection: priority` two "
        "eligible rules with equal priority and different actions also conflict, because the "
        "theory does not say which should win. The witness is a state where both are eligible."
    ),
    example=(
        "actions:\n"
        "  encourage: {rung: H0, priority: 5, description: Encourage., conflicts: [challenge]}\n"
        "  challenge: {rung: H3, priority: 5, description: Challenge.}\n"
        "rules:\n"
        '  - {id: support, when: "frustration >= 0.5", then: encourage}\n'
        '  - {id: push, when: "confidence >= 0.5", then: challenge}\n'
    ),
    fix="Make the conditions exclusive: add a comparison to one rule that the other rule's "
    "states fail (each finding's help names one, computed from its witness and proved by the "
    "solver; `pedrag check --fix --unsafe-fixes` applies it), or change a priority.",
)


def _help(
    analysis: Analysis, first: RuleInfo, second: RuleInfo, why: str, state: Any, search: bool
) -> tuple[str, Guard | None]:
    """The finding's own fix: a proved guard, else which rule to drop or priority to change."""
    if not search:
        return (
            f"no guard searched past the first {MAX_GUARDED} conflicts of this theory: add a "
            "comparison to one rule that the other rule's states fail, or change a priority",
            None,
        )
    guard = separating_guard(analysis, first, second, state)
    other = first.id if guard is not None and guard.rule == second.id else second.id
    if guard is not None:
        text = (
            f'{guard_change(guard.as_data())} (when: "{guard.when}"); proved: '
            f"it and `{other}` are then never eligible together, and it still applies somewhere"
        )
    elif why == "declared":
        text = (
            f"no single comparison separates them: drop rule `{first.id}` or `{second.id}`, or "
            f"remove `{second.action}` from the conflicts of action `{first.action}`"
        )
    else:
        text = (
            f"no single comparison separates them: give rule `{second.id}` a `priority:` other "
            f"than {first.priority}, or drop one of the two rules"
        )
    if guard is not None and why != "declared":
        text += f"; or give rule `{second.id}` a `priority:` other than {first.priority}"
    return text, guard


def run(analysis: Analysis) -> Iterator[Diagnostic]:
    from pedrag.compiler.analysis import Outcome, rule_key

    # A finding's words, witness and fix depend only on its two rules' content, ids, actions
    # and priorities, whether a guard is searched, and the theory's semantics and unwritten
    # metrics: kept by those (`Analysis._cached`), so a keystroke in a file with 80,000
    # conflicts builds only the findings of the rules it changed; spans are placed afresh.
    about = (
        tuple(analysis.theory.metrics),
        tuple((name, repr(value)) for name, value in unwritten_defaults(analysis).items()),
    )
    facts: dict[str, tuple[Any, ...]] = {}  # each rule's part of a finding's key, made once
    for number, found in enumerate(analysis.conflicts()):
        first, second = found.rules
        items = (rule_item(second), rule_item(first))
        search = number < MAX_GUARDED
        pair = []
        for rule in (first, second):
            made = facts.get(rule.id)
            if made is None:
                made = facts[rule.id] = (
                    rule_key(analysis, rule),
                    rule.id,
                    rule.action,
                    rule.priority,
                )
            pair.append(made)
        key = ("conflict finding", about, *pair, found.extra["why"], search)
        shown = analysis._cached(
            key, lambda found=found, search=search: _shown(analysis, found, search)
        )
        if shown is None:
            continue  # only in a state no session reaches: `unwritten-metric` says why
        if isinstance(shown, Outcome):  # unknown (never kept: asked again next time)
            yield unknown(
                INFO.name,
                f"whether rules `{first.id}` and `{second.id}` can be eligible together",
                second.when.span,
                items,
            )
            continue
        message, witness, help, data = shown
        yield Diagnostic(
            check=INFO.name,
            severity=INFO.severity,
            message=message,
            span=second.when.span,
            items=items,
            related=(first.when.span,) if first.when.span.file == second.when.span.file else (),
            witness=witness,
            help=help,
            data=data,
        )


def _shown(analysis: Analysis, found: Any, search: bool) -> Any:
    """A conflict finding's message, witness, help and data; None when only a state no
    session reaches has it, the `unknown` outcome when the solver did not answer in time."""
    first, second = found.rules
    pair = [analysis.eligible[first.id], analysis.eligible[second.id]]
    outcome = reachable(analysis, pair, found.outcome)
    if outcome is None or outcome.unknown:
        return outcome
    if found.extra["why"] == "declared":
        reason = f"their actions `{first.action}` and `{second.action}` are declared to conflict"
    else:
        reason = (
            f"they have equal priority {first.priority} under priority selection and choose "
            f"different actions (`{first.action}`, `{second.action}`)"
        )
    help, guard = _help(analysis, first, second, found.extra["why"], outcome.state, search)
    return (
        f"rules `{first.id}` and `{second.id}` can both be eligible in the same state, and {reason}",
        with_ceiling(analysis, outcome.witness),
        help,
        {"guard": guard.as_data()} if guard is not None else {},
    )
