"""invariant-violation: an eligible rule's action breaks an invariant in some state.

Semantic check. For every rule and invariant, z3 looks for a state where the rule is eligible
and the invariant, read with the rule's action as the selected action (`action`, `rung`,
`priority`, `tags`), is broken (`never` condition true, `always` condition false). The
witness is that state and the action; carets mark the invariant's parts that hold there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pedrag.compiler import formula as F
from pedrag.compiler.checks import CheckInfo
from pedrag.compiler.diagnose import rule_item, unknown, with_ceiling
from pedrag.compiler.guards import MAX_GUARDED, excluding_guard, guard_change
from pedrag.compiler.written import reachable
from pedrag.dsl import ast
from pedrag.dsl.diagnostics import Diagnostic, Severity
from pedrag.dsl.ir import ActionInfo, InvariantInfo
from pedrag.kernel.rungs import rung_name

if TYPE_CHECKING:  # z3 loads only when a semantic check runs
    from pedrag.compiler.analysis import Analysis

INFO = CheckInfo(
    name="invariant-violation",
    severity=Severity.ERROR,
    summary="an eligible rule's action breaks an invariant in some state",
    explanation=(
        "Invariants are promises about every turn: `never: exam_active and rung > H0` says no "
        "help during an exam. The compiler proves them over every state and every rule that "
        "can be eligible there; a counterexample is a state plus the action the runtime could "
        "choose in it. `tags` are the action's declared tags and those its wordings give it "
        "(`{hint}` gives `hint`, `{example}` `example`, `{outline}` `partial_solution`, "
        "`{solution}` `reveal`): the witness names a derived tag the invariant reads."
    ),
    example=(
        "invariants:\n"
        '  - {id: exam_no_help, never: "exam_active and rung > H0"}\n'
        "rules:\n"
        '  - {id: stuck, when: "attempts >= 3", then: leading_question}   # rung H3\n'
    ),
    fix="Exclude the witness state from the rule's condition (each finding's help names a "
    "comparison to add, computed from its witness and proved by the solver; `pedrag check --fix "
    "--unsafe-fixes` applies it), or add a ceiling step that lowers the ceiling there.",
)


def _state(witness: dict[str, Any]) -> dict[str, Any]:
    from pedrag.compiler.encode import _frac

    return {
        k: (_frac(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v)
        for k, v in witness.items()
    }


def _derived(invariant: InvariantInfo, action: ActionInfo) -> str:
    """The tags the invariant reads that the action carries only through its wordings
    (`dsl.resolve.action_tags`), said beside it: the designer did not write them."""
    read = {
        node.value for node in ast.walk(invariant.condition.expr) if isinstance(node, ast.String)
    }
    return "".join(
        f"; tag `{tag}` derived: a wording fills `{{{name}}}`"
        for tag, name in action.derived
        if tag in read
    )


def run(analysis: Analysis) -> Iterator[Diagnostic]:
    for number, found in enumerate(analysis.invariant_violations()):
        rule = found.rules[0]
        invariant = found.extra["invariant"]
        action = analysis.theory.actions[rule.action]
        violation = analysis.violations[(invariant.id, action.name)]
        outcome = reachable(analysis, [analysis.eligible[rule.id], violation], found.outcome)
        if outcome is None:
            continue  # only in a state no session reaches: `unwritten-metric` says why
        finding = replace(found, outcome=outcome)
        items = (rule_item(rule), f"invariant:{invariant.id}")
        if finding.outcome.unknown:
            yield unknown(
                INFO.name,
                f"whether rule `{rule.id}` can break invariant `{invariant.id}`",
                rule.when.span,
                items,
            )
            continue
        witness = with_ceiling(analysis, finding.outcome.witness) or {}
        state = _state(finding.outcome.witness or {})
        related = []
        if invariant.kind == "never":  # the parts of the forbidden combination that hold here
            for span, node in analysis.pieces_for_action(invariant.condition, action):
                if node.vars <= state.keys() and F.evaluate(node, state):
                    related.append(span)
        related = related or [invariant.condition.span]
        witness["action"] = f"{action.name} ({rung_name(action.rung)}{_derived(invariant, action)})"
        verb = "never allows" if invariant.kind == "never" else "requires"
        guard = (
            excluding_guard(analysis, rule, invariant, action, finding.outcome.state)
            if number < MAX_GUARDED
            else None
        )
        if number >= MAX_GUARDED:
            help = (
                f"no guard searched past the first {MAX_GUARDED} violations of this theory: "
                "exclude the witness state from the rule's condition, or add a ceiling step "
                "that lowers the ceiling there"
            )
        elif guard is not None:
            help = (
                f'{guard_change(guard.as_data())} (when: "{guard.when}"); proved: it '
                f"then never chooses `{action.name}` where `{invariant.id}` is broken, and "
                "still applies somewhere; or add a ceiling step that lowers the ceiling there"
            )
        else:
            help = (
                "no single comparison keeps the rule out of the violation: add a ceiling step "
                f"that lowers the ceiling there, or choose an action for rule `{rule.id}` that "
                "keeps the invariant"
            )
        yield Diagnostic(
            check=INFO.name,
            severity=INFO.severity,
            message=(
                f"rule `{rule.id}` can choose `{action.name}` where invariant `{invariant.id}` "
                f"({invariant.kind}: {invariant.condition.text.strip()}) is broken"
            ),
            span=rule.when.span,
            items=items,
            related=tuple(related),
            witness=witness,
            help=help,
            data={"invariant": invariant.id, "verb": verb}
            | ({"guard": guard.as_data()} if guard is not None else {}),
        )
