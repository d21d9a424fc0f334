"""Lowering: a `ResolvedTheory` -> the compiled policy, as canonical JSON-able data.

The last compiler stage. It takes a theory the front end resolved without errors and gives
plain data (dicts, lists, strings, numbers) that `pedrag.runtime.policy.compiled` loads without z3,
Lark or any `pedrag.dsl` module. Conditions travel as small expression trees (JSON arrays,
`["compare", ["<"], [["metric", "mastery"], ["number", 0.3]]]`), never as code: the runtime
generates and `exec`s its own matcher from them at load time, so a policy file cannot carry
code into the tutor.

The output is deterministic: keys sorted, lists in source order, no paths or timestamps, and
`content_hash` is the sha256 of the canonical JSON of everything else. `dumps` gives the exact
bytes `pedrag compile` writes. The format is described in `docs/compiled-policy.md`.
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

from pedrag.dsl import ast
from pedrag.dsl.ir import ResolvedTheory
from pedrag.dsl.printer import to_text
from pedrag.kernel.canonical import canonical_json, content_hash
from pedrag.kernel.exact import decimal_fraction

FORMAT = 1

_ARITH = {"+": "add", "-": "sub"}


def lower_expr(node: ast.Expr) -> list[Any]:
    """One resolved condition node -> its JSON expression tree."""
    match node:
        case ast.Number(value=value):
            return ["number", value]
        case ast.Bool(value=value):
            return ["bool", value]
        case ast.String(value=value):
            return ["string", value]
        case ast.Rung(level=level):
            return ["rung", level]
        case ast.MetricRef(name=name):
            return ["metric", name]
        case ast.EnumConst(value=value):
            return ["enum", value]
        case ast.ActionConst(name=name):
            return ["action", name]
        case ast.InvariantVar(name=name):
            return ["var", name]
        case ast.Call(func=func, args=args):
            return ["call", func, [lower_expr(a) for a in args]]
        case ast.Neg(operand=operand):
            return ["neg", lower_expr(operand)]
        case ast.Arith(left=left, op=op, right=right):
            return [_ARITH[op], lower_expr(left), lower_expr(right)]
        case ast.Mul(left=left, right=right):
            return ["mul", lower_expr(left), lower_expr(right)]
        case ast.Compare(operands=operands, ops=ops):
            if not any(_has_arithmetic(o) for o in operands):
                return ["compare", list(ops), [lower_expr(o) for o in operands]]
            pairs = [
                _lower_comparison(left, op, right)
                for left, op, right in zip(operands, ops, operands[1:], strict=False)
            ]
            return pairs[0] if len(pairs) == 1 else ["and", pairs]
        case ast.ListExpr(items=items):
            return ["list", [lower_expr(i) for i in items]]
        case ast.In(element=element, container=container, negated=negated):
            return ["in", lower_expr(element), lower_expr(container), negated]
        case ast.Not(operand=operand):
            return ["not", lower_expr(operand)]
        case ast.And(operands=operands):
            return ["and", [lower_expr(o) for o in operands]]
        case ast.Or(operands=operands):
            return ["or", [lower_expr(o) for o in operands]]
        case ast.Implies(left=left, right=right):
            return ["implies", lower_expr(left), lower_expr(right)]
    # An unresolved `Name` never reaches lowering: the front end rejects the file first.
    raise TypeError(f"cannot lower {type(node).__name__}: resolve the theory first")


# -- exact arithmetic ---------------------------------------------------------------------------
#
# The compiler proves conditions in exact decimal arithmetic (`0.1 + 0.2` is 3/10 to z3, as to a
# designer), while the runtime evaluates Python floats, where 0.1 + 0.2 != 0.3 and 0.1 * 3 !=
# 0.3. So a comparison with arithmetic in it is solved here, exactly, for its one metric
# (`f * 3 == 0.3` becomes `f == 0.1`): a float compared with the float nearest a decimal bound
# then orders as the decimals do, and what the runtime matches is what the compiler proved.

Linear = tuple[dict[str, Fraction], dict[str, list[Any]], Fraction]  # terms, their trees, constant


def _has_arithmetic(node: ast.Expr) -> bool:
    return any(isinstance(n, (ast.Arith, ast.Mul, ast.Neg)) for n in ast.walk(node))


def _linear(node: ast.Expr) -> Linear | None:
    """A numeric expression as sum(coefficient * term) + constant, exactly; None if it is not."""
    match node:
        case ast.Number(value=value):
            return {}, {}, decimal_fraction(value)
        case ast.MetricRef() | ast.Call():
            tree = lower_expr(node)
            key = json.dumps(tree, sort_keys=True)
            return {key: Fraction(1)}, {key: tree}, Fraction(0)
        case ast.Neg(operand=operand):
            inner = _linear(operand)
            if inner is None:
                return None
            return {k: -c for k, c in inner[0].items()}, inner[1], -inner[2]
        case ast.Arith(left=left, op=op, right=right):
            a, b = _linear(left), _linear(right)
            if a is None or b is None:
                return None
            sign = 1 if op == "+" else -1
            terms = dict(a[0])
            for key, coef in b[0].items():
                terms[key] = terms.get(key, Fraction(0)) + sign * coef
            return terms, {**a[1], **b[1]}, a[2] + sign * b[2]
        case ast.Mul(left=left, right=right):
            a, b = _linear(left), _linear(right)
            if a is None or b is None or (a[0] and b[0]):
                return None  # not linear (the front end rejects it; be safe)
            scale, other = (a[2], b) if not a[0] else (b[2], a)
            return {k: c * scale for k, c in other[0].items()}, other[1], other[2] * scale
    return None


_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_HOLDS = {
    "<": lambda x: x < 0,
    "<=": lambda x: x <= 0,
    ">": lambda x: x > 0,
    ">=": lambda x: x >= 0,
    "==": lambda x: x == 0,
    "!=": lambda x: x != 0,
}


def _number(value: Fraction) -> list[Any]:
    return ["number", int(value) if value.denominator == 1 else float(value)]


def _lower_comparison(left: ast.Expr, op: str, right: ast.Expr) -> list[Any]:
    """`left op right` with its arithmetic done exactly (see above)."""
    a, b = _linear(left), _linear(right)
    if a is None or b is None:
        return ["compare", [op], [lower_expr(left), lower_expr(right)]]
    terms = dict(a[0])
    for key, coef in b[0].items():
        terms[key] = terms.get(key, Fraction(0)) - coef
    terms = {key: coef for key, coef in terms.items() if coef != 0}
    constant = a[2] - b[2]  # left - right = sum(terms) + constant
    if not terms:
        return ["bool", _HOLDS[op](constant)]
    if len(terms) == 1:
        (key, coef), trees = next(iter(terms.items())), {**a[1], **b[1]}
        bound = -constant / coef
        return ["compare", [op if coef > 0 else _FLIPPED[op]], [trees[key], _number(bound)]]
    # Several metrics: fold the constants exactly, keep the metric arithmetic as written.
    return ["compare", [op], [_folded(left), _folded(right)]]


def _folded(node: ast.Expr) -> list[Any]:
    linear = _linear(node)
    if linear is not None and not linear[0]:
        return _number(linear[2])
    return lower_expr(node)


def _condition(expr: ast.Expr) -> dict[str, Any]:
    return {"when": lower_expr(expr), "text": to_text(expr)}


def lower(theory: ResolvedTheory) -> dict[str, Any]:
    """The compiled policy of a resolved theory, as deterministic JSON-able data."""
    info = theory.model.theory
    metrics: dict[str, Any] = {}
    for name, metric in theory.metrics.items():
        metrics[name] = {
            "type": metric.type,
            "source": metric.source,
            "low": metric.low,
            "high": metric.high,
            "values": list(metric.values),
            "default": metric.default,
            "compute": None if metric.compute is None else lower_expr(metric.compute),
            "order": len(metrics),
            "description": theory.model.metrics[name].description,
            "writer": None if metric.writer is None else metric.writer.to_json(),
        }
    actions = {
        name: {
            "order": order,
            "rung": action.rung,
            "priority": action.priority,
            "tags": sorted(action.tags),
            # The tags only a wording gives, each with its placeholder (theory-format.md,
            # "Derived tags"): `tags` stays the union the runtime and invariants read, and a
            # designer reading the policy sees which ones `tags:` never said.
            **({"derived_tags": dict(action.derived)} if action.derived else {}),
            "description": action.description,
            "guidance": action.guidance,
            "template": action.template,
            **({"variants": list(action.variants)} if action.variants else {}),
            "conflicts": list(action.conflicts),
        }
        for order, (name, action) in enumerate(theory.actions.items())
    }
    rules = [
        {
            "id": rule.id,
            "action": rule.action,
            "weight": rule.weight,
            "priority": rule.priority,
            "line": rule.span.line if rule.span is not None else None,
            **_condition(rule.when.expr),
        }
        for rule in theory.rules
    ]
    steps = [
        {
            "index": step.index,
            "effect": step.effect,
            "rung": step.rung,
            "runtime": step.runtime,
            "label": step.label,
            **_condition(step.when.expr),
        }
        for step in theory.ceiling_steps
    ]
    data: dict[str, Any] = {
        "format": FORMAT,
        "theory": {
            "id": theory.id,
            "name": theory.name,
            "description": info.description,
            "principles": [[p.id, p.text] for p in info.principles],
            "sources": [s.id for s in info.sources],
        },
        "selection": theory.selection,
        "metrics": metrics,
        "actions": actions,
        "rules": rules,
        "ceiling": {"start": theory.ceiling_start, "steps": steps},
        "invariants": [
            {"id": inv.id, "kind": inv.kind, **_condition(inv.condition.expr)}
            for inv in theory.invariants
        ],
        "monitors": [
            {"name": name, **_condition(located.expr)} for name, located in theory.monitors.items()
        ],
        "escalate": dict(theory.escalate),
        "alternatives": {name: list(targets) for name, targets in theory.alternatives.items()},
        "switches": [
            {"index": s.index, "to": s.to, **_condition(s.when.expr)} for s in theory.switches
        ],
    }
    # Round-trip through JSON so the data holds exactly what a loaded file would (tuples -> lists).
    data = json.loads(canonical_json(data))
    data["content_hash"] = content_hash(data)
    return data


def dumps(data: dict[str, Any]) -> str:
    """The bytes `pedrag compile` writes: sorted keys, two-space indent, trailing newline."""
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
