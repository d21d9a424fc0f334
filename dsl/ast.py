"""The condition language's typed AST.

The parser gives these nodes with `Name` leaves; name resolution replaces each `Name` with
what it denotes (`MetricRef`, `EnumConst`, `ActionConst`, `InvariantVar`). Spans are offsets
into the condition text and are excluded from equality, so a printed-and-reparsed tree
compares equal to the original.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields

from pedrag.kernel.rungs import RUNGS, rung_name

NO_SPAN: tuple[int, int] = (0, 0)


def _span() -> tuple[int, int]:
    return field(default=NO_SPAN, compare=False, repr=False)  # type: ignore[return-value]


@dataclass(frozen=True)
class Number:
    value: int | float
    span: tuple[int, int] = _span()


@dataclass(frozen=True)
class Bool:
    value: bool
    span: tuple[int, int] = _span()


@dataclass(frozen=True)
class String:
    value: str
    span: tuple[int, int] = _span()


@dataclass(frozen=True)
class Rung:
    level: int
    span: tuple[int, int] = _span()


@dataclass(frozen=True)
class Name:
    id: str
    span: tuple[int, int] = _span()


@dataclass(frozen=True)
class MetricRef:
    name: str
    span: tuple[int, int] = _span()


@dataclass(frozen=True)
class EnumConst:
    value: str
    span: tuple[int, int] = _span()


@dataclass(frozen=True)
class ActionConst:
    name: str
    span: tuple[int, int] = _span()


@dataclass(frozen=True)
class InvariantVar:
    """`action`, `rung`, `priority` or `tags`: the selected action, readable in invariants."""

    name: str
    span: tuple[int, int] = _span()


@dataclass(frozen=True)
class Call:
    """A history function over the last n turns: trend, mean, delta, count, streak."""

    func: str
    args: tuple[Expr, ...]
    span: tuple[int, int] = _span()


@dataclass(frozen=True)
class Neg:
    operand: Expr
    span: tuple[int, int] = _span()


@dataclass(frozen=True)
class Arith:
    left: Expr
    op: str  # "+" | "-"
    right: Expr
    span: tuple[int, int] = _span()


@dataclass(frozen=True)
class Mul:
    left: Expr
    right: Expr
    span: tuple[int, int] = _span()


@dataclass(frozen=True)
class Compare:
    """A chained comparison: operands[0] ops[0] operands[1] ops[1] operands[2] ..."""

    operands: tuple[Expr, ...]
    ops: tuple[str, ...]
    span: tuple[int, int] = _span()


@dataclass(frozen=True)
class ListExpr:
    items: tuple[Expr, ...]
    span: tuple[int, int] = _span()


@dataclass(frozen=True)
class In:
    element: Expr
    container: Expr  # a ListExpr, or `tags`
    negated: bool = False
    span: tuple[int, int] = _span()


@dataclass(frozen=True)
class Not:
    operand: Expr
    span: tuple[int, int] = _span()


@dataclass(frozen=True)
class And:
    operands: tuple[Expr, ...]
    span: tuple[int, int] = _span()


@dataclass(frozen=True)
class Or:
    operands: tuple[Expr, ...]
    span: tuple[int, int] = _span()


@dataclass(frozen=True)
class Implies:
    left: Expr
    right: Expr
    span: tuple[int, int] = _span()


Expr = (
    Number
    | Bool
    | String
    | Rung
    | Name
    | MetricRef
    | EnumConst
    | ActionConst
    | InvariantVar
    | Call
    | Neg
    | Arith
    | Mul
    | Compare
    | ListExpr
    | In
    | Not
    | And
    | Or
    | Implies
)

INVARIANT_VARS = ("action", "rung", "priority", "tags")
KEYWORDS = frozenset({"and", "or", "not", "implies", "in", "true", "false"})
RESERVED = KEYWORDS | frozenset(INVARIANT_VARS) | {rung_name(i) for i in range(RUNGS)}


_SINGLE = frozenset({"operand", "left", "right", "element", "container"})
_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}


def _child_fields(kind: type) -> tuple[tuple[str, bool], ...]:
    """(field, holds one child) for the fields of a node class that can hold children."""
    found = _FIELDS.get(kind)
    if found is None:
        found = _FIELDS[kind] = tuple(
            (f.name, f.name in _SINGLE)
            for f in fields(kind)  # type: ignore[arg-type]
            if f.name != "span"
        )
    return found


def children(node: Expr) -> Iterator[Expr]:
    """Direct sub-expressions, in source order."""
    for name, single in _child_fields(type(node)):
        value = getattr(node, name)
        if single:
            yield value
        elif isinstance(value, tuple):
            for item in value:
                if not isinstance(item, str):
                    yield item


def walk(node: Expr) -> Iterator[Expr]:
    """Every node of the tree, pre-order (without recursion: conditions can be deep)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(list(children(current))))


def metric_names(node: Expr) -> frozenset[str]:
    """The metrics an expression reads (its `MetricRef`s): `walk` without the generators, as
    the checks ask it of every condition of a theory."""
    found: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if type(current) is MetricRef:
            found.add(current.name)
            continue
        for name, single in _child_fields(type(current)):
            value = getattr(current, name)
            if single:
                stack.append(value)
            elif isinstance(value, tuple):
                stack.extend(item for item in value if not isinstance(item, str))
    return frozenset(found)


def conjoin(items: list[Expr]) -> Expr:
    """And of items, flattened; `true` for none."""
    flat: list[Expr] = []
    for item in items:
        flat.extend(item.operands if isinstance(item, And) else (item,))
    if not flat:
        return Bool(True)
    return flat[0] if len(flat) == 1 else And(tuple(flat))


def disjoin(items: list[Expr]) -> Expr:
    """Or of items, flattened; `false` for none."""
    flat: list[Expr] = []
    for item in items:
        flat.extend(item.operands if isinstance(item, Or) else (item,))
    if not flat:
        return Bool(False)
    return flat[0] if len(flat) == 1 else Or(tuple(flat))
