"""Front ends kept by content, in pieces, and an edited file's kept as its edit.

Compiler stage helper (the check cache's, for `driver`). Takes a file's bytes, the name it
is shown under and the front end's code (`driver.front_end_code`); gives its `LoadedFile`,
read back from `fronts/` beside the check cache's shards when a check kept it, spliced from
the version last kept under that name (`pedrag.dsl.incremental`) when only one rule's value
changed, or loaded afresh. Why: a 5,000-rule file's front end, kept as one pickle
(`LoadedFiles`), took 0.1 s to read back whole before each edit's splice and 0.17 s to
write again after it, though the edit touched one rule.

Two kinds of entry, each checksummed as a shard is (a damaged one is dropped, counted and
rebuilt; `check_cache`):

- **`<digest>.front`**: a whole front end in pieces: the resolved theory, validated model,
  source and diagnostics in one pickle, and the positions split per rule
  (`pedrag.dsl.split_positions`), each piece unmarshalled only when asked for. Written the
  second time the same bytes are checked, as `LoadedFiles` does (0.3 s at 5,000 rules: a
  content checked once is only marked seen).
- **`<digest>.edit`**: a version made by editing a kept front: that front's digest and the
  text edits from it, in order, a few hundred bytes. Written at the edit's first check
  (once the splice succeeded); read back by reading the front and splicing each edit into
  it again. A new edit is spliced into the front directly where it can (the same rule edited
  again: one edit), else after the version's own edits, up to `MAX_EDITS`; past that, the
  version is kept whole at once (the next edit's splice must start from a kept version).

The `.latest` pointer of a name names the last entry kept or read for it, as in
`LoadedFiles`: the next version's splice starts there.
"""

from __future__ import annotations

import marshal
import pickle
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from pedrag.compiler.check_cache import (
    _DIGEST,
    _MAGIC,
    LOADED_BYTES,
    LOADED_KEPT,
    MISSING,
    SEEN_KEPT,
    Damage,
    LoadedFiles,
    _checksum,
    _safe_read,
    _write_bytes_atomically,
)
from pedrag.dsl.incremental import changed_range, splice_condition_edit
from pedrag.dsl.loader import LoadedFile
from pedrag.dsl.split_positions import SplitPositions, split

MAX_EDITS = 8
"""Edits an `.edit` entry holds: reading it back splices each again (a few ms each)."""

Edit = tuple[int, int, str]
"""A text edit: the previous text's [start, end) replaced by the string."""


def _edited(text: str, edits: list[Edit]) -> str:
    for start, end, written in edits:
        text = text[:start] + written + text[end:]
    return text


def _edit(old: str, new: str) -> Edit:
    start, end, new_end = changed_range(old, new)
    return start, end, new[start:new_end]


class KeptFrontEnds(LoadedFiles):
    """Front ends in `fronts/` (see the module docstring)."""

    def __init__(self, folder: Path | None, damage: Damage) -> None:
        super().__init__(folder, damage, "fronts")
        # Files `load` left without an entry (new bytes only marked seen, no cache folder, a
        # write that failed): while there are none, the check's report need not wait for a
        # second check to keep the front ends (`pedrag.commands.check._kept_report`).
        self.unkept = 0

    def load(  # type: ignore[override]
        self, raw: bytes, shown: str, load: Callable[[bytes, str], LoadedFile], code: str = ""
    ) -> LoadedFile:
        """`load(raw, shown)`, or the front end a check of the same bytes and name kept, or
        one spliced from the last kept under that name."""
        if self.folder is None:
            self.unkept += 1
            return load(raw, shown)
        return self._load(raw, shown, load, code)

    def _load(
        self, raw: bytes, shown: str, load: Callable[[bytes, str], LoadedFile], code: str
    ) -> LoadedFile:
        assert self.folder is not None
        digest, latest = self._names(raw, shown, code)
        found = self._entry(digest)
        named = self._pointed(latest)
        if found is not MISSING:
            if named != digest:
                self._point(latest, digest)
            return found  # type: ignore[no-any-return]
        spliced = None
        if named is not None and named != digest:
            spliced = self._spliced(named, raw)
        try:
            if spliced is not None:
                if spliced[1] is not None:
                    self._write_edit(digest, spliced[1])
                else:  # too many edits to splice again: kept whole, edits start again
                    self._write_front(digest, spliced[0])
                self._point(latest, digest)
                return spliced[0]
            result = load(raw, shown)
            seen = self.folder / f"{digest}.seen"
            if seen.exists():
                self._write_front(digest, result)
                self._point(latest, digest)
                seen.unlink(missing_ok=True)
            else:
                self.unkept += 1
                self.folder.mkdir(parents=True, exist_ok=True)
                seen.touch()
                self._forget_oldest("*.seen", SEEN_KEPT)
            return result
        except (OSError, RecursionError, pickle.PicklingError, ValueError):
            self.unkept += 1
            return spliced[0] if spliced is not None else load(raw, shown)

    def keep(  # type: ignore[override]
        self, raw: bytes, shown: str, load: Callable[[bytes, str], LoadedFile], code: str = ""
    ) -> None:
        """`load`'s result kept as `load` keeps it, without reading back an entry kept
        already (the name's `.latest` pointer then names it)."""
        if self.folder is None:
            return
        digest, latest = self._names(raw, shown, code)
        if any((self.folder / f"{digest}{kind}").exists() for kind in (".front", ".edit")):
            if self._pointed(latest) != digest:
                self._point(latest, digest)
            return
        self.load(raw, shown, load, code)

    # Reading

    def _body(self, path: Path) -> bytes | None:
        """A checksummed entry's body, or None (none there; damaged: counted, removed)."""
        data = _safe_read(path)
        if not data:
            return None
        start = len(_MAGIC) + _DIGEST
        if data.startswith(_MAGIC) and _checksum(data[start:]) == data[len(_MAGIC) : start]:
            return data[start:]
        self.damage.dropped += 1
        path.unlink(missing_ok=True)
        return None

    def _entry(self, digest: str) -> Any:
        """The front end kept under `digest`, as a front or an edit, or `MISSING`."""
        found = self._front(digest)
        if found is not MISSING:
            return found
        record = self._edit_record(digest)
        if record is None:
            return MISSING
        base, edits = record
        result = self._replayed(base, edits)
        return MISSING if result is None else result

    def _front(self, digest: str) -> Any:
        """A `.front` entry read back (its positions left in pieces), or `MISSING`."""
        assert self.folder is not None
        path = self.folder / f"{digest}.front"
        body = self._body(path)
        if body is None:
            return MISSING
        try:
            core, rest, rules, ranges, aliased = marshal.loads(body)
            loaded: LoadedFile = pickle.loads(core)
        except Exception:  # another version's classes: load it again
            path.unlink(missing_ok=True)
            return MISSING
        if rest is not None:
            loaded.positions = SplitPositions(
                loaded.source,
                lambda: marshal.loads(rest),
                lambda index: marshal.loads(rules[index]),
                ranges,
                aliased,
            )
        return loaded

    def _edit_record(self, digest: str) -> tuple[str, list[Edit]] | None:
        assert self.folder is not None
        path = self.folder / f"{digest}.edit"
        body = self._body(path)
        if body is None:
            return None
        try:
            base, edits = marshal.loads(body)
        except Exception:
            path.unlink(missing_ok=True)
            return None
        return base, edits

    def _replayed(self, base: str, edits: list[Edit]) -> LoadedFile | None:
        """Front `base` with `edits` spliced into it in turn, or None (the front is gone,
        or an edit no longer splices: the entry is then of no use)."""
        found = self._front(base)
        if found is MISSING:
            return None
        loaded: LoadedFile | None = found
        for edit in edits:
            assert loaded is not None
            text = _edited(loaded.source.text, [edit])
            loaded = splice_condition_edit(loaded, text.encode("utf-8"))
            if loaded is None:
                return None
        return loaded

    def _spliced(
        self, named: str, raw: bytes
    ) -> tuple[LoadedFile, tuple[str, list[Edit]] | None] | None:
        """`raw`'s front end spliced from the entry `named`, and the `.edit` record to keep
        it under (None: too many edits, keep it as a new content), or None."""
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            return None
        record = self._edit_record(named)
        base, edits = record if record is not None else (named, [])
        front = self._front(base)
        if front is MISSING:
            return None
        old = front.source.text
        spliced = splice_condition_edit(front, raw)  # declining leaves `front` as it was
        if spliced is not None:
            return spliced, (base, [_edit(old, text)])
        if not edits:
            return None
        previous = front
        for edit in edits:
            previous = splice_condition_edit(
                previous, _edited(previous.source.text, [edit]).encode("utf-8")
            )
            if previous is None:
                return None
        old = previous.source.text
        spliced = splice_condition_edit(previous, raw)
        if spliced is None:
            return None
        return spliced, (base, [*edits, _edit(old, text)]) if len(edits) < MAX_EDITS else None

    # Writing

    def _write_front(self, digest: str, loaded: LoadedFile) -> None:
        """`loaded` as a `.front` entry, and the oldest beyond the budget forgotten."""
        assert self.folder is not None
        positions = loaded.positions
        core = pickle.dumps(replace(loaded, positions=None), protocol=pickle.HIGHEST_PROTOCOL)
        if positions is None:
            body = marshal.dumps((core, None, [], [], []))
        else:
            rest, rules, ranges, aliased = split(positions)
            body = marshal.dumps(
                (
                    core,
                    marshal.dumps(rest),
                    [marshal.dumps(piece) for piece in rules],
                    ranges,
                    aliased,
                )
            )
        _write_bytes_atomically(self.folder / f"{digest}.front", _MAGIC + _checksum(body) + body)
        self._forget_oldest("*.front", LOADED_KEPT, LOADED_BYTES)

    def _write_edit(self, digest: str, record: tuple[str, list[Edit]]) -> None:
        assert self.folder is not None
        body = marshal.dumps(record)
        _write_bytes_atomically(self.folder / f"{digest}.edit", _MAGIC + _checksum(body) + body)
        self._forget_oldest("*.edit", SEEN_KEPT)
