"""Boxes of state space for `pedrag diff`: cells to split on, merging, shares, text, witnesses.

Compiler stage helper. Takes the variables' domains and the formulas still undecided at a
point of the diff's search; gives the cells one variable splits into (pieces on which every
atom of those formulas has one truth value, end points of real intervals included, so a
region is exact and not just exact up to measure zero), and for the boxes the search finds:
maximal merges, the share of the state space, the designer's text
(`0.75 <= frustration < 0.8 and affect == frustrated`), a witness state and the truth of a
formula over a whole box.

A box maps a variable to a `frozenset` of values (bools, enums) or an `Interval` (numbers);
a variable it does not mention ranges over its whole domain.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from math import ceil, floor, prod
from typing import Any

from pedrag.compiler import formula as F
from pedrag.compiler.encode import Domain
from pedrag.compiler.formula import Node
from pedrag.compiler.regions import enum_condition
from pedrag.kernel.exact import decimal_fraction

# A linear atom (`3 * mastery - attempts < 1`) is cut exactly: its small ints are split value
# by value, and for each of their values the atom is a one-variable comparison of its one
# other variable, whose constant becomes a cut of that variable. An atom with two such
# variables (`a - b > 0.2` over reals or wide ints) cannot be cut into boxes: its variables
# are sliced into `GRID` pieces, judged at their middles, and the answer is marked
# approximate (the shipped theories have no such atom).
GRID = 64
ENUMERATE = 256  # ints of a linear atom with at most this many values are split value by value
COMBINATIONS = 4096  # value combinations of an atom's small ints solved for its other variable


@dataclass(frozen=True)
class Interval:
    """Numbers from `low` to `high`; integers only, for an int variable."""

    low: Fraction
    high: Fraction
    low_closed: bool = True
    high_closed: bool = True

    @property
    def point(self) -> bool:
        return self.low == self.high


Part = frozenset[Any] | Interval
Box = dict[str, Part]


@dataclass(frozen=True)
class Cell:
    """One piece a variable is split into, with the value substituted for it."""

    part: Part
    value: Any


def contains(part: Part, value: Any) -> bool:
    """Whether a value lies in a part."""
    if isinstance(part, frozenset):
        return value in part
    return (part.low < value or (value == part.low and part.low_closed)) and (
        value < part.high or (value == part.high and part.high_closed)
    )


def whole(domain: Domain) -> Part:
    if domain.kind in ("bool", "enum"):
        return frozenset(domain.values)
    return Interval(domain.low, domain.high)


# -- cells -------------------------------------------------------------------------------------
def split_cells(
    domain: Domain, cuts: set[Fraction], enumerate_all: bool
) -> tuple[list[Cell], bool]:
    """The cells of a domain cut at `cuts`, in order, and whether they are exact."""
    if domain.kind in ("bool", "enum"):
        return [Cell(frozenset([v]), v) for v in domain.values], True
    low, high = domain.low, domain.high
    if domain.kind == "int":
        if enumerate_all and domain.size() > ENUMERATE:  # a wide int: runs, approximate
            step = Fraction(domain.size(), GRID)
            edges = sorted({int(low + floor(i * step)) for i in range(GRID)} | {int(high) + 1})
            runs = [Interval(Fraction(a), Fraction(b - 1)) for a, b in itertools.pairwise(edges)]
            return [Cell(run, Fraction(floor((run.low + run.high) / 2))) for run in runs], False
        if enumerate_all:
            values = range(int(low), int(high) + 1)
            return [Cell(Interval(Fraction(k), Fraction(k)), Fraction(k)) for k in values], True
        critical = {int(low), int(high)}
        for c in cuts:
            critical.update((floor(c), ceil(c)))
        points = sorted(k for k in critical if low <= k <= high)
        out: list[Cell] = []
        for index, k in enumerate(points):
            out.append(Cell(Interval(Fraction(k), Fraction(k)), Fraction(k)))
            following = points[index + 1] if index + 1 < len(points) else None
            if following is not None and following - k > 1:
                run = Interval(Fraction(k + 1), Fraction(following - 1))
                out.append(Cell(run, run.low))
        return out, True
    if low == high:
        return [Cell(Interval(low, high), low)], True
    if enumerate_all:  # a real read by a linear atom: equal slices, approximate
        step = (high - low) / GRID
        slices = []
        for i in range(GRID):
            a, b = low + i * step, low + (i + 1) * step
            slices.append(Cell(Interval(a, b, i == 0, True), (a + b) / 2))
        return slices, False
    inside = sorted(c for c in cuts if low <= c <= high)
    bounds = [low, *[c for c in inside if low < c < high], high]
    cells: list[Cell] = []
    for index, p in enumerate(bounds):
        # An end of the domain is a cell of its own only when an atom cuts there.
        if p in inside:
            cells.append(Cell(Interval(p, p), p))
        if index + 1 < len(bounds):
            q = bounds[index + 1]
            part = Interval(p, q, p not in inside, q not in inside)
            cells.append(Cell(part, (p + q) / 2))
    return cells, True


def linear_cuts(
    nodes: Iterable[Node], domains: dict[str, Domain]
) -> tuple[dict[str, set[Fraction]], set[str]]:
    """For the multi-variable linear atoms of `nodes`: the cuts of each variable that is the
    only one in its atom that is not a small int (solved at every value of the small ints, so
    every atom is constant on each cell), and the variables that cannot be cut exactly."""
    solved: dict[str, set[Fraction]] = defaultdict(set)
    approximate: set[str] = set()
    seen: set[Node] = set()
    for node in nodes:
        for atom in F.atoms(node):
            if atom.kind != "lin" or atom in seen:
                continue
            seen.add(atom)
            assert atom.terms is not None and atom.const is not None
            small = [
                (var, coef)
                for var, coef in atom.terms
                if domains[var].kind == "int" and domains[var].size() <= ENUMERATE
            ]
            wide = [(var, coef) for var, coef in atom.terms if (var, coef) not in small]
            combinations = prod(domains[var].size() for var, _ in small)
            if len(wide) == 1 and combinations <= COMBINATIONS:
                var, coef = wide[0]
                ranges = [range(int(domains[v].low), int(domains[v].high) + 1) for v, _ in small]
                for values in itertools.product(*ranges):
                    fixed = sum(
                        (c * k for (_, c), k in zip(small, values, strict=True)), Fraction(0)
                    )
                    solved[var].add((atom.const - fixed) / coef)
            else:
                approximate.update(var for var, _ in wide)
    return dict(solved), approximate


# -- truth over a box -----------------------------------------------------------------------
def restrict(node: Node, box: Box, domains: dict[str, Domain]) -> bool | None:
    """The truth of `node` everywhere in `box`: True, False, or None when it varies there."""
    kind = node.kind
    if kind == "true":
        return True
    if kind == "false":
        return False
    if kind == "not":
        inner = restrict(node.children[0], box, domains)
        return None if inner is None else not inner
    if kind in ("and", "or"):
        results = [restrict(c, box, domains) for c in node.children]
        decisive = kind == "or"
        if decisive in results:
            return decisive
        return None if None in results else not decisive
    assert node.var is not None or node.terms is not None
    if kind == "in":
        part = box.get(node.var) or whole(domains[node.var])  # type: ignore[index, arg-type]
        assert isinstance(part, frozenset) and node.values is not None
        if part <= node.values:
            return True
        return False if not part & node.values else None
    if kind == "lin":
        return None
    part = box.get(node.var) or whole(domains[node.var])  # type: ignore[index, arg-type]
    assert isinstance(part, Interval) and node.const is not None
    c, lo, hi = node.const, part.low, part.high
    if node.op == "<":
        if hi < c or (hi == c and not part.high_closed):
            return True
        return False if lo >= c else None
    if node.op == "<=":
        if hi <= c:
            return True
        return False if lo > c or (lo == c and not part.low_closed) else None
    if part.point:
        return lo == c
    inside = lo < c < hi or (c == lo and part.low_closed) or (c == hi and part.high_closed)
    return None if inside else False


# -- merging -----------------------------------------------------------------------------------
def _join(a: Part, b: Part, domain: Domain) -> Part | None:
    """The union of two parts of one variable when it is one part, else None."""
    if isinstance(a, frozenset):
        assert isinstance(b, frozenset)
        return a | b
    assert isinstance(b, Interval)
    if b.low < a.low or (b.low == a.low and b.low_closed and not a.low_closed):
        a, b = b, a
    if domain.kind == "int":
        touching = b.low <= a.high + 1
    else:
        touching = b.low < a.high or (b.low == a.high and (a.high_closed or b.low_closed))
    if not touching:
        return None
    if b.high > a.high or (b.high == a.high and b.high_closed):
        return Interval(a.low, b.high, a.low_closed, b.high_closed)
    return a


def _normal(box: Box, domains: dict[str, Domain]) -> Box:
    return {var: part for var, part in box.items() if part != whole(domains[var])}


def merge(boxes: list[Box], domains: dict[str, Domain]) -> list[Box]:
    """Disjoint boxes -> fewer, larger disjoint boxes covering the same states: two boxes
    that agree on every variable but one, and whose parts of that one join, become one."""
    current = [_normal(b, domains) for b in boxes]
    order = list(domains)
    changed = True
    while changed:
        changed = False
        for var in order:
            groups: dict[tuple[Any, ...], list[Part]] = defaultdict(list)
            for box in current:
                rest = tuple(sorted(((v, p) for v, p in box.items() if v != var), key=str))
                groups[rest].append(box.get(var) or whole(domains[var]))
            if all(len(parts) == 1 for parts in groups.values()):
                continue
            merged: list[Box] = []
            for rest, parts in groups.items():
                joined = _join_all(parts, domains[var])
                changed |= len(joined) < len(parts)
                for part in joined:
                    merged.append(_normal({**dict(rest), var: part}, domains))
            current = merged
    return current


def _join_all(parts: list[Part], domain: Domain) -> list[Part]:
    if isinstance(parts[0], frozenset):
        union: frozenset[Any] = frozenset()
        for part in parts:
            assert isinstance(part, frozenset)
            union |= part
        return [union]
    ordered = sorted(parts, key=lambda p: (p.low, not p.low_closed))  # type: ignore[union-attr]
    out: list[Part] = [ordered[0]]
    for part in ordered[1:]:
        joined = _join(out[-1], part, domain)
        if joined is None:
            out.append(part)
        else:
            out[-1] = joined
    return out


# -- share, text, witness ----------------------------------------------------------------------
def share(box: Box, domains: dict[str, Domain]) -> Fraction:
    """The exact share of the state space in the box (each variable uniform, independent)."""
    total = Fraction(1)
    for var, part in box.items():
        domain = domains[var]
        if isinstance(part, frozenset):
            total *= Fraction(len(part), len(domain.values))
        elif domain.kind == "int":
            total *= Fraction(int(part.high - part.low) + 1, domain.size())
        elif domain.high > domain.low:
            total *= (part.high - part.low) / (domain.high - domain.low)
    return total


def number(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):.10g}"


def describe(box: Box, domains: dict[str, Domain]) -> str:
    """The box as a condition in the theory language, variables in declaration order."""
    texts: list[str] = []
    for var, domain in domains.items():
        part = box.get(var)
        if part is None:
            continue
        if isinstance(part, frozenset):
            if domain.kind == "bool":
                texts.append(var if True in part else f"not {var}")
                continue
            texts.append(enum_condition(var, domain.values, part))
            continue
        if part.point:
            texts.append(f"{var} == {number(part.low)}")
            continue
        left = ""
        if part.low > domain.low or not part.low_closed:
            left = f"{number(part.low)} {'<=' if part.low_closed else '<'} "
        right = ""
        if part.high < domain.high or not part.high_closed:
            right = f" {'<=' if part.high_closed else '<'} {number(part.high)}"
        texts.append(f"{left}{var}{right}")
    return " and ".join(texts) or "everywhere"


def _nice(part: Interval, kind: str, preferred: Fraction | None) -> Fraction:
    def inside(x: Fraction) -> bool:
        return (part.low < x or (x == part.low and part.low_closed)) and (
            x < part.high or (x == part.high and part.high_closed)
        )

    if preferred is not None and inside(preferred):
        return preferred
    if part.point:
        return part.low
    if kind == "int":
        return part.low if part.low_closed else part.low + 1
    middle = (part.low + part.high) / 2
    for digits in range(0, 7):
        scale = 10**digits
        options = [
            Fraction(k, scale)
            for k in range(floor(part.low * scale), ceil(part.high * scale) + 1)
            if inside(Fraction(k, scale))
        ]
        if options:
            return min(options, key=lambda x: (abs(x - middle), x))
    return middle


def witness(box: Box, domains: dict[str, Domain], defaults: dict[str, Any]) -> dict[str, Any]:
    """A state in the box: each variable at its default when the box allows it."""
    state: dict[str, Any] = {}
    for var, domain in domains.items():
        part = box.get(var) or whole(domain)
        preferred = defaults.get(var)
        if isinstance(part, frozenset):
            if preferred in part:
                state[var] = preferred
            else:
                state[var] = next(v for v in domain.values if v in part)
            continue
        if preferred is None and domain.kind != "int":
            preferred = Fraction(0)
        elif preferred is not None:
            preferred = decimal_fraction(preferred)
        state[var] = _nice(part, domain.kind, preferred)
    return state


def present(value: Any, kind: str) -> Any:
    """A witness value as a designer reads it (and JSON holds it)."""
    if kind == "int":
        return int(value)
    if kind == "real":
        number_ = float(value)
        return int(number_) if number_.is_integer() else round(number_, 10)
    return value


def reads(nodes: Iterable[Node]) -> dict[str, set[Fraction]]:
    """Per variable, the constants the one-variable atoms of `nodes` compare it with."""
    found: dict[str, set[Fraction]] = defaultdict(set)
    for node in nodes:
        for var, cuts in _breakpoints(node).items():
            found[var] |= cuts
    return found


_BREAKPOINTS: dict[int, tuple[Node, dict[str, set[Fraction]]]] = {}


def _breakpoints(node: Node) -> dict[str, set[Fraction]]:
    hit = _BREAKPOINTS.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    found = F.breakpoints(node)
    _BREAKPOINTS[id(node)] = (node, found)
    return found
