"""Guards that fix a finding: help computed from the finding and proved by the solver.

Compiler stage helper for the `conflict` and `invariant-violation` checks. Takes an `Analysis`,
the finding's rules and its witness; gives a `Guard`: a comparison over a metric to add (with
`and`) to one rule's condition, with the rule's condition as it would then read, or None when
no single comparison works.

A candidate is kept only when the solver proves both that it removes the finding (the two
rules can no longer be eligible together; the rule can no longer choose its action where the
invariant is broken) and that the narrowed rule is still eligible somewhere (a guard that
killed the rule would trade the finding for a dead rule). Narrowing a rule only shrinks the
states where it is eligible, so it cannot create a conflict or an invariant violation.

Candidates, in order: the witness's own values (a guard that excludes the witness state, over
a metric the finding reads: "the value taken from the witness"), then the negation of each
comparison the other side states (the other rule's condition, the invariant's condition).
Before, the help was one fixed sentence from the catalog that named a `frustration` metric a
theory might not have.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from pedrag.compiler import formula as F
from pedrag.compiler.boxes import hull
from pedrag.dsl import ast
from pedrag.dsl.ir import ActionInfo, InvariantInfo, RuleInfo
from pedrag.dsl.parser import ConditionSyntaxError, parse_condition
from pedrag.dsl.printer import to_text
from pedrag.kernel.exact import decimal_fraction

if TYPE_CHECKING:
    from pedrag.compiler.analysis import Analysis

MAX_CANDIDATES = 16
"""Guards tried per finding (two solver questions each, mostly answered without z3)."""

MAX_GUARDED = 100
"""Findings per check and theory that get a guard searched for. A generated 1,000-rule theory
under priority selection has 33,049 conflicts; the first ones get their guard and the check's
time stays bounded (the rest say so in their help)."""

_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


@dataclass(frozen=True)
class Guard:
    rule: str  # the rule to narrow
    text: str  # the comparison to add, e.g. `frustration < 0.5`
    when: str  # the rule's condition with the guard added
    replaces: str = ""  # the looser bound(s) the guard stands in for, as written; "" if none

    def as_data(self) -> dict[str, str]:
        data = {"rule": self.rule, "add": self.text, "when": self.when}
        if self.replaces:
            data["replaces"] = self.replaces
        return data


def guard_change(guard: dict[str, str]) -> str:
    """What applying a guard (its `as_data` form) does to the rule, in words: the one text
    for the finding's help, `pedrag check --fix`'s report and the editor's quick fix.

    A guard that stands in for a looser bound narrows it (`attempts >= 3` becomes
    `attempts >= 5`); saying "add `attempts >= 5`" there misled a designer into expecting
    both comparisons in the condition."""
    if guard.get("replaces"):
        return f"narrow `{guard['replaces']}` to `{guard['add']}` in rule `{guard['rule']}`"
    return f"add `{guard['add']}` to rule `{guard['rule']}`"


def narrowed(rule: RuleInfo, guard: ast.Expr) -> str:
    """The rule's condition as written, with `and guard` added (parenthesised if needed)."""
    written = " ".join((rule.when.text or to_text(rule.when.expr)).split())
    if isinstance(rule.when.expr, (ast.Or, ast.Implies)):
        written = f"({written})"
    return f"{written} and {to_text(guard)}"


def tightened(analysis: Analysis, rule: RuleInfo, guard: ast.Expr) -> tuple[str, str]:
    """The rule's condition with the guard added, as a designer would write it: a top-level
    conjunct the guard implies (a looser bound on the same metric, `attempts >= 3` under
    `attempts >= 5`, or `true`) is dropped and the guard stands in its place; the others
    stay as written (a chained comparison is split into its links when the guard implies one).
    Implication is decided on the two sides' boxes (`compiler/boxes.py`,
    exact for one-variable comparisons, integer bounds rounded), and the result is kept only
    when the solver proves it means what `narrowed` does; else `narrowed`. Second: the
    dropped conjuncts as written (joined by `and`), "" when nothing was dropped."""
    expr = rule.when.expr
    guard_node = analysis.translator.condition(guard)
    conjuncts: list[ast.Expr] = []
    for part in expr.operands if isinstance(expr, ast.And) else (expr,):
        # A chain (`3 <= attempts <= 9`) is a conjunction of bounds too: split it when the
        # guard implies one of its links, so the other stays.
        links = _links(part)
        if len(links) > 1 and any(_implies(analysis, guard_node, link) for link in links):
            conjuncts.extend(links)
        else:
            conjuncts.append(part)
    implied = [_implies(analysis, guard_node, part) for part in conjuncts]
    if not any(implied):
        return narrowed(rule, guard), ""
    kept = [part for part, redundant in zip(conjuncts, implied, strict=True) if not redundant]
    tidy = F.and_([guard_node, *(analysis.translator.condition(part) for part in kept)])
    whole = F.and_([guard_node, analysis.translator.condition(expr)])
    if not analysis.decide([tidy, F.not_(whole)], witness=False).unsat:
        return narrowed(rule, guard), ""  # never expected: the boxes said it implies them
    parts = [_written(rule, part) for part in kept]
    parts.insert(implied.index(True), to_text(guard))
    dropped = [
        _written(rule, part)
        for part, redundant in zip(conjuncts, implied, strict=True)
        if redundant and not (isinstance(part, ast.Bool) and part.value)
    ]
    return " and ".join(parts), " and ".join(dropped)


def _links(part: ast.Expr) -> list[ast.Expr]:
    """A chained comparison's links (`3 <= a <= 9`: `3 <= a`, `a <= 9`), else the part."""
    if not isinstance(part, ast.Compare) or len(part.ops) < 2:
        return [part]
    return [
        ast.Compare((part.operands[index], part.operands[index + 1]), (op,))
        for index, op in enumerate(part.ops)
    ]


def _implies(analysis: Analysis, guard: F.Node, part: ast.Expr) -> bool:
    """Whether `part` holds wherever `guard` does, as their boxes show it (False when either
    is not exactly a box)."""
    guard_box, guard_exact = hull(guard, analysis.domains)
    part_box, part_exact = hull(analysis.translator.condition(part), analysis.domains)
    return guard_exact and part_exact and not guard_box.empty() and guard_box.within(part_box)


def _written(rule: RuleInfo, part: ast.Expr) -> str:
    """A conjunct of the rule's condition as the designer wrote it (spacing folded), or
    printed when its span does not read back as it."""
    shown = to_text(part)
    start, end = part.span
    if rule.when.text and part.span != ast.NO_SPAN:
        written = " ".join(rule.when.text[start:end].split())
        try:
            if to_text(parse_condition(written)) == shown:
                shown = written
        except ConditionSyntaxError:
            pass
    return f"({shown})" if isinstance(part, (ast.Or, ast.Implies)) else shown


def _decimal(value: Any) -> int | float | None:
    """A witness value as a constant the condition language writes exactly, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    exact = Fraction(value) if isinstance(value, (Fraction, float)) else None
    if exact is None:
        return None
    if exact.denominator == 1:
        return int(exact)
    shown = float(exact)
    return shown if decimal_fraction(shown) == exact else None


def _from_witness(
    analysis: Analysis, metrics: Iterable[str], state: dict[str, Any]
) -> Iterator[ast.Expr]:
    """Comparisons that the witness state fails, over `metrics` the witness gives."""
    for name in metrics:
        if name not in state or name not in analysis.theory.metrics:
            continue
        metric, value, ref = analysis.theory.metrics[name], state[name], ast.MetricRef(name)
        if metric.type == "bool" and isinstance(value, bool):
            yield ast.Not(ref) if value else ref
        elif metric.type == "enum" and isinstance(value, str):
            yield ast.Compare((ref, ast.EnumConst(value)), ("!=",))
        elif metric.numeric:
            number = _decimal(value)
            if number is not None:
                yield ast.Compare((ref, ast.Number(number)), ("<",))
                yield ast.Compare((ref, ast.Number(number)), (">",))


def _bools(analysis: Analysis) -> frozenset[str]:
    return frozenset(n for n, m in analysis.theory.metrics.items() if m.type == "bool")


def _negations(expr: ast.Expr, bools: frozenset[str]) -> Iterator[ast.Expr]:
    """The negation of each comparison of a metric with a constant inside `expr` (a bool
    metric read on its own is a comparison too)."""
    for node in ast.walk(expr):
        match node:
            case ast.MetricRef(name=name) if name in bools:
                yield ast.Not(node)
            case ast.Not(operand=ast.MetricRef() as ref):
                yield ref
            case ast.Compare(operands=(left, right), ops=(op,)) if op in _NEGATED:
                if isinstance(right, (ast.Number, ast.EnumConst)) and ast.metric_names(left):
                    yield ast.Compare((left, right), (_NEGATED[op],))
                elif isinstance(left, (ast.Number, ast.EnumConst)) and ast.metric_names(right):
                    yield ast.Compare((right, left), (_NEGATED[_FLIPPED[op]],))
            case ast.In(element=element, container=ast.ListExpr() as values, negated=negated):
                if ast.metric_names(element):
                    yield ast.In(element, values, not negated)


def _unique(candidates: Iterable[ast.Expr]) -> list[ast.Expr]:
    seen: dict[str, ast.Expr] = {}
    for candidate in candidates:
        seen.setdefault(to_text(candidate), candidate)
        if len(seen) >= MAX_CANDIDATES:
            break
    return list(seen.values())


def _first_proved(
    analysis: Analysis, rule: RuleInfo, candidates: list[ast.Expr], against: F.Node
) -> Guard | None:
    """The first candidate that makes the rule's eligibility disjoint from `against` and
    leaves the rule eligible somewhere, as the solver proves it."""
    eligible = analysis.eligible[rule.id]
    from pedrag.compiler.encode import TranslationError

    for candidate in candidates:
        try:
            node = analysis.translator.condition(candidate)
        except TranslationError:  # a comparison the encoding has no term for: not offered
            continue
        if not analysis.decide([eligible, node, against], witness=False).unsat:
            continue
        if not analysis.decide([eligible, node], witness=False).sat:
            continue
        when, replaces = tightened(analysis, rule, candidate)
        return Guard(rule.id, to_text(candidate), when, replaces)
    return None


def _metrics_of(analysis: Analysis, *exprs: ast.Expr) -> list[str]:
    """The metrics the expressions read, those all of them read first, in declaration order."""
    reads = [analysis.reads(expr) for expr in exprs]
    shared = frozenset.intersection(*reads) if reads else frozenset()
    either = frozenset().union(*reads)
    order = list(analysis.theory.metrics)
    return [m for m in order if m in shared] + [m for m in order if m in either - shared]


def separating_guard(
    analysis: Analysis, first: RuleInfo, second: RuleInfo, state: dict[str, Any] | None
) -> Guard | None:
    """A guard on one rule (the second, else the first) under which the two can never be
    eligible together, and which keeps it eligible somewhere."""
    for rule, other in ((second, first), (first, second)):
        metrics = _metrics_of(analysis, rule.when.expr, other.when.expr)
        candidates = _unique(
            [
                *_from_witness(analysis, metrics, state or {}),
                *_negations(other.when.expr, _bools(analysis)),
            ]
        )
        found = _first_proved(analysis, rule, candidates, analysis.eligible[other.id])
        if found is not None:
            return found
    return None


def excluding_guard(
    analysis: Analysis,
    rule: RuleInfo,
    invariant: InvariantInfo,
    action: ActionInfo,
    state: dict[str, Any] | None,
) -> Guard | None:
    """A guard on the rule under which it never chooses `action` where the invariant is
    broken, and which keeps it eligible somewhere."""
    expr = invariant.condition.expr
    metrics = [m for m in analysis.theory.metrics if m in analysis.reads(expr)]
    bools = _bools(analysis)
    # A `never` condition's comparisons, negated, keep the rule out of it; an `always`
    # condition's own comparisons are what the rule must require.
    stated = _negations(expr, bools) if invariant.kind == "never" else _always_parts(expr, bools)
    candidates = _unique([*_from_witness(analysis, metrics, state or {}), *stated])
    violation = analysis.violations[(invariant.id, action.name)]
    return _first_proved(analysis, rule, candidates, violation)


def _always_parts(expr: ast.Expr, bools: frozenset[str]) -> Iterator[ast.Expr]:
    """The comparisons of an `always` condition over metrics, as they are written."""
    for node in ast.walk(expr):
        match node:
            case ast.MetricRef(name=name) if name in bools:
                yield node
            case ast.Not(operand=ast.MetricRef()):
                yield node
            case ast.Compare(operands=(left, right), ops=(_,)) if ast.metric_names(
                left
            ) or ast.metric_names(right):
                if not any(isinstance(n, ast.InvariantVar) for n in ast.walk(node)):
                    yield node
