"""Front ends kept in pieces, and edited versions kept as their edits
(`pedrag.compiler.kept_front_ends`): what a later check reads back is the front end
`load_bytes` gives the same bytes, whichever rules were edited in turn, and a damaged or
orphaned entry changes nothing but time."""

from __future__ import annotations

import pickle
import random
from pathlib import Path

from pedrag.compiler.check_cache import Damage
from pedrag.compiler.kept_front_ends import MAX_EDITS, KeptFrontEnds
from pedrag.dsl.loader import LoadedFile, load_bytes
from pedrag.dsl.split_positions import SplitPositions, split
from pedrag.dsl.yaml_source import Positions
from tests.compiler.test_check_cache import RULES, _theory
from tests.dsl.test_incremental import _generated, _same

NAME = "g.yaml"


class Counted:
    """`load_bytes`, counting the whole front ends it runs."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, raw: bytes, shown: str) -> LoadedFile:
        self.calls += 1
        return load_bytes(raw, shown)


def _edited(text: str, rule: int, bound: int) -> str:
    """`text` with rule `rule`'s condition narrowed by `frustration >= 0.<bound>1`."""
    lines = text.split("\n")
    at = [i for i, line in enumerate(lines) if line.startswith("  - {id: r")][rule]
    start = lines[at].index('when: "') + len('when: "')
    lines[at] = lines[at][:start] + f"frustration >= 0.{bound:02d}1 and " + lines[at][start:]
    return "\n".join(lines)


def test_positions_split_and_read_back_are_the_positions() -> None:
    loaded = load_bytes(_generated(40).encode("utf-8"), NAME)
    assert loaded.positions is not None
    rest, rules, ranges, aliased = split(loaded.positions)
    assert len(rules) == len(ranges) == 40 and not any(aliased)
    read = SplitPositions(loaded.source, lambda: rest, lambda i: rules[i], ranges, aliased)
    assert read.values == loaded.positions.values
    assert read.keys == loaded.positions.keys
    assert read.scalars == loaded.positions.scalars
    kept = pickle.loads(pickle.dumps(read))  # a plain `Positions`: no reader pickled
    assert type(kept) is Positions and kept.values == loaded.positions.values


def test_edits_of_one_rule_after_another_are_kept_as_edits_and_read_back_whole(
    tmp_path: Path,
) -> None:
    text = _generated(60)
    load = Counted()
    fronts = KeptFrontEnds(tmp_path, Damage())
    for _ in range(2):  # seen, then kept whole
        fronts.load(text.encode("utf-8"), NAME, load)
    assert load.calls == 2
    folder = tmp_path / "fronts"
    assert len(list(folder.glob("*.front"))) == 1
    rng = random.Random(11)
    versions = []
    for step in range(MAX_EDITS + 3):
        # The same rule twice in a row (spliced into the kept front directly), else another.
        rule = 3 if step in (4, 5) else rng.randrange(60)
        text = _edited(text, rule, step)
        raw = text.encode("utf-8")
        made = KeptFrontEnds(tmp_path, Damage()).load(raw, NAME, load)  # a fresh process
        _same(made, load_bytes(raw, NAME))
        versions.append(raw)
    assert load.calls == 2  # every edit spliced, none loaded whole
    edits = list(folder.glob("*.edit"))
    assert len(edits) == MAX_EDITS + 2  # the ninth edit's version kept whole, then two more
    assert all(path.stat().st_size < 400 for path in edits)
    assert len(list(folder.glob("*.front"))) == 2
    for raw in versions:  # each version read back, in a fresh process, from what was kept
        fronts = KeptFrontEnds(tmp_path, Damage())
        _same(fronts.load(raw, NAME, load), load_bytes(raw, NAME))
    assert load.calls == 2


def test_a_damaged_or_orphaned_edit_is_loaded_again(tmp_path: Path) -> None:
    text = _generated(30)
    load = Counted()
    for _ in range(2):
        KeptFrontEnds(tmp_path, Damage()).load(text.encode("utf-8"), NAME, load)
    raw = _edited(text, 5, 1).encode("utf-8")
    KeptFrontEnds(tmp_path, Damage()).load(raw, NAME, load)
    (edit,) = (tmp_path / "fronts").glob("*.edit")
    body = bytearray(edit.read_bytes())
    body[-2] ^= 0x04
    edit.write_bytes(bytes(body))
    damage = Damage()
    _same(KeptFrontEnds(tmp_path, damage).load(raw, NAME, load), load_bytes(raw, NAME))
    assert (damage.dropped, load.calls) == (1, 3)
    assert not edit.exists()
    # Kept as an edit again, then its front forgotten (evicted): loaded afresh, nothing lost.
    other = _edited(text, 6, 2).encode("utf-8")
    for _ in range(2):
        KeptFrontEnds(tmp_path, Damage()).load(text.encode("utf-8"), NAME, load)
    KeptFrontEnds(tmp_path, Damage()).load(other, NAME, load)
    calls = load.calls
    for front in (tmp_path / "fronts").glob("*.front"):
        front.unlink()
    damage = Damage()
    _same(KeptFrontEnds(tmp_path, damage).load(other, NAME, load), load_bytes(other, NAME))
    assert (damage.dropped, load.calls) == (0, calls + 1)


def test_an_edit_of_a_scalar_an_alias_reads_elsewhere_is_loaded_whole(tmp_path: Path) -> None:
    text = _theory(RULES).replace('when: "frustration >= 0.6"', 'when: &tense "frustration >= 0.6"')
    text = text.replace('when: "frustration + hints > 3"', "when: *tense")
    load = Counted()
    for _ in range(2):
        KeptFrontEnds(tmp_path, Damage()).load(text.encode("utf-8"), NAME, load)
    raw = text.replace('"frustration >= 0.6"', '"frustration >= 0.7"').encode("utf-8")
    made = KeptFrontEnds(tmp_path, Damage()).load(raw, NAME, load)
    fresh = load_bytes(raw, NAME)
    assert fresh.theory is not None and fresh.theory.rules[6].when.text == "frustration >= 0.7"
    _same(made, fresh)
    assert load.calls == 3  # declined: both rules read the edited scalar


def test_nothing_is_kept_without_a_folder() -> None:
    load = Counted()
    fronts = KeptFrontEnds(None, Damage())
    raw = _generated(5).encode("utf-8")
    for _ in range(3):
        fronts.load(raw, NAME, load)
        fronts.keep(raw, NAME, load)
    assert load.calls == 3
