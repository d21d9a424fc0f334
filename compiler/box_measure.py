"""The exact share of a formula without linear atoms, as a union of cell boxes.

Compiler stage helper, called by `compiler/measure.py` before its Shannon expansion. The
expansion substitutes each cell's value into the whole residual formula, which on a rule set
without a catch-all rewrites thousands of residuals of hundreds of rules (a 200-rule generated
theory took 41 s). Here the formula is first put into a disjunction of **boxes**: with
one-variable atoms only, every atom is a set of its variable's cells (the cuts of the whole
formula make each atom constant on a cell), a negated atom is the complement set, and a
conjunction meets its parts' boxes variable by variable. The share of the union is then found by
cutting: what is still uncovered is kept as disjoint boxes (at first the whole space), and
each box of the union, largest first, is cut out of every piece it meets, which leaves at most
one piece per variable the box constrains. Each step is a few AND-NOTs of bitmasks, where the
expansion rewrote a formula; a 200-rule generated theory's coverage takes 3 ms instead of 41 s.

The answer is the same exact rational the expansion computes (`tests/compiler/test_measure.py`
compares both on generated theories). When the box form would grow past `MAX_BOXES` (a
negated disjunction of many conjunctions), `boxes_of` returns None and the caller expands the
formula as before; so does `union_share` when the uncovered pieces grow past `MAX_PIECES`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from pedrag.compiler.formula import Node

MAX_BOXES = 20_000
"""Boxes the disjunctive form may have before the measure falls back to the expansion."""
MAX_PIECES = 200_000
"""Uncovered pieces the cutting may hold before the measure falls back to the expansion."""

Box = dict[str, int]
"""Variable -> bitmask of its cells the box allows (a variable not named allows every cell)."""


class _TooBig(Exception):
    pass


def cell_boxes(
    node: Node,
    values: dict[str, list[Any]],
    memo: dict[tuple[Node, bool], list[Box]] | None = None,
) -> list[Box] | None:
    """`boxes_of(node)` over the cells whose representatives `values[var]` lists for each
    variable `node` reads (ascending for a number): each atom's mask is read off them.
    `memo`: subformulas' boxes over the same cells, shared by calls for several formulas."""

    def masks(atom: Node) -> tuple[str, int]:
        assert atom.var is not None
        return atom.var, atom_mask(atom, values[atom.var])

    full = {var: (1 << len(found)) - 1 for var, found in values.items()}
    return boxes_of(node, masks, full, memo)


class KeptUnion:
    """A disjunction's box form (`cell_boxes`), kept part by part over the cells it was made
    for, so that the next disjunction over the same variables' domains (the next check's
    "some rule is eligible", after a one-rule edit) makes only its new parts' and moves the
    others' masks to the new cells.

    Why it is exact: an atom of a kept part is constant on the new cells too (the new cells
    are cut at every constant of the new disjunction, which the part still belongs to), so the
    atom's new mask is its old mask read at each new cell's representative, whose old cell
    is the one that contains it. That reading commutes with the AND, OR and complement the box
    form is made of, keeps a non-full mask non-full and a non-empty meet non-empty, so a
    moved part's boxes are the ones `cell_boxes` makes over the new cells, in the same order.
    Making every rule's boxes again was a tenth of a one-rule edit's re-check at 5,000 rules
    in the language server, where only the edited rule's are new. Boxes are never changed
    once made (every reader copies), so kept ones are shared."""

    def __init__(self) -> None:
        self.cells: dict[str, tuple[Any, ...]] = {}  # the cells the kept boxes are over
        self.parts: dict[Node, list[Box]] = {}

    def boxes(self, node: Node, cells: Mapping[str, Sequence[Any]]) -> list[Box] | None:
        """`cell_boxes(node, values)` with `values` the representatives of `cells` (each
        variable's `measure.Cell`s, in order), reusing the parts of `node` (an `or`) kept
        from the last call."""
        values = {var: [c.value for c in found] for var, found in cells.items()}
        if node.kind != "or" or node.linear:
            return cell_boxes(node, values)
        moves: dict[str, _Move | None] = {}
        for var, found in cells.items():
            old = self.cells.get(var)
            if (
                old is not None
                and len(old) == len(found)
                and all(a.value == b.value for a, b in zip(old, found, strict=True))
            ):
                continue
            # Only a number's cells move (an enum's or bool's are its values, which the
            # domain, part of the key `KeptUnion`s are found by, fixes).
            if old and found and old[0].low is not None and found[0].low is not None:
                moves[var] = _Move(old, found)
            else:
                moves[var] = None
        parts: dict[Node, list[Box]] = {}
        out: list[Box] = []
        shared: dict[tuple[Node, bool], list[Box]] = {}  # the parts' common subformulas
        full = {var: (1 << len(found)) - 1 for var, found in values.items()}

        def masks(atom: Node) -> tuple[str, int]:
            assert atom.var is not None
            return atom.var, atom_mask(atom, values[atom.var])

        for child in node.children:
            made = self.parts.get(child)
            if made is not None and any(var in moves for var in child.vars):
                made = _moved(made, moves, child.vars)
            if made is None:
                made = boxes_of(child, masks, full, shared)  # `cell_boxes`, its masks made once
                if made is None:
                    self.cells, self.parts = {}, {}
                    return None
            parts[child] = made
            out.extend(made)
            if len(out) > MAX_BOXES:  # as `boxes_of` gives up on the whole disjunction
                self.cells, self.parts = {}, {}
                return None
        self.cells = {var: tuple(found) for var, found in cells.items()}
        self.parts = parts
        return _unique(out)


class _Move:
    """Masks over one variable's `old` cells read at its `new` cells' representatives."""

    def __init__(self, old: Sequence[Any], new: Sequence[Any]) -> None:
        # A cell's place among the old ones: (low, 0) for a closed low end, (low, 1) for an
        # open one, so a point cell sorts before the open cell that starts where it is.
        starts = [(c.low, 0 if c.low_closed else 1) for c in old]
        self.spread = [0] * len(old)  # old cell -> the new cells inside it
        for index, cell in enumerate(new):
            at = bisect_right(starts, (cell.value, 0)) - 1
            self.spread[max(at, 0)] |= 1 << index
        self.memo: dict[int, int] = {}

    def __call__(self, mask: int) -> int:
        hit = self.memo.get(mask)
        if hit is None:
            hit, rest, index = 0, mask, 0
            while rest:
                if rest & 1:
                    hit |= self.spread[index]
                rest >>= 1
                index += 1
            self.memo[mask] = hit
        return hit


def _moved(
    boxes: list[Box], moves: dict[str, _Move | None], read: frozenset[str]
) -> list[Box] | None:
    """`boxes` over the new cells (`KeptUnion`), or None when a variable it reads has no
    old cells to move from."""
    if any(moves.get(var, 0) is None for var in read if var in moves):
        return None
    out: list[Box] = []
    for box in boxes:
        if not any(var in moves for var in box):
            out.append(box)
            continue
        moved: Box = {}
        for var, mask in box.items():
            move = moves.get(var)
            moved[var] = move(mask) if move is not None else mask
        out.append(moved)
    return out


def boxes_of(
    node: Node,
    masks: Callable[[Node], tuple[str, int]],
    full: dict[str, int],
    memo: dict[tuple[Node, bool], list[Box]] | None = None,
) -> list[Box] | None:
    """`node` as a list of boxes whose union it is, or None when it has linear atoms or its
    box form is larger than `MAX_BOXES`. `masks(atom)` gives an atom's variable and the cells
    where it holds; `full[var]` is the mask of all of `var`'s cells."""
    if node.linear:
        return None
    if memo is None:
        memo = {}

    def walk(current: Node, positive: bool) -> list[Box]:
        key = (current, positive)
        hit = memo.get(key)
        if hit is not None:
            return hit
        kind = current.kind
        if kind == "true" or kind == "false":
            out: list[Box] = [{}] if (kind == "true") == positive else []
        elif kind == "not":
            out = walk(current.children[0], not positive)
        elif kind in ("cmp", "in"):
            var, mask = masks(current)
            if not positive:
                mask = full[var] & ~mask
            out = [] if mask == 0 else ([{}] if mask == full[var] else [{var: mask}])
        elif (kind == "and") == positive:  # a conjunction: meet the parts' boxes
            out = [{}]
            for child in current.children:
                part = walk(child, positive)
                out = _meet(out, part)
                if not out:
                    break
        else:  # a disjunction: the parts' boxes together
            out = []
            for child in current.children:
                out.extend(walk(child, positive))
                if len(out) > MAX_BOXES:
                    raise _TooBig
            out = _unique(out)
        memo[key] = out
        return out

    try:
        return walk(node, True)
    except _TooBig:
        return None
    finally:
        # `walk` refers to itself through its closure: rebound here, so it and its memo are
        # freed by reference counting (batch commands run without the cyclic collector).
        walk = None  # type: ignore[assignment]


def _meet(left: list[Box], right: list[Box]) -> list[Box]:
    if len(left) * len(right) > MAX_BOXES:
        raise _TooBig
    out: list[Box] = []
    for a in left:
        for b in right:
            box = dict(a)
            for var, mask in b.items():
                if var in box:
                    mask &= box[var]
                    if mask == 0:
                        break
                box[var] = mask
            else:
                out.append(box)
    return out if len(out) < 2 else _unique(out)


def _unique(boxes: list[Box]) -> list[Box]:
    seen: set[frozenset[tuple[str, int]]] = set()
    out: list[Box] = []
    for box in boxes:
        key = frozenset(box.items())  # a set: no sort per box (boxes are dicts by variable)
        if key not in seen:
            seen.add(key)
            out.append(box)
    return out


def atom_mask(atom: Node, values: Sequence[Any]) -> int:
    """The cells where a one-variable atom (`cmp` or `in`) holds, as a bitmask; `values` are
    the cells' representatives in order (ascending for a number)."""
    if atom.kind == "in":
        chosen = atom.values or frozenset()
        return sum(1 << index for index, value in enumerate(values) if value in chosen)
    bound = atom.const
    if atom.op == "<":
        return (1 << bisect_left(values, bound)) - 1
    if atom.op == "<=":
        return (1 << bisect_right(values, bound)) - 1
    at = bisect_left(values, bound)
    return 1 << at if at < len(values) and values[at] == bound else 0


NOTHING: list[int] = []
"""`first_outside`'s answer when the boxes cover every allowed cell."""


def uncovered(
    start: list[int], boxes: list[Box], order: Sequence[str], used: set[int] | None = None
) -> list[list[int]] | None:
    """What of the box `start` (a mask per variable of `order`) no box of `boxes` covers, as
    disjoint boxes: each box is cut out of every piece it meets, which leaves at most one piece
    per variable it constrains. None when the pieces grow past `MAX_PIECES`. `used`, if
    given, gets the index of each box that met a piece (those boxes alone cut what was cut)."""
    index = {var: i for i, var in enumerate(order)}
    pieces = [list(start)]
    for number, box in enumerate(boxes):
        # Each box's masks in `order`, made only for the boxes reached: a covered space is
        # often emptied by the first few hundred of thousands.
        row = sorted((index[v], m) for v, m in box.items())
        kept: list[list[int]] = []
        met = False
        for piece in pieces:
            if any(piece[i] & mask == 0 for i, mask in row):
                kept.append(piece)
                continue
            met = True
            current = piece
            for i, mask in row:
                outside = current[i] & ~mask
                if outside:
                    part = list(current)
                    part[i] = outside
                    kept.append(part)
                current = list(current)
                current[i] &= mask
        if met and used is not None:
            used.add(number)
        pieces = kept
        if len(pieces) > MAX_PIECES:
            return None
        if not pieces:
            break
    return pieces


def covers(region: list[Box], boxes: list[Box], full: dict[str, int]) -> bool | None:
    """Whether the union of `boxes` covers every cell of the union of `region` (boxes over
    the same cells), by cutting `boxes` out of each region box, the widest first; None when
    the uncovered pieces grow past `MAX_PIECES`. `full[var]` is the mask of all of `var`'s
    cells, for every variable a box constrains. The shadowed-rule question's box form (a rule
    against the negation of every higher rule) grew to thousands of boxes; here each higher
    rule is one cut."""
    return _covers(region, sorted(boxes, key=len), full, None)


def _covers(
    region: list[Box], boxes: list[Box], full: dict[str, int], used: set[int] | None
) -> bool | None:
    order = list(full)
    for box in region:
        # The region box's own masks as the start: a variable it does not name is free.
        start = [box.get(var, mask) for var, mask in full.items()]
        left = uncovered(start, boxes, order, used)
        if left is None:
            return None
        if left:
            return False
    return True


def covering_set(
    region: list[Box], owned: list[tuple[int, Box]], full: dict[str, int]
) -> tuple[int, ...] | None:
    """A minimal set of owners whose boxes together cover every cell of the union of `region`:
    `()` when all of `owned` (pairs of owner and box) do not cover it, None when the uncovered
    pieces grow past `MAX_PIECES` (or `region` is empty). The answer is a function of the
    boxes as regions (not of the cells they are drawn on) and of the owners' order, so every
    process names the same set.

    First the owners whose boxes met some piece while all boxes are cut out, widest first
    (those cover it: every cell was cut by one of them); then each of those, in ascending
    order, is dropped when the others still cover it (deletion, as `Analysis.minimal_core`
    shrinks an unsat core), so no owner named can be dropped. Where several minimal sets exist
    this need not be the one z3's unsat core shrinks to."""
    if not region:
        return None
    widest = sorted(owned, key=lambda item: len(item[1]))
    used: set[int] = set()
    covered = _covers(region, [box for _, box in widest], full, used)
    if not covered:
        return None if covered is None else ()
    kept = sorted({widest[number][0] for number in used})
    named = set(kept)
    needed = [item for item in widest if item[0] in named]  # every box of those owners
    for owner in list(kept):
        trial = [box for who, box in needed if who != owner and who in kept]
        if _covers(region, trial, full, None):  # None (too many pieces): kept, never wrong
            kept.remove(owner)
    return tuple(kept)


def narrow_boxes(boxes: list[Box], keep: dict[str, list[int]]) -> list[Box]:
    """`boxes` over fewer cells: each variable's cells renumbered to the positions `keep[var]`
    lists (ascending), the others dropped. A box left with no cell of some variable is
    dropped; a variable left with all its kept cells is no longer named, and a box that names
    none is the whole space: `[{}]` is then the answer (a theory covered everywhere has one
    early, and the rest need no narrowing)."""
    memo: dict[tuple[str, int], int] = {}  # boxes share their masks: each narrowed once

    def narrow(var: str, mask: int) -> int:
        hit = memo.get((var, mask))
        if hit is None:
            hit = 0
            for bit, position in enumerate(keep[var]):
                if mask >> position & 1:
                    hit |= 1 << bit
            memo[(var, mask)] = hit
        return hit

    full = {var: (1 << len(kept)) - 1 for var, kept in keep.items()}
    out: list[Box] = []
    for box in boxes:
        narrowed: Box = {}
        for var, mask in box.items():
            new = narrow(var, mask)
            if new == 0:
                break
            if new != full[var]:
                narrowed[var] = new
        else:
            if not narrowed:
                return [{}]
            out.append(narrowed)
    return out


def union_share(
    boxes: list[Box], order: Sequence[str], shares: dict[str, list[Fraction]]
) -> Fraction | None:
    """The exact share of the union of `boxes` (None past `MAX_PIECES`): one minus the share of
    what is left uncovered, cutting the largest boxes out first. `order` names every variable a
    box constrains; `shares[var][i]` is the share of `var`'s cell i."""
    if not boxes:
        return Fraction(0)
    if any(not box for box in boxes):
        return Fraction(1)
    position = {var: i for i, var in enumerate(order)}
    full = [(1 << len(shares[var])) - 1 for var in order]
    weight_cache: list[dict[int, Fraction]] = [{} for _ in order]

    def weight(i: int, mask: int) -> Fraction:
        hit = weight_cache[i].get(mask)
        if hit is None:
            cells = shares[order[i]]
            hit = sum((cells[c] for c in range(len(cells)) if mask >> c & 1), Fraction(0))
            weight_cache[i][mask] = hit
        return hit

    # The largest boxes first, by float size: the order changes the work, never the answer.
    float_cache: list[dict[int, float]] = [{} for _ in order]

    def rough(box: Box) -> float:
        total = 1.0
        for var, mask in box.items():
            i = position[var]
            hit = float_cache[i].get(mask)
            if hit is None:
                hit = float_cache[i][mask] = float(weight(i, mask))
            total *= hit
        return total

    left = uncovered(full, sorted(boxes, key=rough, reverse=True), order)
    if left is None:
        return None
    missing = Fraction(0)
    for piece in left:
        product = Fraction(1)
        for i, mask in enumerate(piece):
            if mask != full[i]:
                product *= weight(i, mask)
        missing += product
    return 1 - missing


def first_outside(
    boxes: list[Box], order: Sequence[str], allowed: dict[str, int]
) -> list[int] | None:
    """The first cell tuple, in `order` and each variable's cell order, within `allowed` and in
    none of `boxes`: per variable the index of its cell; `NOTHING` when the boxes cover all of
    `allowed`, None when the pieces grow too many."""
    # The uncovered cells do not depend on the order the boxes are cut out in, but the work
    # does: the boxes that constrain fewest variables (the largest) first empty the pieces
    # soonest.
    widest = sorted(boxes, key=len)
    pieces = uncovered([allowed[var] for var in order], widest, order)
    if pieces is None:
        return None
    if not pieces:
        return NOTHING
    return min([(mask & -mask).bit_length() - 1 for mask in piece] for piece in pieces)
