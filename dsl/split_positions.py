"""A file's positions in pieces: the part outside `rules:` and one piece per rule, each read
when first asked for, with the offsets of the edits made since moved when it is read.

Front end stage helper (for `pedrag.dsl.incremental` and the check cache's kept front ends,
`pedrag.compiler.kept_front_ends`). Takes a `Positions` (to split it for keeping) or the
kept pieces (to read them back); gives a `Positions` that reads only what is asked of it.
Why: a 5,000-rule file's positions are 100,000 offsets (1.9 MB of pickle). A one-rule
edit's splice needs one rule's, and a check none unless a finding points at an `ignore:`
entry; reading them whole, and moving every offset after the edit, made a re-check linear
in the rules the edit did not touch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from pedrag.dsl.spans import SourceText
from pedrag.dsl.yaml_source import Path, Positions

Piece = tuple[
    dict[Path, tuple[int, int]], dict[Path, tuple[int, int]], dict[Path, tuple[int, int, str]]
]
"""Some paths' value offsets, key offsets and scalar offsets and values (`Positions`' three)."""

Move = tuple[int, int]
"""An edit's effect on offsets: every offset at or after `at` moves by `delta`."""


def _rule_of(path: Path) -> int | None:
    """The rule a path is inside (`("rules", 3, "when")` -> 3), or None."""
    if len(path) >= 2 and path[0] == "rules" and isinstance(path[1], int):
        return path[1]
    return None


def split(positions: Positions) -> tuple[Piece, list[Piece], list[tuple[int, int]], list[bool]]:
    """(The part outside the rules, each rule's piece, each rule's value offsets, whether
    a value of the rule has its offsets in common with another path: an alias reads that
    scalar elsewhere, so an edit there is not the rule's alone)."""
    count = sum(1 for p in positions.values if len(p) == 2 and _rule_of(p) is not None)
    rest: Piece = ({}, {}, {})
    rules: list[Piece] = [({}, {}, {}) for _ in range(count)]
    tables: tuple[dict[Path, Any], ...] = (positions.values, positions.keys, positions.scalars)
    for table, entries in enumerate(tables):
        # `_rule_of` written out: a 5,000-rule file has 100,000 paths.
        into: list[dict[Path, Any]] = [piece[table] for piece in rules]
        outside: dict[Path, Any] = rest[table]
        for path, offsets in entries.items():
            index = path[1] if len(path) >= 2 and path[0] == "rules" else None
            if isinstance(index, int) and index < count:
                into[index][path] = offsets
            else:
                outside[path] = offsets
    uses = Counter(positions.values.values())
    ranges = [positions.values[("rules", index)] for index in range(count)]
    aliased = [any(uses[offsets] > 1 for offsets in piece[0].values()) for piece in rules]
    return rest, rules, ranges, aliased


def _moved(piece: Piece, moves: Sequence[Move], overrides: dict[Path, str]) -> Piece:
    """`piece` with each move applied in turn (as `incremental` moves offsets) and the
    scalars an edit gave a new value (`piece` itself is left as it is)."""
    values, keys, scalars = piece
    for at, delta in moves:
        values = {
            p: (a + delta if a >= at else a, b + delta if b >= at else b)
            for p, (a, b) in values.items()
        }
        keys = {
            p: (a + delta if a >= at else a, b + delta if b >= at else b)
            for p, (a, b) in keys.items()
        }
        scalars = {
            p: (a + delta if a >= at else a, b + delta if b >= at else b, v)
            for p, (a, b, v) in scalars.items()
        }
    changed = [path for path in overrides if path in scalars]
    if changed:
        scalars = dict(scalars)
        for path in changed:
            a, b, _ = scalars[path]
            scalars[path] = (a, b, overrides[path])
    return values, keys, scalars


class _Step:
    """One edit's move in the chain of versions `SplitPositions.moved` makes: the versions
    of one chain share their pieces' moved copies (`SplitPositions._piece`)."""

    __slots__ = ("parent", "move", "depth")

    def __init__(self, parent: _Step | None, move: Move) -> None:
        self.parent, self.move = parent, move
        self.depth: int = parent.depth + 1 if parent is not None else 1


class SplitPositions(Positions):
    """`Positions` read piece by piece (see the module docstring). `values`, `keys` and
    `scalars` read every piece; `rule_positions(index)` one rule's. Pickled, it is a plain
    `Positions` (the pieces' readers are not kept).

    A piece read is kept moved to this version's text, for the versions made from this one
    by later edits (`moved`): each moves it by the edits since, not by all of them (the
    language server splices every keystroke's edit into the last version, so after a day's
    edits a rule's piece would be moved by each of them again)."""

    def __init__(
        self,
        source: SourceText,
        rest: Callable[[], Piece],
        rule: Callable[[int], Piece],
        ranges: list[tuple[int, int]],
        aliased: Sequence[bool],
        moves: tuple[Move, ...] = (),
        overrides: dict[Path, str] | None = None,
        *,
        _tip: _Step | None = None,
        _pieces: dict[int | None, tuple[_Step | None, Piece]] | None = None,
    ) -> None:
        self.source = source
        self._rest, self._rule = rest, rule
        self.ranges = ranges  # each rule's value offsets, in this text
        self.aliased = aliased
        self.moves = moves
        self.overrides = overrides or {}
        self._whole: Piece | None = None
        if _tip is None:
            for move in moves:
                _tip = _Step(_tip, move)
        self._tip = _tip
        # Each piece read (None: the part outside the rules), moved to the version whose
        # last step is kept beside it; shared by the versions of one chain.
        self._pieces = _pieces if _pieces is not None else {}

    @property
    def values(self) -> dict[Path, tuple[int, int]]:  # type: ignore[override]
        return self._read()[0]

    @property
    def keys(self) -> dict[Path, tuple[int, int]]:  # type: ignore[override]
        return self._read()[1]

    @property
    def scalars(self) -> dict[Path, tuple[int, int, str]]:  # type: ignore[override]
        return self._read()[2]

    def _piece(self, index: int | None) -> Piece:
        """Piece `index` (None: the rest) moved to this text, overrides not applied: from
        the kept copy of an earlier version of this chain, by the steps since, or else read
        and moved by every step."""
        kept = self._pieces.get(index)
        since: list[Move] = []
        step = self._tip
        if kept is not None:
            at = kept[0]
            floor = at.depth if at is not None else 0
            while step is not None and step is not at and step.depth > floor:
                since.append(step.move)
                step = step.parent
            if step is at:
                piece = kept[1]
            else:  # kept by a version of another branch (two edits of one version)
                kept = None
        if kept is None:
            since, step = [], self._tip
            while step is not None:
                since.append(step.move)
                step = step.parent
            piece = self._rest() if index is None else self._rule(index)
        if since:
            piece = _moved(piece, since[::-1], {})
            self._pieces[index] = (self._tip, piece)
        elif kept is None:
            self._pieces[index] = (self._tip, piece)
        return piece

    def _read(self) -> Piece:
        if self._whole is None:
            first = self._piece(None)
            values, keys, scalars = dict(first[0]), dict(first[1]), dict(first[2])
            for index in range(len(self.ranges)):
                more = self._piece(index)
                values.update(more[0])
                keys.update(more[1])
                scalars.update(more[2])
            self._whole = _moved((values, keys, scalars), (), self.overrides)
        return self._whole

    def rule_positions(self, index: int) -> Positions:
        """Rule `index`'s positions alone, in this text (a path outside it falls back to
        the document's start, `Positions.span`)."""
        values, keys, scalars = _moved(self._piece(index), (), self.overrides)
        return Positions(self.source, dict(values), dict(keys), dict(scalars))

    def rules_around(self, start: int, end: int) -> list[int]:
        """The rules whose value holds the text in [start, end)."""
        return [i for i, (a, b) in enumerate(self.ranges) if a <= start and end <= b]

    def moved(
        self, source: SourceText, at: int, delta: int, overrides: dict[Path, str]
    ) -> SplitPositions:
        """These positions in `source`, a text that is this one's with `delta` characters
        more (fewer) at `at`, and `overrides` scalars' new values. Once these were read
        whole (a check that reads an `ignore:` entry's span reads them on every keystroke),
        the new version's whole is this one's moved by the edit: reading each piece again,
        moved, would cost more than the three dictionaries."""
        made = SplitPositions(
            source,
            self._rest,
            self._rule,
            [(a + delta if a >= at else a, b + delta if b >= at else b) for a, b in self.ranges],
            self.aliased,
            (*self.moves, (at, delta)),
            {**self.overrides, **overrides},
            _tip=_Step(self._tip, (at, delta)),
            _pieces=self._pieces,
        )
        if self._whole is not None:
            made._whole = _moved(self._whole, ((at, delta),), overrides)
        return made

    def __reduce__(self) -> tuple[type[Positions], tuple[SourceText, dict, dict, dict]]:  # type: ignore[type-arg]
        return Positions, (self.source, self.values, self.keys, self.scalars)


def in_memory(positions: Positions) -> SplitPositions:
    """`positions` split, its pieces held in memory: the language server's whole load, so
    each one-rule edit spliced into it moves the edited rule's offsets, not all 100,000 of a
    5,000-rule file (three dictionaries rewritten per keystroke)."""
    rest, rules, ranges, aliased = split(positions)
    return SplitPositions(positions.source, lambda: rest, rules.__getitem__, ranges, aliased)
