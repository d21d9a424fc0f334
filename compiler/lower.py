"""Lowering: a `ResolvedTheory` -> the compiled policy, as canonical JSON-able data.

The last compiler stage. It takes a theory the front end resolved without errors and gives
plain data (dicts, lists, strings, numbers) that `pedrag.runtime.compiled` loads without z3,
Lark or any `pedrag.dsl` module. Conditions travel as small expression trees (JSON arrays,
`["compare", ["<"], [["metric", "mastery"], ["number", 0.3]]]`), never as code: the runtime
generates and `exec`s its own matcher from them at load time, so a policy file cannot carry
code into the tutor.

The output is deterministic: keys sorted, lists in source order, no paths or timestamps, and
`content_hash` is the sha256 of the canonical JSON of everything else. `dumps` gives the exact
bytes `pedrag compile` writes. The format is described in `docs/compiled-policy.md`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pedrag.dsl import ast
from pedrag.dsl.ir import ResolvedTheory
from pedrag.dsl.printer import to_text

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
            return ["compare", list(ops), [lower_expr(o) for o in operands]]
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
        }
    actions = {
        name: {
            "order": order,
            "rung": action.rung,
            "priority": action.priority,
            "tags": sorted(action.tags),
            "description": action.description,
            "guidance": action.guidance,
            "template": action.template,
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


def canonical_json(data: Any) -> str:
    """The canonical text the content hash is taken over (kept in step with the runtime's)."""
    return json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def content_hash(data: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of `data` without its `content_hash` key."""
    body = {key: value for key, value in data.items() if key != "content_hash"}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def dumps(data: dict[str, Any]) -> str:
    """The bytes `pedrag compile` writes: sorted keys, two-space indent, trailing newline."""
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
