"""Exact share of the state space where a formula holds (DESIGN: coverage).

Compiler stage helper. Takes formulas and the variables' domains; gives, for any formula,
the probability that a state drawn uniformly (each variable independently: uniform over a
float range, over an int range's integers, over enum values, bools 50/50) satisfies it.

How: every one-variable atom compares its variable with a constant, so the constants cut
each domain into **cells** (open intervals and their end points for reals; runs of integers
for ints; single values for enums and bools) on which every atom has one truth value. We
split on one variable at a time (most-read first), substitute a representative of each cell,
simplify, and add the cells' weights times the measure of what remains (a Shannon expansion
over cells, memoised on the interned residual formula, so rule sets behave like a decision
diagram). End points of real intervals have measure zero and are skipped.

This is exact for finite domains and for reals read only by one-variable atoms (the shipped
theories). A real variable inside a multi-variable linear atom (`a - b > 0.2`) is split into
64 equal slices evaluated at their midpoints instead, and `exact` turns false; finite
variables in such atoms are enumerated value by value, which stays exact.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from pedrag.compiler import formula as F
from pedrag.compiler.encode import Domain
from pedrag.compiler.formula import Node

GRID = 64


@dataclass(frozen=True)
class Cell:
    """A piece of one variable's domain on which every atom is constant."""

    low: Fraction | None = None
    high: Fraction | None = None
    low_closed: bool = True
    high_closed: bool = True
    value: Any = None  # a representative
    weight: float = 0.0

    @property
    def point(self) -> bool:
        return self.low is not None and self.low == self.high


def cells(domain: Domain, cuts: set[Fraction] | None, enumerate_all: bool = False) -> list[Cell]:
    """The elementary cells of a domain cut at `cuts`, in order; reals include end points."""
    if domain.kind in ("bool", "enum"):
        n = len(domain.values)
        return [Cell(value=v, weight=1.0 / n) for v in domain.values]
    low, high = domain.low, domain.high
    inside = sorted(c for c in (cuts or ()) if low < c < high)
    if domain.kind == "int":
        total = int(high - low) + 1
        if enumerate_all:
            return [
                Cell(Fraction(k), Fraction(k), value=Fraction(k), weight=1.0 / total)
                for k in range(int(low), int(high) + 1)
            ]
        critical = {int(low), int(high)}
        for c in inside:
            critical.add(int(c.__floor__()))
            critical.add(int(c.__ceil__()))
        whole = sorted(k for k in critical if low <= k <= high)
        out: list[Cell] = []
        for index, k in enumerate(whole):
            out.append(Cell(Fraction(k), Fraction(k), value=Fraction(k), weight=1.0 / total))
            if index + 1 < len(whole) and whole[index + 1] - k > 1:
                a, b = k + 1, whole[index + 1] - 1
                out.append(
                    Cell(Fraction(a), Fraction(b), value=Fraction(a), weight=(b - a + 1) / total)
                )
        return out
    if low == high:
        return [Cell(low, high, value=low, weight=1.0)]
    width = high - low
    points = [low, *inside, high]
    out = []
    for index, p in enumerate(points):
        out.append(Cell(p, p, value=p, weight=0.0))
        if index + 1 < len(points):
            q = points[index + 1]
            out.append(Cell(p, q, False, False, value=(p + q) / 2, weight=float((q - p) / width)))
    return out


class Measure:
    """Shares of the state space, for formulas over the same variables."""

    def __init__(self, domains: dict[str, Domain], formulas: list[Node]) -> None:
        self.domains = domains
        self.cuts: dict[str, set[Fraction]] = {}
        self.linear: set[str] = set()
        reads: Counter[str] = Counter()
        for node in formulas:
            for var, found in F.breakpoints(node).items():
                self.cuts.setdefault(var, set()).update(found)
            self.linear |= F.linear_vars(node)
            for atom in F.atoms(node):
                reads.update(atom.vars)
        self.rank = {var: (-count, var) for var, count in reads.items()}
        self.exact = True
        self._memo: dict[Node, float] = {}
        self._cells: dict[str, list[Cell]] = {}

    def split_cells(self, var: str) -> list[Cell]:
        """Cells with positive weight to split `var` into (a grid for reals in linear atoms)."""
        hit = self._cells.get(var)
        if hit is not None:
            return hit
        domain = self.domains[var]
        if var in self.linear and domain.kind == "real" and domain.low < domain.high:
            step = (domain.high - domain.low) / GRID
            found = [
                Cell(
                    domain.low + i * step,
                    domain.low + (i + 1) * step,
                    False,
                    False,
                    value=domain.low + (i + Fraction(1, 2)) * step,
                    weight=1.0 / GRID,
                )
                for i in range(GRID)
            ]
        else:
            found = [
                c
                for c in cells(domain, self.cuts.get(var), enumerate_all=var in self.linear)
                if c.weight > 0
            ]
        self._cells[var] = found
        return found

    def share(self, node: Node) -> float:
        if node is F.TRUE:
            return 1.0
        if node is F.FALSE:
            return 0.0
        hit = self._memo.get(node)
        if hit is not None:
            return hit
        var = min(node.vars, key=lambda v: self.rank.get(v, (0, v)))
        if var in self.linear and self.domains[var].kind == "real":
            self.exact = False
        total = 0.0
        memo: dict[Node, Node] = {}
        for cell in self.split_cells(var):
            memo.clear()
            total += cell.weight * self.share(F.substitute(node, var, cell.value, memo))
        self._memo[node] = total
        return total
