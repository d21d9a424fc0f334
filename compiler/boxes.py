"""Boxes: products of per-variable ranges, for cheap reasoning before asking z3.

Compiler stage helper. Takes a formula and the domains; gives the formula's **hull** (the
smallest box its top-level one-variable conjuncts confine it to) and whether the formula *is*
that box. Two rules whose hulls are disjoint can never hold together, so the pairwise checks
skip them without a solver call; when both formulas are exact boxes, overlap and implication
are decided here outright. Also used to describe coverage-gap regions.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import ceil, floor
from typing import Any

from pedrag.compiler.encode import Domain
from pedrag.compiler.formula import Node


@dataclass(frozen=True)
class Interval:
    low: Fraction
    high: Fraction
    low_closed: bool = True
    high_closed: bool = True

    def empty(self, integer: bool) -> bool:
        if integer:
            return self.low > self.high
        return self.low > self.high or (
            self.low == self.high and not (self.low_closed and self.high_closed)
        )

    def meet(self, other: Interval) -> Interval:
        if other.low > self.low or (other.low == self.low and not other.low_closed):
            low, low_closed = other.low, other.low_closed
        else:
            low, low_closed = self.low, self.low_closed
        if other.high < self.high or (other.high == self.high and not other.high_closed):
            high, high_closed = other.high, other.high_closed
        else:
            high, high_closed = self.high, self.high_closed
        return Interval(low, high, low_closed, high_closed)

    def within(self, other: Interval) -> bool:
        low_ok = self.low > other.low or (
            self.low == other.low and (other.low_closed or not self.low_closed)
        )
        high_ok = self.high < other.high or (
            self.high == other.high and (other.high_closed or not self.high_closed)
        )
        return low_ok and high_ok


def _integral(interval: Interval) -> Interval:
    """An int variable's interval as closed integer bounds."""
    low = Fraction(ceil(interval.low)) if interval.low_closed else Fraction(floor(interval.low) + 1)
    high = (
        Fraction(floor(interval.high))
        if interval.high_closed
        else Fraction(ceil(interval.high) - 1)
    )
    return Interval(low, high)


Range = Interval | frozenset[Any]


class Box:
    """Per-variable ranges; a variable not mentioned ranges over its whole domain."""

    def __init__(self, domains: dict[str, Domain], ranges: dict[str, Range] | None = None) -> None:
        self.domains = domains
        self.ranges: dict[str, Range] = dict(ranges or {})

    def full(self, var: str) -> Range:
        domain = self.domains[var]
        if domain.kind in ("bool", "enum"):
            return frozenset(domain.values)
        return Interval(domain.low, domain.high)

    def get(self, var: str) -> Range:
        found = self.ranges.get(var)
        # An empty set of enum values is falsy but is no "unrestricted": `or` here once made a
        # contradictory `m == a and m == b` read as the whole domain (a dead rule live).
        return found if found is not None else self.full(var)

    def restrict(self, var: str, part: Range) -> None:
        current = self.get(var)
        if isinstance(current, frozenset):
            assert isinstance(part, frozenset)
            self.ranges[var] = current & part
        else:
            assert isinstance(part, Interval)
            met = current.meet(part)
            self.ranges[var] = _integral(met) if self.domains[var].kind == "int" else met

    def empty(self) -> bool:
        for var, part in self.ranges.items():
            if isinstance(part, frozenset):
                if not part:
                    return True
            elif part.empty(self.domains[var].kind == "int"):
                return True
        return False

    def intersects(self, other: Box) -> bool:
        for var in self.ranges.keys() & other.ranges.keys():
            a, b = self.ranges[var], other.ranges[var]
            if isinstance(a, frozenset):
                if not (a & b):  # type: ignore[operator]
                    return False
            else:
                assert isinstance(b, Interval)
                met = a.meet(b)
                if (_integral(met) if self.domains[var].kind == "int" else met).empty(
                    self.domains[var].kind == "int"
                ):
                    return False
        return True

    def within(self, other: Box) -> bool:
        """Every state of this (non-empty) box is in `other`."""
        for var, outer in other.ranges.items():
            inner = self.get(var)
            if isinstance(outer, frozenset):
                if not inner <= outer:  # type: ignore[operator]
                    return False
            elif not inner.within(outer):  # type: ignore[union-attr]
                return False
        return True


def _atom_range(atom: Node, negated: bool, domain: Domain) -> Range | None:
    if atom.kind == "in":
        values = frozenset(domain.values) - atom.values if negated else atom.values  # type: ignore[operator]
        return frozenset(values)  # type: ignore[arg-type]
    if atom.kind != "cmp":
        return None
    c, op = atom.const, atom.op
    assert c is not None
    lo, hi = domain.low, domain.high
    if op == "==":
        return None if negated else Interval(c, c)
    if op == "<":
        return Interval(c, hi, True, True) if negated else Interval(lo, c, True, False)
    return Interval(c, hi, False, True) if negated else Interval(lo, c, True, True)


def hull(node: Node, domains: dict[str, Domain]) -> tuple[Box, bool]:
    """The box a formula's top-level one-variable conjuncts confine it to, and whether the
    formula is exactly that box."""
    box = Box(domains)
    exact = True
    parts = node.children if node.kind == "and" else (node,)
    if node.kind == "false":
        box.ranges["__empty__"] = frozenset()
        box.domains = {**domains, "__empty__": Domain("__empty__", "enum", values=())}
        return box, True
    for part in parts:
        if part.kind == "true":
            continue
        negated = part.kind == "not"
        atom = part.children[0] if negated else part
        rng = _atom_range(atom, negated, domains[atom.var]) if atom.var is not None else None
        if rng is None:
            exact = False
            continue
        box.restrict(atom.var, rng)  # type: ignore[arg-type]
    return box, exact
