"""A chain of positions versions, one per edit (`SplitPositions.moved`, as the language
server splices each keystroke into the last version): every version reads the positions
that moving every offset by each edit in turn gives, whichever pieces were read in which
version, two versions made from one included; and each piece is read from its reader once
along the chain, not moved again by every earlier edit at each keystroke."""

from __future__ import annotations

import random
from collections import Counter

from pedrag.dsl.loader import load_bytes
from pedrag.dsl.split_positions import Piece, SplitPositions, in_memory, split
from pedrag.dsl.yaml_source import Path, Positions
from tests.dsl.test_incremental import _generated


def _moved_whole(
    positions: Positions, at: int, delta: int, value: tuple[Path, str] | None
) -> Positions:
    """The oracle: every offset at or after `at` moved by `delta`, one scalar's value set."""

    def move(offset: int) -> int:
        return offset + delta if offset >= at else offset

    scalars = {p: (move(a), move(b), v) for p, (a, b, v) in positions.scalars.items()}
    if value is not None and value[0] in scalars:
        a, b, _ = scalars[value[0]]
        scalars[value[0]] = (a, b, value[1])
    return Positions(
        positions.source,
        {p: (move(a), move(b)) for p, (a, b) in positions.values.items()},
        {p: (move(a), move(b)) for p, (a, b) in positions.keys.items()},
        scalars,
    )


def _same(read: Positions, expected: Positions, rules: int, rng: random.Random) -> None:
    """`read` gives `expected`: one rule's alone, or all of them."""
    if rng.random() < 0.8:
        index = rng.randrange(rules)
        alone = read.rule_positions(index)  # type: ignore[attr-defined]
        assert alone.values == {
            p: v for p, v in expected.values.items() if p[:2] == ("rules", index)
        }
        assert alone.scalars == {
            p: v for p, v in expected.scalars.items() if p[:2] == ("rules", index)
        }
    else:
        assert read.values == expected.values
        assert read.keys == expected.keys
        assert read.scalars == expected.scalars


def test_every_version_of_a_chain_reads_the_positions_each_edit_moved() -> None:
    loaded = load_bytes(_generated(40).encode("utf-8"), "g.yaml")
    assert loaded.positions is not None
    rng = random.Random(5)
    start = in_memory(loaded.positions)
    versions: list[tuple[SplitPositions, Positions]] = [(start, loaded.positions)]
    length = len(loaded.positions.source.text)
    for _ in range(120):
        # Mostly the last version (a keystroke), sometimes an older one (another branch).
        base, expected = versions[-1] if rng.random() < 0.85 else rng.choice(versions)
        at, delta = rng.randrange(length), rng.randint(-3, 6)
        path = ("rules", rng.randrange(40), "when")
        value = (path, f"v{rng.randrange(1000)}") if rng.random() < 0.5 else None
        made = base.moved(base.source, at, delta, dict([value]) if value else {})
        versions.append((made, _moved_whole(expected, at, delta, value)))
        for read, oracle in [versions[-1], rng.choice(versions)]:
            _same(read, oracle, 40, rng)


def test_a_chain_reads_each_piece_from_its_reader_once() -> None:
    loaded = load_bytes(_generated(30).encode("utf-8"), "g.yaml")
    assert loaded.positions is not None
    rest, rules, ranges, aliased = split(loaded.positions)
    reads: Counter[int] = Counter()

    def rule(index: int) -> Piece:
        reads[index] += 1
        return rules[index]

    version = SplitPositions(loaded.source, lambda: rest, rule, ranges, aliased)
    for step in range(50):
        version = version.moved(version.source, ranges[-1][1] + step, 1, {})
        version.rule_positions(step % 3)
    assert reads == Counter({0: 1, 1: 1, 2: 1})
