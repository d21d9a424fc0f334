"""A reference interpreter: the policy's meaning, by walking the resolved condition AST.

Takes a `ResolvedTheory` and answers the same questions as `CompiledPolicy` (computed
metrics, matching and eligible rules, the ceiling, monitors, switches) with the plainest code
that can be checked by reading it against DESIGN. It is slow on purpose: tests compare the
compiled policy with it on generated states and theories, and the matching benchmark uses it
as its AST-walking baseline. Not for use in the tutor loop.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from pedrag.dsl import ast
from pedrag.dsl.ir import ResolvedTheory

Row = Mapping[str, Any]

_COMPARE = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}


def _has_arithmetic(node: ast.Expr) -> bool:
    return any(isinstance(n, (ast.Arith, ast.Mul, ast.Neg)) for n in ast.walk(node))


def _rational(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    return Fraction(repr(value)) if isinstance(value, float) else Fraction(value)


class Interpreter:
    def __init__(self, theory: ResolvedTheory) -> None:
        self.theory = theory
        self.defaults = {name: m.default for name, m in theory.metrics.items()}

    # -- evaluation ------------------------------------------------------------------------
    def value(self, node: ast.Expr, rows: Sequence[Row]) -> Any:
        """`node` evaluated at the last of `rows` (the whole history up to that turn)."""
        match node:
            case (
                ast.Number(value=v)
                | ast.Bool(value=v)
                | ast.String(value=v)
                | ast.EnumConst(value=v)
            ):
                return v
            case ast.MetricRef(name=name):
                return rows[-1].get(name, self.defaults[name])
            case ast.Call():
                return self.call(node, rows)
            case ast.Neg(operand=operand):
                return -self.value(operand, rows)
            case ast.Arith(left=left, op=op, right=right):
                a, b = self.value(left, rows), self.value(right, rows)
                return a + b if op == "+" else a - b
            case ast.Mul(left=left, right=right):
                return self.value(left, rows) * self.value(right, rows)
            case ast.Compare(operands=operands, ops=ops):
                # A comparison with arithmetic is decided exactly (DESIGN: one semantics),
                # every number read as the decimal it prints as.
                if any(_has_arithmetic(o) for o in operands):
                    values = [self.rational(o, rows) for o in operands]
                else:
                    values = [self.value(o, rows) for o in operands]
                return all(_COMPARE[op](values[i], values[i + 1]) for i, op in enumerate(ops))
            case ast.In(element=element, container=ast.ListExpr(items=items), negated=negated):
                found = self.value(element, rows) in [self.value(i, rows) for i in items]
                return not found if negated else found
            case ast.Not(operand=operand):
                return not self.value(operand, rows)
            case ast.And(operands=operands):
                return all(self.value(o, rows) for o in operands)
            case ast.Or(operands=operands):
                return any(self.value(o, rows) for o in operands)
            case ast.Implies(left=left, right=right):
                return (not self.value(left, rows)) or bool(self.value(right, rows))
        raise TypeError(f"cannot evaluate {node!r} in a rule condition")

    def rational(self, node: ast.Expr, rows: Sequence[Row]) -> Any:
        """A numeric expression evaluated in exact rationals."""
        match node:
            case ast.Neg(operand=operand):
                return -self.rational(operand, rows)
            case ast.Arith(left=left, op=op, right=right):
                a, b = self.rational(left, rows), self.rational(right, rows)
                return a + b if op == "+" else a - b
            case ast.Mul(left=left, right=right):
                return self.rational(left, rows) * self.rational(right, rows)
        return _rational(self.value(node, rows))

    def call(self, node: ast.Call, rows: Sequence[Row]) -> Any:
        first, window = node.args
        assert isinstance(window, ast.Number)
        turns = int(window.value)
        if node.func in ("count", "streak"):
            held = [bool(self.value(first, rows[: i + 1])) for i in range(len(rows))]
            recent = held[-turns:]
            if node.func == "count":
                return sum(recent)
            streak = 0
            for flag in reversed(recent):
                if not flag:
                    break
                streak += 1
            return streak
        assert isinstance(first, ast.MetricRef)
        values = [row.get(first.name, self.defaults[first.name]) for row in rows]
        if node.func == "delta":
            then = values[-1 - turns] if len(values) > turns else values[0]
            return values[-1] - then
        recent = values[-turns:]
        if node.func == "mean":
            return sum(recent) / len(recent)
        # trend: least-squares slope per turn
        n = len(recent)
        if n < 2:
            return 0.0
        x_mean = (n - 1) / 2
        y_mean = sum(recent) / n
        numerator = 0.0
        denominator = 0.0
        for x, y in enumerate(recent):
            numerator += (x - x_mean) * (y - y_mean)
            denominator += (x - x_mean) * (x - x_mean)
        return numerator / denominator

    # -- the questions the runtime asks ------------------------------------------------------
    def rows(self, history: Sequence[Row]) -> list[Row]:
        """History with the current turn completed: defaults and computed metrics filled in."""
        history = list(history) or [{}]
        state = {**self.defaults, **history[-1]}
        rows = [*history[:-1], state]
        computed = [m for m in self.theory.metrics.values() if m.compute is not None]
        done: set[str] = set()
        while computed:
            names = {m.name for m in computed}
            ready = next(
                (
                    m
                    for m in computed
                    if not any(
                        isinstance(n, ast.MetricRef) and n.name in names - {m.name}
                        for n in (ast.walk(m.compute) if m.compute is not None else ())
                    )
                ),  # type: ignore[arg-type]
                computed[0],
            )
            assert ready.compute is not None
            value = self.value(ready.compute, rows)
            if ready.type == "bool":
                value = bool(value)
            elif ready.type == "int":
                value = min(max(value, int(ready.low)), int(ready.high))
            elif ready.type == "float":
                value = min(max(value, ready.low), ready.high)
            state[ready.name] = value
            done.add(ready.name)
            computed.remove(ready)
        return rows

    def computed(self, history: Sequence[Row]) -> dict[str, Any]:
        state = self.rows(history)[-1]
        return {
            name: state[name] for name, m in self.theory.metrics.items() if m.compute is not None
        }

    def matching(self, history: Sequence[Row]) -> tuple[int, ...]:
        rows = self.rows(history)
        return tuple(
            i for i, rule in enumerate(self.theory.rules) if self.value(rule.when.expr, rows)
        )

    def eligible(self, history: Sequence[Row], ceiling: int) -> tuple[int, ...]:
        actions = self.theory.actions
        return tuple(
            i
            for i in self.matching(history)
            if actions[self.theory.rules[i].action].rung <= ceiling
        )

    def ceiling(self, trusted: Row) -> tuple[int, tuple[tuple[int, str, int], ...]]:
        readable = {
            n for n, m in self.theory.metrics.items() if m.source in ("trusted", "classified")
        }
        rows = [{**self.defaults, **{k: v for k, v in trusted.items() if k in readable}}]
        rung = self.theory.ceiling_start
        applied = []
        for step in self.theory.ceiling_steps:
            if self.value(step.when.expr, rows):
                rung = {
                    "at_most": min(rung, step.rung),
                    "at_least": max(rung, step.rung),
                    "set": step.rung,
                }[step.effect]
                applied.append((step.index, step.effect, step.rung))
        return rung, tuple(applied)

    def monitors_fired(self, history: Sequence[Row]) -> tuple[str, ...]:
        rows = self.rows(history)
        return tuple(
            name for name, located in self.theory.monitors.items() if self.value(located.expr, rows)
        )

    def switch_target(self, history: Sequence[Row]) -> str | None:
        rows = self.rows(history)
        return next((s.to for s in self.theory.switches if self.value(s.when.expr, rows)), None)
