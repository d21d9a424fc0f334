"""Brute force: every check's answer by enumerating all states (the tests' oracle).

Compiler stage helper, independent of the z3 encoding: it evaluates the resolved condition
ASTs directly, state by state, with the ceiling stepped through in order. Only for theories
whose metrics are all finite (bools, enums, int ranges) and small; the property tests
compare `Analysis` with it on generated theories.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from pedrag.dsl import ast
from pedrag.dsl.ir import ActionInfo, ResolvedTheory, RuleInfo

# DESIGN "Actions": a wording that fills the exercise's help gives its action that tag. Read
# here from the theory file's own words, not from the front end's derivation.
_HELP = (("{hint}", "hint"), ("{example}", "example"), ("{outline}", "partial_solution"))
_HELP += (("{solution}", "reveal"),)


def carried(theory: ResolvedTheory, name: str) -> ActionInfo:
    """Action `name` as an invariant reads it: the tags it declares and its wordings give."""
    written = theory.model.actions[name]
    wordings = [written.template or "", *written.variants]
    given = {tag for mark, tag in _HELP if any(mark in wording for wording in wordings)}
    return replace(theory.actions[name], tags=frozenset(written.tags) | given)


def _number(value: Any) -> Fraction:
    return Fraction(str(value)) if isinstance(value, float) else Fraction(value)


def evaluate(node: ast.Expr, state: dict[str, Any], action: ActionInfo | None = None) -> Any:
    match node:
        case ast.Number(value=value):
            return _number(value)
        case ast.Bool(value=value):
            return value
        case ast.String(value=value):
            return value
        case ast.Rung(level=level):
            return Fraction(level)
        case ast.EnumConst(value=value):
            return value
        case ast.ActionConst(name=name):
            return name
        case ast.MetricRef(name=name):
            value = state[name]
            return value if isinstance(value, (bool, str)) else Fraction(value)
        case ast.InvariantVar(name=name):
            assert action is not None
            return {
                "action": action.name,
                "rung": Fraction(action.rung),
                "priority": Fraction(action.priority),
                "tags": action.tags,
            }[name]
        case ast.Neg(operand=operand):
            return -evaluate(operand, state, action)
        case ast.Arith(left=left, op=op, right=right):
            a, b = evaluate(left, state, action), evaluate(right, state, action)
            return a + b if op == "+" else a - b
        case ast.Mul(left=left, right=right):
            return evaluate(left, state, action) * evaluate(right, state, action)
        case ast.Compare(operands=operands, ops=ops):
            values = [evaluate(o, state, action) for o in operands]
            return all(_compare(values[i], op, values[i + 1]) for i, op in enumerate(ops))
        case ast.In(element=element, container=container, negated=negated):
            value = evaluate(element, state, action)
            if isinstance(container, ast.InvariantVar):
                found = value in evaluate(container, state, action)
            else:
                assert isinstance(container, ast.ListExpr)
                found = any(value == evaluate(item, state, action) for item in container.items)
            return found != negated
        case ast.Not(operand=operand):
            return not evaluate(operand, state, action)
        case ast.And(operands=operands):
            return all(evaluate(o, state, action) for o in operands)
        case ast.Or(operands=operands):
            return any(evaluate(o, state, action) for o in operands)
        case ast.Implies(left=left, right=right):
            return (not evaluate(left, state, action)) or evaluate(right, state, action)
    raise ValueError(f"brute force cannot evaluate {type(node).__name__}")


def _compare(a: Any, op: str, b: Any) -> bool:
    return {
        "<": lambda: a < b,
        "<=": lambda: a <= b,
        ">": lambda: a > b,
        ">=": lambda: a >= b,
        "==": lambda: a == b,
        "!=": lambda: a != b,
    }[op]()


def states(theory: ResolvedTheory) -> list[dict[str, Any]]:
    names: list[str] = []
    domains: list[list[Any]] = []
    for name, metric in theory.metrics.items():
        names.append(name)
        if metric.type == "bool":
            domains.append([False, True])
        elif metric.type == "enum":
            domains.append(list(metric.values))
        elif metric.type == "int":
            domains.append(list(range(int(metric.low), int(metric.high) + 1)))
        else:
            raise ValueError("brute force needs finite metrics")
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*domains)]


def ceiling(theory: ResolvedTheory, state: dict[str, Any]) -> int:
    level = theory.ceiling_start
    for step in theory.ceiling_steps:
        if evaluate(step.when.expr, state):
            if step.effect == "at_most":
                level = min(level, step.rung)
            elif step.effect == "at_least":
                level = max(level, step.rung)
            else:
                level = step.rung
    return level


@dataclass
class BruteResult:
    dead: set[str] = field(default_factory=set)
    blocked: set[str] = field(default_factory=set)
    conflicts: set[tuple[str, str]] = field(default_factory=set)
    shadowed: set[str] = field(default_factory=set)
    redundant: set[str] = field(default_factory=set)
    gap: bool = False
    invariant: set[tuple[str, str]] = field(default_factory=set)
    coverage: Fraction = Fraction(0)


def brute(theory: ResolvedTheory) -> BruteResult:
    rules = theory.rules
    all_states = states(theory)
    holds: dict[str, set[int]] = {r.id: set() for r in rules}
    eligible: dict[str, set[int]] = {r.id: set() for r in rules}
    covered = 0
    for index, state in enumerate(all_states):
        level = ceiling(theory, state)
        any_eligible = False
        for rule in rules:
            if evaluate(rule.when.expr, state):
                holds[rule.id].add(index)
                if theory.actions[rule.action].rung <= level:
                    eligible[rule.id].add(index)
                    any_eligible = True
        covered += any_eligible
    result = BruteResult()
    result.coverage = Fraction(covered, len(all_states))
    result.gap = covered < len(all_states)
    result.dead = {r.id for r in rules if not holds[r.id]}
    result.blocked = {r.id for r in rules if holds[r.id] and not eligible[r.id]}
    actions = theory.actions
    for a, b in itertools.combinations(rules, 2):
        declared = (
            b.action in actions[a.action].conflicts or a.action in actions[b.action].conflicts
        )
        tied = theory.selection == "priority" and a.priority == b.priority and a.action != b.action
        if (declared or tied) and eligible[a.id] & eligible[b.id]:
            result.conflicts.add((a.id, b.id))
    if theory.selection == "priority":
        for rule in rules:
            mine = eligible[rule.id]
            if not mine:
                continue
            higher: set[int] = set()
            for other in rules:
                if other is not rule and (other.priority, other.weight) > (
                    rule.priority,
                    rule.weight,
                ):
                    higher |= eligible[other.id]
            if mine <= higher:
                result.shadowed.add(rule.id)
    for rule in rules:
        if not holds[rule.id]:
            continue
        for other in rules:
            if other is rule or other.action != rule.action or not holds[other.id]:
                continue
            if holds[rule.id] <= holds[other.id] and (
                other.index < rule.index or not holds[other.id] <= holds[rule.id]
            ):
                result.redundant.add(rule.id)
    for invariant in theory.invariants:
        for rule in rules:
            action = carried(theory, rule.action)
            for index in eligible[rule.id]:
                value = evaluate(invariant.condition.expr, all_states[index], action)
                if value == (invariant.kind == "never"):
                    result.invariant.add((rule.id, invariant.id))
                    break
    return result


def rule_by_id(theory: ResolvedTheory, rule_id: str) -> RuleInfo:
    return next(r for r in theory.rules if r.id == rule_id)
