"""The compiler's logic: hash-consed boolean formulas over metric atoms.

Compiler stage helper. `pedrag.compiler.encode` turns resolved conditions into these
formulas; the z3 encoding, the exact coverage measure, the gap regions and `pedrag diff` all
read them. Nodes are interned, so equal formulas are the same object: memo tables keyed by
a node cost O(1), and substituting a value for one variable re-uses every untouched subtree.

Atoms (normalised so every comparison is `<`, `<=` or `==`, negations via `Not`):

- `cmp`: one numeric variable against a constant, `x < c`, `x <= c`, `x == c`;
- `lin`: a linear sum of two or more numeric variables against a constant;
- `in`: an enum or bool variable is one of a set of values.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

Value = Fraction | str | bool


class Node:
    """One interned formula node. Compare nodes with `is` (or `==`, which is identity)."""

    __slots__ = (
        "kind",
        "var",
        "op",
        "const",
        "values",
        "terms",
        "children",
        "vars",
        "linear",
        "__weakref__",
    )

    kind: str  # "true" | "false" | "cmp" | "lin" | "in" | "not" | "and" | "or"
    var: str | None
    op: str | None
    const: Fraction | None
    values: frozenset[Any] | None
    terms: tuple[tuple[str, Fraction], ...] | None
    children: tuple[Node, ...]
    vars: frozenset[str]
    linear: frozenset[str]  # the variables of its multi-variable linear atoms

    def __repr__(self) -> str:
        return f"Node({show(self)})"


_TABLE: dict[tuple[Any, ...], Node] = {}


def _intern(
    kind: str,
    var: str | None = None,
    op: str | None = None,
    const: Fraction | None = None,
    values: frozenset[Any] | None = None,
    terms: tuple[tuple[str, Fraction], ...] | None = None,
    children: tuple[Node, ...] = (),
) -> Node:
    # Children hash by identity; a constant by its integers (a Fraction's own hash is a
    # modular inverse in Python code, and every atom is interned through here).
    number = None if const is None else (const.numerator, const.denominator)
    key = (kind, var, op, number, values, terms, children)
    node = _TABLE.get(key)
    if node is not None:
        return node
    node = Node()
    node.kind, node.var, node.op, node.const, node.values, node.terms, node.children = (
        kind,
        var,
        op,
        const,
        values,
        terms,
        children,
    )
    found: set[str] = set()
    if var is not None:
        found.add(var)
    if terms:
        found.update(v for v, _ in terms)
    for child in children:
        found.update(child.vars)
    node.vars = frozenset(found)
    if kind == "lin":
        node.linear = node.vars
    elif children:
        node.linear = frozenset().union(*(child.linear for child in children))
    else:
        node.linear = frozenset()
    _TABLE[key] = node
    return node


TRUE = _intern("true")
FALSE = _intern("false")


def const(value: bool) -> Node:
    return TRUE if value else FALSE


def cmp(var: str, op: str, value: Fraction) -> Node:
    """`var op value` for any of < <= > >= == !=; normalised to < <= == and Not."""
    if type(value) is not Fraction:
        value = Fraction(value)
    if op == ">":
        return not_(_intern("cmp", var, "<=", value))
    if op == ">=":
        return not_(_intern("cmp", var, "<", value))
    if op == "!=":
        return not_(_intern("cmp", var, "==", value))
    assert op in ("<", "<=", "==")
    return _intern("cmp", var, op, value)


def lin(terms: dict[str, Fraction], op: str, value: Fraction) -> Node:
    """`sum(coef * var) op value`, any comparison; one-variable sums become `cmp` atoms."""
    terms = {v: c for v, c in terms.items() if c != 0}
    if not terms:
        return const(_compare(Fraction(0), op, Fraction(value)))
    if len(terms) == 1:
        ((var, coef),) = terms.items()
        bound = Fraction(value) / coef
        if coef < 0:
            op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
        return cmp(var, op, bound)
    # Normalise so the first coefficient is 1 (scaling keeps the relation, flipping for < 0).
    ordered = sorted(terms.items())
    first = ordered[0][1]
    if first < 0:
        op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
    ordered_t = tuple((v, c / first) for v, c in ordered)
    bound = Fraction(value) / first
    if op == ">":
        return not_(_intern("lin", op="<=", const=bound, terms=ordered_t))
    if op == ">=":
        return not_(_intern("lin", op="<", const=bound, terms=ordered_t))
    if op == "!=":
        return not_(_intern("lin", op="==", const=bound, terms=ordered_t))
    return _intern("lin", op=op, const=bound, terms=ordered_t)


def member(var: str, values: Iterable[Any], domain: Iterable[Any]) -> Node:
    """`var in values` for an enum/bool variable whose domain is `domain`."""
    chosen = frozenset(values) & frozenset(domain)
    if not chosen:
        return FALSE
    if chosen == frozenset(domain):
        return TRUE
    return _intern("in", var, values=chosen)


def _compound(kind: str, children: tuple[Node, ...]) -> Node:
    """The interned `not`, `and` or `or` node over `children`: `_intern`'s node, made on a
    path of its own (keyed by kind and children alone, as no other node kind has children).
    Encoding a 5,000-rule theory makes 9,000 such nodes in a fresh process, a third of a
    one-rule edit's encoding; the general path built each key and its variables field by
    field."""
    key = (kind, children)
    node = _TABLE.get(key)
    if node is not None:
        return node
    node = Node()
    node.kind, node.var, node.op, node.const, node.values, node.terms = (kind,) + _NO_FIELDS
    node.children = children
    if len(children) == 1:
        node.vars, node.linear = children[0].vars, children[0].linear
    else:
        node.vars = _NO_VARS.union(*[child.vars for child in children])
        node.linear = _NO_VARS.union(*[child.linear for child in children])
    _TABLE[key] = node
    return node


_NO_FIELDS = (None, None, None, None, None)
_NO_VARS: frozenset[str] = frozenset()


def not_(node: Node) -> Node:
    if node is TRUE:
        return FALSE
    if node is FALSE:
        return TRUE
    if node.kind == "not":
        return node.children[0]
    return _compound("not", (node,))


def _junction(kind: str, unit: Node, absorbing: Node, items: Iterable[Node]) -> Node:
    """`and` (unit TRUE, absorbing FALSE) or `or` (the other way round): flattened, without
    duplicates or units, collapsed when one child or none is left."""
    flat: list[Node] = []
    seen: set[Node] = set()
    add, append = seen.add, flat.append
    for item in items:
        if item.kind == kind:
            for part in item.children:  # a junction's children: never a unit nor absorbing
                if part not in seen:
                    add(part)
                    append(part)
            continue
        if item is absorbing:
            return absorbing
        if item is unit or item in seen:
            continue
        add(item)
        append(item)
    if not flat:
        return unit
    if len(flat) == 1:
        return flat[0]
    return _compound(kind, tuple(flat))


def and_(items: Iterable[Node]) -> Node:
    return _junction("and", TRUE, FALSE, items)


def or_(items: Iterable[Node]) -> Node:
    return _junction("or", FALSE, TRUE, items)


def implies(left: Node, right: Node) -> Node:
    return or_([not_(left), right])


_COMPARE = {
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
    ">": operator.gt,
    ">=": operator.ge,
    "!=": operator.ne,
}


def _compare(left: Fraction, op: str, right: Fraction) -> bool:
    return bool(_COMPARE[op](left, right))  # one comparison, not all six


def _rational(value: Value) -> Fraction:
    return value if isinstance(value, Fraction) else Fraction(value)  # type: ignore[arg-type]


def substitute(node: Node, var: str, value: Value, memo: dict[Node, Node] | None = None) -> Node:
    """The formula with `var` fixed to `value`, simplified."""
    if var not in node.vars:
        return node
    if memo is None:
        memo = {}
    hit = memo.get(node)
    if hit is not None:
        return hit
    kind = node.kind
    if kind == "cmp":
        assert node.op is not None and node.const is not None
        out = const(_compare(_rational(value), node.op, node.const))  # type: ignore[arg-type]
    elif kind == "in":
        assert node.values is not None
        out = const(value in node.values)
    elif kind == "lin":
        assert node.terms is not None and node.const is not None and node.op is not None
        rest = {v: c for v, c in node.terms if v != var}
        fixed = sum((c for v, c in node.terms if v == var), Fraction(0)) * _rational(value)  # type: ignore[arg-type]
        out = lin(rest, node.op, node.const - fixed)
    elif kind == "not":
        out = not_(substitute(node.children[0], var, value, memo))
    elif kind == "and":
        out = and_(substitute(c, var, value, memo) for c in node.children)
    else:
        out = or_(substitute(c, var, value, memo) for c in node.children)
    memo[node] = out
    return out


def evaluate(node: Node, state: dict[str, Value]) -> bool:
    """Truth of a formula in a complete state."""
    kind = node.kind
    if kind == "true":
        return True
    if kind == "false":
        return False
    if kind == "cmp":
        return _compare(Fraction(state[node.var]), node.op, node.const)  # type: ignore[arg-type, index]
    if kind == "in":
        return state[node.var] in node.values  # type: ignore[index, operator]
    if kind == "lin":
        total = sum((c * Fraction(state[v]) for v, c in node.terms), Fraction(0))  # type: ignore[arg-type, union-attr]
        return _compare(total, node.op, node.const)  # type: ignore[arg-type]
    if kind == "not":
        return not evaluate(node.children[0], state)
    if kind == "and":
        return all(evaluate(c, state) for c in node.children)
    return any(evaluate(c, state) for c in node.children)


def atoms(node: Node) -> list[Node]:
    """Every atom of a formula, each once, in first-occurrence order."""
    out: dict[Node, None] = {}
    stack = [node]
    seen: set[Node] = set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if current.kind in ("cmp", "lin", "in"):
            out.setdefault(current)
        else:
            stack.extend(reversed(current.children))
    return list(out)


def breakpoints(node: Node) -> dict[str, set[Fraction]]:
    """Per numeric variable, the constants its one-variable atoms compare it with."""
    return breakpoints_of(atoms(node))


def breakpoints_of(found_atoms: Iterable[Node]) -> dict[str, set[Fraction]]:
    """`breakpoints` of a formula whose atoms (`atoms`) are `found_atoms`."""
    found: dict[str, set[Fraction]] = {}
    for atom in found_atoms:
        if atom.kind == "cmp":
            found.setdefault(atom.var, set()).add(atom.const)  # type: ignore[arg-type]
    return found


def linear_vars(node: Node) -> set[str]:
    """Variables that occur in some multi-variable linear atom."""
    return set(node.linear)


def cuts_of(node: Node, var: str) -> set[Fraction]:
    """`breakpoints(node).get(var, set())`, walking only the subtrees that read `var`."""
    found: set[Fraction] = set()
    stack = [node]
    seen: set[Node] = set()
    while stack:
        current = stack.pop()
        if current in seen or var not in current.vars:
            continue
        seen.add(current)
        if current.kind == "cmp":
            found.add(current.const)  # type: ignore[arg-type]
        else:
            stack.extend(current.children)
    return found


def show(node: Node) -> str:
    """Debug text (not the condition language)."""
    kind = node.kind
    if kind in ("true", "false"):
        return kind
    if kind == "cmp":
        return f"{node.var} {node.op} {node.const}"
    if kind == "in":
        return f"{node.var} in {sorted(map(str, node.values or ()))}"
    if kind == "lin":
        lhs = " + ".join(f"{c}*{v}" for v, c in node.terms or ())
        return f"{lhs} {node.op} {node.const}"
    if kind == "not":
        return f"not ({show(node.children[0])})"
    joiner = f" {kind} "
    return "(" + joiner.join(show(c) for c in node.children) + ")"
