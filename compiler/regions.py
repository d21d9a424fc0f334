"""Coverage-gap regions: uncovered states grown into maximal boxes, in designer terms.

Compiler stage helper for the `coverage-gap` check and `--fix`. Takes an `Analysis`; gives
the uncovered regions found, largest first, each a box of metric ranges in which no rule is
eligible, with its share of the state space, a witness, and its condition text
(`0.4 <= frustration < 0.7 and hint_requests == 0`).

Loop: find a state where no rule is eligible and that lies outside every box found so far
(the first such cell in the domains' order, so the answer is a function of the theory alone);
grow it one variable at a time (binary search over that variable's cells, since a box that
meets an eligible state keeps meeting it as it grows) until no variable can widen without
touching an eligible state; block the box; repeat, up to `LIMIT` boxes.

With one-variable atoms only (the usual case), eligibility is a union of cell boxes
(`compiler/box_measure.py`): the first uncovered cell is read off the pieces left when those
boxes and the blocked ones are cut out of the space, and a box is clear when it meets none of
them; both exact, without z3 or a search budget. With linear atoms, the first state is
searched by substituting into formulas (`Analysis.first_state`, z3 past its budget) and a box
is clear when z3 says so.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from pedrag.compiler import formula as F
from pedrag.compiler.box_measure import NOTHING, Box, first_outside
from pedrag.compiler.formula import Node
from pedrag.compiler.measure import ENUMERATE, Cell, cells
from pedrag.kernel.exact import decimal_fraction

if TYPE_CHECKING:
    from pedrag.compiler.analysis import Analysis

LIMIT = 12
GROWTH_GRID = 64  # pieces a wide variable of a linear atom is cut into while a box grows


def enum_condition(var: str, values: Sequence[Any], part: Container[Any]) -> str:
    """`var`'s values in `part`, in the shortest of `==`, `!=`, `in [..]`, `not in [..]`."""
    chosen = [v for v in values if v in part]
    others = [v for v in values if v not in part]
    if len(chosen) == 1:
        return f"{var} == {chosen[0]}"
    if len(others) == 1:
        return f"{var} != {others[0]}"
    if len(others) < len(chosen):
        return f"{var} not in [{', '.join(map(str, others))}]"
    return f"{var} in [{', '.join(map(str, chosen))}]"


@dataclass(frozen=True)
class Region:
    condition: str
    share: float
    witness: dict[str, Any]
    node: Node
    bounds: tuple[tuple[str, Any], ...]  # (variable, description parts) for tools


def _number(value: Fraction) -> str:
    """A bound as condition text that reads back as exactly this bound (never rounded, or a
    region next to a close threshold would be described on its other side)."""
    if value.denominator == 1:
        return str(value.numerator)
    text = repr(float(value))
    if Fraction(text) == value:
        return text
    return f"{value.numerator}/{value.denominator}"


class _Grower:
    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self.domains = analysis.domains
        # Cells are uniform for one-variable atoms only: variables in multi-variable linear
        # atoms are split value by value (small ints) or cut at the witness (reals and wide
        # ints, in `grow`), never enumerated over a wide range.
        self.linear = F.linear_vars(analysis.any_eligible)
        # Cut where eligibility changes, and nowhere else: the regions are then a function of
        # the rules' eligibility, which is what the cache keeps them under.
        self.cuts = analysis.eligible_cuts
        # With one-variable atoms only, eligibility as boxes over these cells: a box is clear
        # when it meets none of them, decided exactly without z3 (`compiler/box_measure.py`);
        # made once per analysis, as the coverage share reads them too.
        self.eligible_boxes: list[Box] | None = None
        self.cells: dict[str, list[Cell]]
        shared = analysis.eligible_cell_boxes()
        if shared is not None:
            self.cells, self.eligible_boxes = shared
        else:
            self.cells = {
                var: cells(
                    self.domains[var],
                    self.cuts.get(var),
                    enumerate_all=var in self.linear and self._small(var),
                )
                for var in self.domains
            }
        self.full = {var: (1 << len(found)) - 1 for var, found in self.cells.items()}

    def _small(self, var: str) -> bool:
        domain = self.domains[var]
        return domain.kind != "real" and domain.size() <= ENUMERATE

    def index_of(self, var: str, value: Any) -> int:
        found = self.cells[var]
        domain = self.domains[var]
        if domain.kind in ("bool", "enum"):
            return next(i for i, c in enumerate(found) if c.value == value)
        number = decimal_fraction(value)
        for index, cell in enumerate(found):
            assert cell.low is not None and cell.high is not None
            if cell.point and number == cell.low:
                return index
            if not cell.point and (
                cell.low < number < cell.high
                or (domain.kind == "int" and cell.low <= number <= cell.high)
            ):
                return index
        return 0

    def span_node(self, var: str, part: Any) -> Node:
        domain = self.domains[var]
        found = self.cells[var]
        if domain.kind in ("bool", "enum"):
            return F.member(var, part, domain.values)
        first, last = part
        parts = []
        if first > 0:
            low = found[first]
            parts.append(F.cmp(var, ">=" if low.low_closed else ">", low.low))  # type: ignore[arg-type]
        if last < len(found) - 1:
            high = found[last]
            parts.append(F.cmp(var, "<=" if high.high_closed else "<", high.high))  # type: ignore[arg-type]
        return F.and_(parts)

    def box_node(self, box: dict[str, Any]) -> Node:
        return F.and_(self.span_node(var, part) for var, part in box.items())

    def as_masks(self, box: dict[str, Any]) -> Box:
        """A grown box as cell bitmasks (`compiler/box_measure.py`'s form)."""
        out: Box = {}
        for var, part in box.items():
            found = self.cells[var]
            if isinstance(part, frozenset):
                out[var] = sum(1 << i for i, c in enumerate(found) if c.value in part)
            else:
                first, last = part
                out[var] = ((1 << (last + 1)) - 1) & ~((1 << first) - 1)
        return out

    def first_uncovered(
        self, blocks: list[dict[str, Any]], variables: list[str]
    ) -> dict[str, Any] | list[int] | None:
        """`Analysis.first_state` of "no rule is eligible and outside every box in `blocks`",
        over the same cells, exactly and without a search budget: the first such cell of
        positive measure, else the first such state at all (a single point between rules,
        `x != 0.1`); `NOTHING` when there is none, None when the boxes are not available
        (linear atoms, too many boxes) or the pieces grow too many."""
        if self.eligible_boxes is None:
            return None
        cut = [*self.eligible_boxes, *(self.as_masks(b) for b in blocks)]
        positive = {
            var: sum(1 << i for i, c in enumerate(self.cells[var]) if c.weight > 0)
            for var in variables
        }
        found = first_outside(cut, variables, positive)
        if found is NOTHING:
            found = first_outside(cut, variables, {var: self.full[var] for var in variables})
        if found is None or found is NOTHING:
            return found
        return {
            var: self.cells[var][index].value for var, index in zip(variables, found, strict=True)
        }

    def clear(self, box: dict[str, Any]) -> bool:
        """No rule is eligible anywhere in the box (unknown counts as not clear)."""
        if self.eligible_boxes is not None:
            masks = self.as_masks(box)
            return not any(
                all(masks.get(var, self.full[var]) & mask for var, mask in eligible.items())
                for eligible in self.eligible_boxes
            )
        return self.analysis.solve(
            [self.box_node(box), self.analysis.any_eligible], witness=False
        ).unsat

    def grow(self, witness: dict[str, Any], variables: list[str]) -> dict[str, Any]:
        box: dict[str, Any] = {}
        for var in variables:
            domain = self.domains[var]
            if var in self.linear and not self._small(var):
                # Cut at the witness and on an even grid: the binary search below then widens
                # the box a grid step at a time (cut at the witness alone, a wide variable
                # could only stay a point or take the whole rest of its range).
                value = Fraction(witness[var])
                step = (domain.high - domain.low) / GROWTH_GRID
                grid = {domain.low + k * step for k in range(1, GROWTH_GRID)}
                self.cells[var] = cells(domain, {*self.cuts.get(var, set()), value, *grid})
            if domain.kind in ("bool", "enum"):
                box[var] = frozenset([witness[var]])
            else:
                index = self.index_of(var, witness[var])
                box[var] = (index, index)
        self._grow_together(box, variables)
        for var in variables:
            domain = self.domains[var]
            if domain.kind in ("bool", "enum"):
                for value in domain.values:
                    if value not in box[var] and self.clear({**box, var: box[var] | {value}}):
                        box[var] = box[var] | {value}
                continue
            first, last = box[var]
            top = len(self.cells[var]) - 1
            low, high = last, top  # widen upwards: largest clear `last`
            while low < high:
                mid = (low + high + 1) // 2
                if self.clear({**box, var: (first, mid)}):
                    low = mid
                else:
                    high = mid - 1
            last = low
            low, high = 0, first  # widen downwards: smallest clear `first`
            while low < high:
                mid = (low + high) // 2
                if self.clear({**box, var: (mid, last)}):
                    high = mid
                else:
                    low = mid + 1
            box[var] = (high, last)
        return box

    def _grow_together(self, box: dict[str, Any], variables: list[str]) -> None:
        """Widen the wide variables of linear atoms in turn, each end by a step that doubles
        while the box stays clear and halves when it does not, so a box under
        `a - b + 2 * c > 990` is as wide in `a` as in `c` and not a sliver along one of them
        (grown one variable after the other, the first takes all the room)."""
        wide = [v for v in variables if v in self.linear and not self._small(v)]
        if len(wide) < 2:
            return
        steps = {(var, end): 1 for var in wide for end in (1, -1)}
        while steps:
            for var, end in list(steps):
                step = steps[(var, end)]
                first, last = box[var]
                top = len(self.cells[var]) - 1
                trial = (first, min(top, last + step)) if end > 0 else (max(0, first - step), last)
                if trial == (first, last):
                    del steps[(var, end)]
                elif self.clear({**box, var: trial}):
                    box[var] = trial
                    steps[(var, end)] = step * 2
                elif step > 1:
                    steps[(var, end)] = step // 2
                else:
                    del steps[(var, end)]

    def share(self, box: dict[str, Any]) -> float:
        total = 1.0
        for var, part in box.items():
            found = self.cells[var]
            if isinstance(part, frozenset):
                total *= sum(c.weight for c in found if c.value in part)
            else:
                total *= sum(c.weight for c in found[part[0] : part[1] + 1])
        return total

    def describe(self, box: dict[str, Any]) -> tuple[str, tuple[tuple[str, Any], ...]]:
        texts: list[str] = []
        bounds: list[tuple[str, Any]] = []
        for var in self.domains:
            if var not in box:
                continue
            domain = self.domains[var]
            part = box[var]
            found = self.cells[var]
            if domain.kind == "bool":
                if len(part) == 1:
                    texts.append(var if True in part else f"not {var}")
                    bounds.append((var, sorted(part)))
                continue
            if domain.kind == "enum":
                if len(part) == len(domain.values):
                    continue
                texts.append(enum_condition(var, domain.values, part))
                bounds.append((var, [v for v in domain.values if v in part]))
                continue
            first, last = part
            if first == 0 and last == len(found) - 1:
                continue
            low_cell, high_cell = found[first], found[last]
            low = low_cell.low if domain.kind == "real" or first > 0 else domain.low
            high = high_cell.high if domain.kind == "real" or last < len(found) - 1 else domain.high
            low_closed = low_cell.low_closed or domain.kind == "int"
            high_closed = high_cell.high_closed or domain.kind == "int"
            assert low is not None and high is not None
            if low == high:
                texts.append(f"{var} == {_number(low)}")
            else:
                left = f"{_number(low)} {'<=' if low_closed else '<'} " if first > 0 else ""
                right = (
                    f" {'<=' if high_closed else '<'} {_number(high)}"
                    if last < len(found) - 1
                    else ""
                )
                texts.append(f"{left}{var}{right}")
            bounds.append((var, (float(low), low_closed, float(high), high_closed)))
        return (" and ".join(texts) or "true"), tuple(bounds)


def gap_regions(analysis: Analysis, limit: int = LIMIT) -> list[Region]:
    """Uncovered boxes, largest share first (an empty list when every state is covered)."""
    grower = _Grower(analysis)
    uncovered = F.not_(analysis.any_eligible)
    variables = [v for v in analysis.domains if v in analysis.any_eligible.vars]
    blocks: list[Node] = []
    boxes: list[dict[str, Any]] = []
    regions: list[Region] = []
    for _ in range(limit):
        query = [uncovered, *blocks]
        first = grower.first_uncovered(boxes, variables)
        if first is NOTHING:
            break
        start = first if isinstance(first, dict) else analysis.first_state(F.and_(query), variables)
        if start is not None:
            witness, exact = analysis.tidy(start, query)
        else:
            outcome = analysis.solve(query)
            if not outcome.sat:
                break
            assert outcome.witness is not None and outcome.state is not None
            witness, exact = outcome.witness, outcome.state
        box = grower.grow(exact, variables)
        node = grower.box_node(box)
        condition, bounds = grower.describe(box)
        regions.append(Region(condition, grower.share(box), witness, node, bounds))
        blocks.append(F.not_(node))
        boxes.append(box)
    regions.sort(key=lambda r: (-r.share, r.condition))
    return _without_nested(analysis, regions)


def _without_nested(analysis: Analysis, regions: list[Region]) -> list[Region]:
    """The regions less those inside a larger one (a later box grown over an earlier one,
    possible where boxes are grown on linear atoms): each is listed once, largest first."""
    kept: list[Region] = []
    for region in regions:
        inside = any(
            analysis.decide([region.node, F.not_(larger.node)], witness=False).unsat
            for larger in kept
        )
        if not inside:
            kept.append(region)
    return kept
