"""Exact share of the state space where a formula holds (DESIGN: coverage).

Compiler stage helper. Takes formulas and the variables' domains; gives, for any formula,
the probability that a state drawn uniformly (each variable independently: uniform over a
float range, over an int range's integers, over enum values, bools 50/50) satisfies it, in
exact rationals, and says when it could not be exact and by how much it may be off.

How, one variable at a time (a Shannon expansion, memoised on the interned residual formula,
so rule sets behave like a decision diagram):

- A variable read only by one-variable atoms: the atoms' constants cut its domain into
  **cells** (open intervals and their end points for reals, runs of integers for ints, single
  values for enums and bools) on which every atom has one truth value; each cell's
  representative is substituted and the cells' weights times the measure of what remains are
  added. End points of real intervals have measure zero and are skipped.
- An int of at most `ENUMERATE` values inside a multi-variable linear atom is split value by
  value: once it is fixed the atom has one variable less.
- The remaining variables of linear atoms (reals, wide ints; at most `COUPLED` of them) are
  measured exactly with the arrangement of the atoms' hyperplanes: between the projections of
  its vertices on one variable x, the measure of the slice at x is a polynomial of degree
  below the number of variables, so it is integrated (reals) or summed over the integers
  (ints, by forward differences) exactly from that many sample slices. `a + b > 3` with `a`
  in [0, 10^9] takes a handful of slices, never 10^9 values. Ints are split before reals and
  must enter each atom with equal coefficients, so their slice counts stay polynomial.
- Otherwise (more coupled variables, ints whose counts are only periodic, or an arrangement
  needing more than `SAMPLE_BUDGET` sample slices) the variable is
  cut into `GRID` slices and each slice is bounded from below (the formula for every x in the
  slice) and above (for some x): the share is the mean of the bounds, `exact` turns false and
  `error` is the bound on how far off it can be.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from math import ceil, comb, floor
from typing import Any

from pedrag.compiler import formula as F
from pedrag.compiler.box_measure import Box, cell_boxes, narrow_boxes, union_share
from pedrag.compiler.encode import Domain
from pedrag.compiler.formula import Node

ENUMERATE = 256  # ints in linear atoms with at most this many values are split value by value
COUPLED = 3  # variables of linear atoms measured exactly through their arrangement
VERTEX_BUDGET = 200_000  # hyperplane subsets tried per arrangement before falling back
SAMPLE_BUDGET = 512  # slices sampled per arrangement before falling back
GRID = 64  # slices per variable on the bounded (inexact) fallback


@dataclass(frozen=True)
class Cell:
    """A piece of one variable's domain on which every atom is constant."""

    low: Fraction | None = None
    high: Fraction | None = None
    low_closed: bool = True
    high_closed: bool = True
    value: Any = None  # a representative
    weight: float = 0.0
    share: Fraction = Fraction(0)  # the weight, exactly

    @property
    def point(self) -> bool:
        return self.low is not None and self.low == self.high


def cells(domain: Domain, cuts: set[Fraction] | None, enumerate_all: bool = False) -> list[Cell]:
    """The elementary cells of a domain cut at `cuts`, in order; reals include end points."""
    if domain.kind in ("bool", "enum"):
        n = len(domain.values)
        return [Cell(value=v, weight=1.0 / n, share=Fraction(1, n)) for v in domain.values]
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
            critical.add(floor(c))
            critical.add(ceil(c))
        whole = sorted(k for k in critical if low <= k <= high)
        out: list[Cell] = []
        for index, k in enumerate(whole):
            out.append(
                Cell(
                    Fraction(k),
                    Fraction(k),
                    value=Fraction(k),
                    weight=1.0 / total,
                    share=Fraction(1, total),
                )
            )
            if index + 1 < len(whole) and whole[index + 1] - k > 1:
                a, b = k + 1, whole[index + 1] - 1
                out.append(
                    Cell(
                        Fraction(a),
                        Fraction(b),
                        value=Fraction(a),
                        weight=(b - a + 1) / total,
                        share=Fraction(b - a + 1, total),
                    )
                )
        return out
    if low == high:
        return [Cell(low, high, value=low, weight=1.0, share=Fraction(1))]
    width = high - low
    points = [low, *inside, high]
    out = []
    for index, p in enumerate(points):
        out.append(Cell(p, p, value=p))
        if index + 1 < len(points):
            q = points[index + 1]
            share = (q - p) / width
            out.append(Cell(p, q, False, False, (p + q) / 2, float(share), share))
    return out


_OPEN_WEIGHTS: dict[int, list[Fraction]] = {}


def _open_weights(degree: int) -> list[Fraction]:
    """Weights w_i with sum(w_i * P(u_i)) = mean of P over (0, 1) for every polynomial P of
    degree <= `degree`, at the nodes u_i = (i + 1) / (degree + 2)."""
    hit = _OPEN_WEIGHTS.get(degree)
    if hit is not None:
        return hit
    n = degree + 1
    nodes = [Fraction(i + 1, degree + 2) for i in range(n)]
    # Solve sum_i w_i * u_i^j = 1 / (j + 1), j = 0..degree (a Vandermonde system).
    rows = [[u**j for u in nodes] + [Fraction(1, j + 1)] for j in range(n)]
    weights = _solve(rows)
    assert weights is not None
    _OPEN_WEIGHTS[degree] = weights
    return weights


def _solve(rows: list[list[Fraction]]) -> list[Fraction] | None:
    """The unique solution of an augmented square system, or None when it is singular."""
    n = len(rows)
    m = [list(r) for r in rows]
    for col in range(n):
        pivot = next((r for r in range(col, n) if m[r][col] != 0), None)
        if pivot is None:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        lead = m[col][col]
        m[col] = [v / lead for v in m[col]]
        for r in range(n):
            if r != col and m[r][col] != 0:
                factor = m[r][col]
                m[r] = [a - factor * b for a, b in zip(m[r], m[col], strict=True)]
    return [m[r][n] for r in range(n)]


class Measure:
    """Shares of the state space, for formulas over the same variables."""

    def __init__(
        self,
        domains: dict[str, Domain],
        formulas: list[Node],
        atoms: Callable[[Node], list[Node]] = F.atoms,
    ) -> None:
        """`atoms`: a formula's atoms (`F.atoms`, or a kept answer of it), walked once."""
        self.domains = domains
        self.cuts: dict[str, set[Fraction]] = {}
        reads: Counter[str] = Counter()
        for node in formulas:
            found_atoms = atoms(node)
            for var, found in F.breakpoints_of(found_atoms).items():
                self.cuts.setdefault(var, set()).update(found)
            for atom in found_atoms:
                reads.update(atom.vars)
        self.rank = {var: (-count, var) for var, count in reads.items()}
        self.exact = True
        self.error = Fraction(0)  # bound on |share - true share| of the last `share` call
        self._memo: dict[Node, tuple[Fraction, Fraction]] = {}
        self._cells: dict[tuple[str, frozenset[Fraction], bool], list[Cell]] = {}

    # -- the public answer -------------------------------------------------------------------
    def share(self, node: Node) -> float:
        value, error = self.exact_share(node)
        self.error = error
        if error:
            self.exact = False
        return float(value)

    def share_of_boxes(
        self, node: Node, cells_of: dict[str, list[Cell]], boxes: list[Box]
    ) -> float:
        """`share(node)` from `node`'s box form made over every cell of each variable
        (`cells_of[var]`, cut at `node`'s breakpoints, zero-share cells included: the gap
        search's, `Analysis.eligible_cell_boxes`), so the form is not made twice. The boxes
        are narrowed to the cells of positive share, which `_by_boxes` measures: the union is
        the same set, so its share is the same exact fraction. Where the cutting gives up
        (`union_share`: too many pieces), `share` measures afresh."""
        keep = {
            var: [i for i, c in enumerate(found) if c.share > 0] for var, found in cells_of.items()
        }
        shares = {var: [cells_of[var][i].share for i in kept] for var, kept in keep.items()}
        narrowed = narrow_boxes(boxes, keep)
        order = sorted({var for box in narrowed for var in box}, key=self._rank)
        value = union_share(narrowed, order, shares)
        if value is None:
            return self.share(node)
        self.error = Fraction(0)
        return float(value)

    def exact_share(self, node: Node) -> tuple[Fraction, Fraction]:
        """The share as a rational, and a bound on its error (0 when exact)."""
        by_boxes = self._by_boxes(node)
        if by_boxes is not None:
            return by_boxes, Fraction(0)
        return self._exact(node)

    def _by_boxes(self, node: Node) -> Fraction | None:
        """The share through the formula's box form (`compiler/box_measure.py`), or None when
        it has linear atoms or too many boxes."""
        if node.linear:
            return None
        cuts = F.breakpoints(node)
        values: dict[str, list[Any]] = {}
        shares: dict[str, list[Fraction]] = {}
        for var in node.vars:
            found = self._cells_of(var, cuts.get(var, set()), False)
            values[var] = [c.value for c in found]
            shares[var] = [c.share for c in found]
        boxes = cell_boxes(node, values)
        if boxes is None:
            return None
        order = sorted({var for box in boxes for var in box}, key=self._rank)
        return union_share(boxes, order, shares)

    def _exact(self, node: Node) -> tuple[Fraction, Fraction]:
        if node is F.TRUE:
            return Fraction(1), Fraction(0)
        if node is F.FALSE:
            return Fraction(0), Fraction(0)
        hit = self._memo.get(node)
        if hit is not None:
            return hit
        result = self._split(node)
        self._memo[node] = result
        return result

    # -- one variable at a time --------------------------------------------------------------
    def _split(self, node: Node) -> tuple[Fraction, Fraction]:
        linear = node.linear
        # The most-read variable first (the residuals then shrink fastest), as for cells.
        var = min(node.vars, key=self._rank)
        if var not in linear:
            return self._by_cells(node, var, enumerate_all=False)
        small = [
            v
            for v in linear
            if self.domains[v].kind == "int" and self.domains[v].size() <= ENUMERATE
        ]
        if small:
            return self._by_cells(node, min(small, key=self._rank), enumerate_all=True)
        return self._by_arrangement(
            node, sorted(linear), [a for a in F.atoms(node) if a.kind == "lin"]
        )

    def _rank(self, var: str) -> tuple[int, str]:
        return self.rank.get(var, (0, var))

    def _cells_of(self, var: str, cuts: set[Fraction], enumerate_all: bool) -> list[Cell]:
        key = (var, frozenset(cuts), enumerate_all)
        hit = self._cells.get(key)
        if hit is None:
            domain = self.domains[var]
            found = cells(domain, cuts, enumerate_all)
            if enumerate_all and domain.kind == "int":
                total = domain.size()
                found = [
                    Cell(c.low, c.high, value=c.value, weight=c.weight, share=Fraction(1, total))
                    for c in found
                ]
            hit = [c for c in found if c.share > 0]
            self._cells[key] = hit
        return hit

    def _by_cells(self, node: Node, var: str, enumerate_all: bool) -> tuple[Fraction, Fraction]:
        total, error = Fraction(0), Fraction(0)
        # The residual's own cuts: substituting into a linear atom makes new one-variable atoms.
        cuts = set() if enumerate_all else F.cuts_of(node, var)
        for cell in self._cells_of(var, cuts, enumerate_all):
            share, bound = self._exact(F.substitute(node, var, cell.value))
            total += cell.share * share
            error += cell.share * bound
        return total, error

    # -- linear atoms: the arrangement of their hyperplanes ----------------------------------
    def _by_arrangement(
        self, node: Node, variables: list[str], atoms: list[Node]
    ) -> tuple[Fraction, Fraction]:
        ints = [v for v in variables if self.domains[v].kind == "int"]
        # Ints first (their slice counts are polynomial only that way round), then the
        # variable with the fewest cuts, which makes the fewest slabs.
        cuts = F.breakpoints(node)
        var = min(ints or variables, key=lambda v: (len(cuts.get(v, ())), v))
        if len(variables) > COUPLED or not self._polynomial(ints, atoms):
            return self._bounded(node, var)
        points = self._projections(node, variables, atoms, var)
        degree = len(variables) - 1
        if points is None or len(points) * (degree + 1) > SAMPLE_BUDGET:
            return self._bounded(node, var)
        domain = self.domains[var]
        if domain.kind == "int":
            return self._sum_over_ints(node, var, points, degree), Fraction(0)
        return self._integrate(node, var, points, degree), Fraction(0)

    def _polynomial(self, ints: list[str], atoms: list[Node]) -> bool:
        """Slice counts over ints are polynomial when, in every atom, the ints' coefficients
        are equal in size (otherwise they are only periodic, as floor(k / 2) is)."""
        if len(ints) < 2:
            return True
        for atom in atoms:
            sizes = {abs(c) for v, c in atom.terms or () if v in ints}
            if len(sizes) > 1:
                return False
        return True

    def _projections(
        self, node: Node, variables: list[str], atoms: list[Node], var: str
    ) -> list[Fraction] | None:
        """The sorted values of `var` at the vertices of the arrangement (hyperplanes of the
        linear atoms, the domains' faces and the one-variable cuts), within its domain.

        A vertex on a face or cut of `var` itself projects to that constant, and one made of
        faces and cuts alone fixes no value of `var`; so only vertices with at least one
        linear hyperplane and the other coordinates fixed by faces or cuts are solved for."""
        cuts = F.breakpoints(node)
        fixed: dict[str, list[Fraction]] = {}
        for v in variables:
            domain = self.domains[v]
            fixed[v] = sorted(
                {
                    domain.low,
                    domain.high,
                    *(c for c in cuts.get(v, ()) if domain.low < c < domain.high),
                }
            )
        found = set(fixed[var])
        planes = sorted({(tuple(atom.terms or ()), atom.const) for atom in atoms})  # type: ignore[misc]
        others = [v for v in variables if v != var]
        n = len(variables)
        tried = 0
        for k in range(1, n + 1):
            for chosen in itertools.combinations(planes, k):
                # The n - k coordinates not solved for are fixed at faces or cuts.
                for pinned in itertools.combinations(others, n - k):
                    free = [v for v in variables if v not in pinned]
                    for values in itertools.product(*(fixed[v] for v in pinned)):
                        tried += 1
                        if tried > VERTEX_BUDGET:
                            return None
                        at = dict(zip(pinned, values, strict=True))
                        rows = []
                        for terms, const in chosen:
                            coefficients = dict(terms)
                            rest = sum((c * at[v] for v, c in terms if v in at), Fraction(0))
                            rows.append([coefficients.get(v, Fraction(0)) for v in free])
                            rows[-1].append(const - rest)  # type: ignore[operator]
                        solution = _solve(rows)
                        if solution is None:
                            continue
                        point = {**at, **dict(zip(free, solution, strict=True))}
                        if all(
                            self.domains[v].low <= point[v] <= self.domains[v].high
                            for v in variables
                        ):
                            found.add(point[var])
        return sorted(found)

    def _integrate(self, node: Node, var: str, points: list[Fraction], degree: int) -> Fraction:
        domain = self.domains[var]
        if domain.low == domain.high:
            return self._exact(F.substitute(node, var, domain.low))[0]
        width = domain.high - domain.low
        weights = _open_weights(degree)
        total = Fraction(0)
        for p, q in zip(points, points[1:], strict=False):
            mean = Fraction(0)
            for i, weight in enumerate(weights):
                sample = p + (q - p) * Fraction(i + 1, degree + 2)
                mean += weight * self._exact(F.substitute(node, var, sample))[0]
            total += (q - p) / width * mean
        return total

    def _sum_over_ints(self, node: Node, var: str, points: list[Fraction], degree: int) -> Fraction:
        domain = self.domains[var]
        low, high = int(domain.low), int(domain.high)
        critical = {low, high}
        for p in points:
            critical.update(k for k in (floor(p), ceil(p)) if low <= k <= high)
        ordered = sorted(critical)

        def at(k: int) -> Fraction:
            return self._exact(F.substitute(node, var, Fraction(k)))[0]

        total = sum((at(k) for k in ordered), Fraction(0))
        for a, b in zip(ordered, ordered[1:], strict=False):
            first, count = a + 1, b - a - 1  # the run strictly between two critical values
            if count <= 0:
                continue
            if count <= degree + 1:
                total += sum((at(first + j) for j in range(count)), Fraction(0))
                continue
            # A polynomial of degree <= `degree` on the run: sum it by forward differences.
            differences = [at(first + j) for j in range(degree + 1)]
            run = Fraction(0)
            for order in range(degree + 1):
                run += comb(count, order + 1) * differences[0]
                differences = [y - x for x, y in zip(differences, differences[1:], strict=False)]
            total += run
        return total / (high - low + 1)

    # -- the bounded fallback ----------------------------------------------------------------
    def _bounded(self, node: Node, var: str) -> tuple[Fraction, Fraction]:
        """Slices of `var`, each between the share where the formula holds for every value in
        the slice and where it holds for some: the mean of the bounds, and half their gap."""
        domain = self.domains[var]
        if domain.kind == "int":
            size = domain.size()
            if size <= 100_000:
                return self._by_cells(node, var, enumerate_all=True)
            step = Fraction(size, GRID)
            edges = [domain.low + floor(step * i) for i in range(GRID)] + [domain.high + 1]
            slices = [
                (edges[i], edges[i + 1] - 1, Fraction(edges[i + 1] - edges[i], size))
                for i in range(GRID)
                if edges[i + 1] > edges[i]
            ]
        else:
            width = domain.high - domain.low
            if width == 0:
                return self._exact(F.substitute(node, var, domain.low))
            slices = [
                (
                    domain.low + width * i / GRID,
                    domain.low + width * (i + 1) / GRID,
                    Fraction(1, GRID),
                )
                for i in range(GRID)
            ]
        total, error = Fraction(0), Fraction(0)
        for low, high, weight in slices:
            lower, lower_error = self._exact(_over(node, var, low, high, every=True))
            upper, upper_error = self._exact(_over(node, var, low, high, every=False))
            total += weight * (lower + upper) / 2
            error += weight * ((upper - lower) / 2 + max(lower_error, upper_error))
        return total, error


def _over(node: Node, var: str, low: Fraction, high: Fraction, every: bool) -> Node:
    """A formula without `var` implying (every) or implied by (some) `node` holding for
    some/every value of `var` in [low, high]: interval reasoning atom by atom."""
    kind = node.kind
    if var not in node.vars:
        return node
    if kind == "not":
        return F.not_(_over(node.children[0], var, low, high, not every))
    if kind == "and":
        return F.and_(_over(c, var, low, high, every) for c in node.children)
    if kind == "or":
        return F.or_(_over(c, var, low, high, every) for c in node.children)
    assert node.op is not None and node.const is not None
    if kind == "cmp":
        c, op = node.const, node.op
        if op == "<":
            return F.const(high < c if every else low < c)
        if op == "<=":
            return F.const(high <= c if every else low <= c)
        return F.const(low == high == c if every else low <= c <= high)
    # lin: coef * var + rest op const, with coef * var in [least, most] over the slice
    coef = next(c for v, c in node.terms or () if v == var)
    rest = {v: c for v, c in node.terms or () if v != var}
    least, most = sorted((coef * low, coef * high))
    if node.op == "==":
        if every:
            return F.FALSE if least != most else F.lin(rest, "==", node.const - least)
        return F.and_([F.lin(rest, ">=", node.const - most), F.lin(rest, "<=", node.const - least)])
    # rest op const - coef * var: hardest when coef * var is largest (every), easiest (some)
    return F.lin(rest, node.op, node.const - (most if every else least))
