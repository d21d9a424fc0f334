"""AST -> canonical condition text (the inverse of the parser).

Parentheses are printed only where precedence needs them, so `print(parse(text))` is the
canonical form of `text`, and `parse(print(tree)) == tree` (a property test pins this).
"""

from __future__ import annotations

from pedrag.dsl import ast
from pedrag.kernel.rungs import rung_name

# Loosest to tightest; an operand printed below its required level gets parentheses.
_IMPLIES, _OR, _AND, _NOT, _CMP, _ADD, _MUL, _NEG, _ATOM = range(1, 10)


def _precedence(node: ast.Expr) -> int:
    match node:
        case ast.Implies():
            return _IMPLIES
        case ast.Or():
            return _OR
        case ast.And():
            return _AND
        case ast.Not():
            return _NOT
        case ast.Compare() | ast.In():
            return _CMP
        case ast.Arith():
            return _ADD
        case ast.Mul():
            return _MUL
        case ast.Neg():
            return _NEG
        case ast.Number(value=v) if v < 0:
            return _NEG
    return _ATOM


def _number(value: int | float) -> str:
    if isinstance(value, bool):  # pragma: no cover - defensive
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    text = repr(float(value))
    return text


def to_text(node: ast.Expr, minimum: int = _IMPLIES) -> str:
    text = _render(node)
    return f"({text})" if _precedence(node) < minimum else text


def _render(node: ast.Expr) -> str:
    match node:
        case ast.Number(value=v):
            return _number(v)
        case ast.Bool(value=v):
            return "true" if v else "false"
        case ast.String(value=v):
            return f"'{v}'" if "'" not in v else f'"{v}"'
        case ast.Rung(level=level):
            return rung_name(level)
        case ast.Name(id=name) | ast.MetricRef(name=name) | ast.ActionConst(name=name):
            return name
        case ast.InvariantVar(name=name):
            return name
        case ast.EnumConst(value=value):
            return value
        case ast.Call(func=func, args=args):
            return f"{func}({', '.join(to_text(a) for a in args)})"
        case ast.Neg(operand=operand):
            return f"-{to_text(operand, _NEG)}"
        case ast.Arith(left=left, op=op, right=right):
            return f"{to_text(left, _ADD)} {op} {to_text(right, _MUL)}"
        case ast.Mul(left=left, right=right):
            return f"{to_text(left, _MUL)} * {to_text(right, _NEG)}"
        case ast.Compare(operands=operands, ops=ops):
            parts = [to_text(operands[0], _ADD)]
            for op, operand in zip(ops, operands[1:], strict=True):
                parts.append(f"{op} {to_text(operand, _ADD)}")
            return " ".join(parts)
        case ast.ListExpr(items=items):
            return "[" + ", ".join(to_text(i, _ADD) for i in items) + "]"
        case ast.In(element=element, container=container, negated=negated):
            keyword = "not in" if negated else "in"
            return f"{to_text(element, _ADD)} {keyword} {to_text(container, _ADD)}"
        case ast.Not(operand=operand):
            return f"not {to_text(operand, _NOT)}"
        case ast.And(operands=operands):
            return " and ".join(to_text(o, _NOT) for o in operands)
        case ast.Or(operands=operands):
            return " or ".join(to_text(o, _AND) for o in operands)
        case ast.Implies(left=left, right=right):
            return f"{to_text(left, _OR)} implies {to_text(right, _IMPLIES)}"
    raise TypeError(f"not a condition node: {node!r}")  # pragma: no cover
