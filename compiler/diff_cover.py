"""Covering the states where a diff's choice changes with few, large, disjoint boxes.

Compiler stage helper for `pedrag diff`. Takes the decision diagram `compiler/diffing.py`
builds (a split on one variable per node, terminals that say "the choice changes here",
shared between paths) and the grid of cells every variable is cut into; gives disjoint
boxes in which the choice changes everywhere (with the same (old, new) action, under
priority selection), largest first.

Greedy, as the coverage gaps are (`compiler/regions.py`): take the heaviest piece of the
diagram not yet covered, widen it one variable at a time for as long as every state of the
box still changes and the box stays clear of the boxes already taken, take it, repeat. The
diagram answers "does every state of this box change?" by walking only the branches the
box reaches.
"""

from __future__ import annotations

import heapq
import itertools
import time
from fractions import Fraction
from typing import Any

from pedrag.compiler import diff_boxes as B
from pedrag.compiler.encode import Domain

# A box on the grid: per variable, a range of cell indices (numbers) or a set of values;
# a variable it does not mention is whole.
GridBox = dict[str, Any]


class Cover:
    def __init__(
        self, root: Any, grid: dict[str, list[B.Cell]], domains: dict[str, Domain]
    ) -> None:
        self.root = root
        self.grid = grid
        self.domains = domains
        self.taken: list[tuple[GridBox, Any]] = []
        self._fractions: dict[tuple[str, Any], float] = {}
        self._locals: dict[tuple[str, Any], tuple[int, int]] = {}

    # -- grid boxes --------------------------------------------------------------------------
    def to_box(self, box: GridBox) -> B.Box:
        out: B.Box = {}
        for var, part in box.items():
            if isinstance(part, frozenset):
                out[var] = part
                continue
            cells = self.grid[var]
            first, last = cells[part[0]].part, cells[part[1]].part
            assert isinstance(first, B.Interval) and isinstance(last, B.Interval)
            out[var] = B.Interval(first.low, last.high, first.low_closed, last.high_closed)
        return out

    def share(self, box: GridBox) -> Fraction:
        return B.share(self.to_box(box), self.domains)

    def _indices(self, var: str, part: Any) -> range | list[int]:
        cells = self.grid[var]
        if part is None:
            return range(len(cells))
        if isinstance(part, frozenset):
            return [i for i, c in enumerate(cells) if c.value in part]
        return range(part[0], part[1] + 1)

    def _local(self, var: str, part: B.Part) -> Any:
        """A diagram cell as a grid part."""
        if isinstance(part, frozenset):
            return part
        key = (var, part)
        hit = self._locals.get(key)
        if hit is None:
            inside = [i for i, c in enumerate(self.grid[var]) if B.contains(part, c.value)]
            hit = self._locals[key] = (inside[0], inside[-1])
        return hit

    def _child(self, node: Any, index: int) -> Any:
        hit = node.lookup.get(index)
        if hit is None:
            value = self.grid[node.var][index].value
            hit = next(i for i, p in enumerate(node.parts) if B.contains(p, value))
            node.lookup[index] = hit
        return node.children[hit]

    # -- questions ---------------------------------------------------------------------------
    def changes_everywhere(self, box: GridBox, label: Any) -> bool:
        seen: dict[int, bool] = {}

        def walk(node: Any) -> bool:
            if node.full is not None or node.var is None:
                return node.full == (label,)
            hit = seen.get(id(node))
            if hit is None:
                children = {
                    id(c): c
                    for c in (
                        self._child(node, i) for i in self._indices(node.var, box.get(node.var))
                    )
                }
                hit = all(walk(c) for c in children.values())
                seen[id(node)] = hit
            return hit

        try:
            return walk(self.root)
        finally:
            walk = None  # type: ignore[assignment]  # it referred to itself: now freed at once

    @staticmethod
    def _overlap(a: GridBox, b: GridBox) -> bool:
        for var in a.keys() & b.keys():
            pa, pb = a[var], b[var]
            if isinstance(pa, frozenset):
                if not pa & pb:
                    return False
            elif pa[1] < pb[0] or pb[1] < pa[0]:
                return False
        return True

    def _fraction(self, var: str, part: Any) -> float:
        key = (var, part)
        hit = self._fractions.get(key)
        if hit is None:
            hit = float(self.share({var: part}))
            self._fractions[key] = hit
        return hit

    def _within(self, box: GridBox, other: GridBox) -> bool:
        for var, theirs in other.items():
            mine = box.get(var)
            if mine is None:
                return False
            if isinstance(theirs, frozenset):
                if not mine <= theirs:
                    return False
            elif mine[0] < theirs[0] or mine[1] > theirs[1]:
                return False
        return True

    def _minus(self, box: GridBox, other: GridBox) -> list[GridBox]:
        """`box` without `other`, as disjoint boxes."""
        pieces: list[GridBox] = []
        rest = dict(box)
        for var in self.domains:
            if var not in other:
                continue
            mine = rest.get(var)
            theirs = other[var]
            if isinstance(theirs, frozenset):
                values = mine if mine is not None else frozenset(self.domains[var].values)
                outside = values - theirs
                if outside:
                    pieces.append({**rest, var: outside})
                rest[var] = values & theirs
            else:
                first, last = mine if mine is not None else (0, len(self.grid[var]) - 1)
                if first < theirs[0]:
                    pieces.append({**rest, var: (first, theirs[0] - 1)})
                if theirs[1] < last:
                    pieces.append({**rest, var: (theirs[1] + 1, last)})
                rest[var] = (max(first, theirs[0]), min(last, theirs[1]))
        return pieces

    def _clear(self, box: GridBox) -> bool:
        return not any(self._overlap(box, taken) for taken, _ in self.taken)

    def grow(self, box: GridBox, label: Any) -> GridBox:
        box = dict(box)
        for var, domain in self.domains.items():
            if domain.kind in ("bool", "enum"):
                for value in domain.values:
                    current = box.get(var)
                    if current is None or value in current:
                        continue
                    trial = {**box, var: current | {value}}
                    if self._clear(trial) and self.changes_everywhere(trial, label):
                        box = trial
                if box.get(var) == frozenset(domain.values):
                    del box[var]
                continue
            if var not in box:
                continue
            first, last = box[var]
            top = len(self.grid[var]) - 1

            def fits(a: int, b: int, box: GridBox = box, var: str = var) -> bool:
                trial = {**box, var: (a, b)}
                return self._clear(trial) and self.changes_everywhere(trial, label)

            low, high = last, top  # the largest `last`
            while low < high:
                middle = (low + high + 1) // 2
                low, high = (middle, high) if fits(first, middle) else (low, middle - 1)
            last = low
            low, high = 0, first  # the smallest `first`
            while low < high:
                middle = (low + high) // 2
                low, high = (low, middle) if fits(middle, last) else (middle + 1, high)
            box[var] = (high, last)
            if box[var] == (0, top):
                del box[var]
        return box

    # -- the greedy cover --------------------------------------------------------------------
    def regions(self, limit: int | None, deadline: float) -> tuple[list[tuple[GridBox, Any]], bool]:
        """Up to `limit` boxes (all when None), and whether the cover is complete."""
        counter = itertools.count()
        queue: list[tuple[float, int, GridBox, Any]] = []

        def push(box: GridBox, node: Any, weight: float) -> None:
            heapq.heappush(queue, (-weight * float(node.share), next(counter), box, node))

        push({}, self.root, 1.0)
        while queue:
            if limit is not None and len(self.taken) >= limit:
                return self.taken, False
            if time.perf_counter() > deadline:
                return self.taken, False
            priority, _, box, node = heapq.heappop(queue)
            if not node.changed or any(self._within(box, t) for t, _ in self.taken):
                continue
            if node.full is None:
                weight = -priority / float(node.share) if node.share else 0.0
                for part, child in zip(node.parts, node.children, strict=True):
                    if child.changed:
                        local = self._local(node.var, part)
                        grown = {**box, node.var: local}
                        push(grown, child, weight * self._fraction(node.var, local))
                continue
            overlapping = next((t for t, _ in self.taken if self._overlap(box, t)), None)
            if overlapping is not None:
                for piece in self._minus(box, overlapping):
                    push(piece, node, float(self.share(piece)))
                continue
            (label,) = node.full
            self.taken.append((self.grow(box, label), label))
        return self.taken, True
