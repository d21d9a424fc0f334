"""The on-disk check cache: the semantic analysis' answers, by content, across processes.

Compiler stage helper. Takes the answers `Analysis` computes (a rule's status, whether two
rules overlap or one implies the other, a same-action group's redundant rules, a shadow, an
invariant violation),
each under a key made only of content (condition text, rung, invariant text); gives them back
to a later `pedrag check` of the same theory semantics, so re-checking after a one-rule edit
asks z3 only about that rule and its pairs.

- **Content-addressed.** Answers live in one shard per *semantics*: the sha256 of pedrag's
  version, this cache's format, the versions of the libraries that decide answers (z3,
  PyYAML, pydantic, lark: `_versions`) and the theory's metric domains, ceiling and selection
  (what every answer depends on besides its own key). An edit to any of those starts a new shard;
  an edit to a rule only adds keys. Nothing is keyed by file name or path.
- **Plain values only.** An answer is stored when it is made of statuses, witnesses, cores,
  points and numbers (never formulas, whose identity matters in memory); `unknown` answers
  are never stored, nor any answer computed while a question was left undecided
  (`Analysis.unknowns`), so a timeout is asked again.
- **Where.** `$PEDRAG_CACHE_DIR`, else the platform's user cache folder (platformdirs:
  `~/.cache/pedrag` on Linux, `~/Library/Caches/pedrag` on macOS, `%LOCALAPPDATA%` on
  Windows), under `check/`; a relative setting is taken from the project's root, once per
  process (`cache_folder.default_folder`). `pedrag check --no-cache` neither reads nor writes it.
- **Parsed conditions** live in one more shard, keyed by the condition grammar: condition
  text -> AST, shared by every file checked (`ParsedShard`), so the front end of a re-check
  parses only the conditions an edit changed.
- **Whole front ends** of files checked twice with the same bytes, in `fronts/`, keyed by
  the bytes, the name shown and the front end's code, their positions in pieces per rule,
  and a one-rule edit's version as the edit (`pedrag.compiler.kept_front_ends`), so a
  re-check of an unchanged file neither composes its YAML nor validates nor resolves it, and
  an edit's check reads the positions of the edited rule alone and writes a few hundred
  bytes.
- **Whole semantic findings** of a theory checked twice with the same text, in `findings/`,
  keyed by the text, the name shown, the compiler's code and the checks run
  (`CheckCache.kept_findings`), so a re-check of an unchanged file builds no analysis.
- **Whole reports** of `pedrag check` runs, kept at the first check of their inputs, in
  `reports/`, keyed by everything a report is made from (`pedrag.compiler.kept_report`), so
  a re-check of unchanged files prints the kept text without loading the front end.
- **The condition grammar's parser tables** (lark's cache, verified against the grammar's
  hash), so parsing the one condition an edit changed does not rebuild them.
- **Memos** shared by every file: the material check's findings (the answer-reveal detector
  over a curriculum's hints and examples, keyed by each exercise's material and answer key)
  and the set-level checks' graph answers (cycles, reachability, a switch cycle's z3 answer,
  keyed by the graph), each in a shard of its own (`CheckCache.memo`).
- **Safe to lose.** A shard that cannot be read (truncated, another version's, a full disk)
  is ignored and rewritten; a shard is written to a temporary file renamed into place, so a
  reader never sees half a shard, and an edit's new answers are appended to the shard's
  journal (`Shard`). Folding the journal in keeps the answers that check used (and the
  answers a group answer it used was made from), so a shard does not grow with every edit.
- **Cannot lie.** Every shard file and every journal record carries a BLAKE2b checksum of its
  bytes (the journal's of its length too), verified before anything is unmarshalled or
  unpickled: a damaged shard or record (a flipped bit, a truncation) is dropped, its answers
  are computed again, and the count of dropped records is reported (`CheckCache.dropped`,
  `pedrag check --statistics`). A journal is read up to its first bad record.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import pickle
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pedrag.compiler.cache_folder import ENV_CACHE_DIR as ENV_CACHE_DIR
from pedrag.compiler.cache_folder import default_folder as default_folder

FORMAT = 5  # bump when what an answer means or how it is stored changes
PARSED_MAX = 200_000  # remembered condition texts, across every file checked
PERSISTED = frozenset(
    {
        "rule",
        "pair",
        "implies",
        "redundant",
        "shadow",
        "invariant",
        "box witness",
        "conflicts",
        "invariant group",
        "reachable",
        "coverage",
        "conflict finding",
    }
)


def _versions() -> tuple[Any, ...]:
    """What every key in the cache includes: pedrag's version, this cache's format, Python's
    (marshal's format is Python's own) and the libraries that decide answers
    (`code_version.library_versions`: a new z3 may decide otherwise, a new pydantic words
    its errors otherwise)."""
    from pedrag import __version__
    from pedrag.compiler.code_version import library_versions

    return (__version__, FORMAT, sys.version_info[:2], library_versions())


MEMBERS = "members "
"""The key prefix of a group answer's member list (`Shard.keep_members`)."""

JOURNAL_SHARE = 4
"""A shard's journal is folded into it once it holds a quarter as many answers as the shard."""


class Shard:
    """The answers for one theory semantics: read once, written back once.

    On disk a shard is a `marshal`-ed dict of key -> pickled answer (`<digest>.pickle`) and a
    journal beside it (`<digest>.journal`) of length-prefixed records of the same form: each
    check that adds answers appends one record of only what it added. Rewriting a 5,000-rule
    theory's answers and parsed conditions after an edit cost 0.07 s; appending the edit's
    few answers costs nothing measurable. An answer is unpickled only when a check asks for
    it: a re-check reads every rule's status but few of the 7,000 implications kept for the
    groups it does not search again. The journal is folded into the shard (keeping only what
    that check used) when it has grown to a quarter of the shard, or most stored answers went
    unused. A torn last record (a process killed mid-write) is ignored, as is a shard that
    cannot be read."""

    keeps_unused = False  # an answer shard keeps what its last check used

    def __init__(self, path: Path | None, damage: Damage | None = None) -> None:
        self.path = path
        self.used: dict[str, Any] = {}
        self.added: dict[str, Any] = {}
        self.touched: set[str] = set()  # kept through a fold unread (`keep_members`)
        self._raw: dict[str, bytes] | None = None if path is not None else {}
        self._journaled = 0
        self._repair = False  # something damaged was dropped: rewrite the shard on save
        self.damage = damage if damage is not None else Damage()

    @property
    def raw(self) -> dict[str, bytes]:
        """What the shard held when this check began (pickled), read on first use: a check
        that never asks (every condition found resolved) never reads the parsed conditions."""
        if self._raw is None:
            assert self.path is not None
            body = _safe_read(self.path)
            self._raw = _read_shard(body)
            if self._raw is None:
                self._raw = {}
                if body:  # a file there that fails its checksum or format: damaged
                    self.damage.dropped += 1
                    self._repair = True
            records, dropped = _read_journal(_journal(self.path))
            self.damage.dropped += dropped
            self._repair |= bool(dropped)
            for record in records:
                self._raw.update(record)
                self._journaled += len(record)
        return self._raw

    @property
    def journaled(self) -> int:
        self.raw  # noqa: B018 (reading the shard counts its journal)
        return self._journaled

    def get(self, key: str) -> Any:
        """The stored answer, or `MISSING`."""
        if key in self.used:
            return self.used[key]
        body = self.raw.get(key)
        if body is None:
            return MISSING
        try:
            value = pickle.loads(body)
        except Exception:  # another version's class: ask again
            return MISSING
        self.used[key] = value
        return value

    def put(self, key: str, value: Any) -> None:
        self.used[key] = value
        self.added[key] = value

    def put_members(self, key: str, members: list[str]) -> None:
        """Record the answers the group answer `key` was computed from (`keep_members`)."""
        self.put(MEMBERS + key, tuple(members))

    def keep_members(self, key: str) -> None:
        """Keep, through the next fold, the answers the group answer `key` was computed from,
        without reading them. A check that finds a group's answer never asks its pairs, and a
        fold keeps only what the check used: without this, the first re-check dropped every
        pair and implication, and an edit to one rule then re-asked its whole group's (218
        pairs of a 5,000-rule theory's conflict group), not only its own."""
        members = self.get(MEMBERS + key)
        if members is MISSING:
            return
        # As sets, in C: the 29 group answers a 5,000-rule re-check reads name 6,800 members.
        # `difference(dict)` looks each member up in `used`; `- used.keys()` made a set of the
        # members and removed every used key from it, 6,000 per group at 5,000 rules (the
        # 29 calls: 21 -> 10 ms).
        self.touched |= (self.raw.keys() & members).difference(self.used)

    def _pickled(self, key: str, value: Any) -> bytes:
        if key not in self.added and key in self.raw:
            return self.raw[key]
        return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)

    def kept(self) -> dict[str, bytes]:
        """What a folded shard keeps: the answers this check used (and, for a memo shared by
        every file, what earlier checks stored too, up to `PARSED_MAX`, the least recently
        used first to go: checking one file must not evict another's)."""
        used = {key: self._pickled(key, value) for key, value in self.used.items()}
        used.update((key, self.raw[key]) for key in self.touched if key not in used)
        if not self.keeps_unused:
            return used
        merged = {k: v for k, v in self.raw.items() if k not in used}
        merged.update(used)
        return dict(list(merged.items())[-PARSED_MAX:])

    def save(self) -> None:
        """Append what this check added to the journal, or fold the journal in (see above)."""
        if self.path is None or (self._raw is None and not self.added):
            return  # never read and nothing to add
        if self._repair:
            self.added.clear()  # the fold below writes what this check used, answers included
        grown = (self.journaled + len(self.added)) * JOURNAL_SHARE > len(self.raw)
        keeping = len(self.used) + len(self.touched)
        unused = not self.keeps_unused and keeping * 2 < len(self.raw)
        try:
            if self.added and not grown:
                record = {key: self._pickled(key, value) for key, value in self.added.items()}
                _append(_journal(self.path), record)
                self.raw.update(record)
                self._journaled += len(record)
            elif grown or unused or self._repair:
                kept = self.kept()
                _write_atomically(self.path, kept)
                _journal(self.path).unlink(missing_ok=True)
                self._raw, self._journaled, self._repair = kept, 0, False
        except OSError:
            pass  # a cache that cannot be written costs time, never a result
        self.added = {}


def _journal(path: Path) -> Path:
    return path.with_suffix(".journal")


def _safe_read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


class Damage:
    """How many damaged shards and journal records a check dropped (shared by its shards)."""

    def __init__(self) -> None:
        self.dropped = 0


_MAGIC = b"pedrag-shard\x00"
_DIGEST = 16


def _checksum(*parts: bytes) -> bytes:
    digest = hashlib.blake2b(digest_size=_DIGEST)
    for part in parts:
        digest.update(part)
    return digest.digest()


def _read_shard(body: bytes) -> dict[str, bytes] | None:
    """A shard file's answers, or None when it is not one or fails its checksum."""
    start = len(_MAGIC) + _DIGEST
    if len(body) < start or not body.startswith(_MAGIC):
        return None
    if _checksum(body[start:]) != body[len(_MAGIC) : start]:
        return None
    return _read_record(body[start:])


def _read_record(body: bytes) -> dict[str, bytes] | None:
    """A marshal-ed dict of str -> bytes (already checksummed), or None for anything else
    (another Python's format)."""
    try:
        record = marshal.loads(body)
    except Exception:
        return None
    # The types of every key and value, gathered in C: a shard holds 17,000 answers at
    # 5,000 rules, and testing them one by one in Python was a tenth of reading them.
    if type(record) is not dict or not (
        set(map(type, record)) <= {str} and set(map(type, record.values())) <= {bytes}
    ):
        return None
    return record


_LENGTH = 8


def _read_journal(path: Path) -> tuple[list[dict[str, bytes]], int]:
    """The journal's records up to the first that is torn or fails its checksum, and how many
    were dropped (1 when anything after the good records is left, else 0)."""
    data = _safe_read(path)
    records: list[dict[str, bytes]] = []
    at = 0
    while at < len(data):
        head = data[at : at + _LENGTH + _DIGEST]
        if len(head) < _LENGTH + _DIGEST:
            return records, 1
        length = head[:_LENGTH]
        size = int.from_bytes(length, "little")
        body = data[at + _LENGTH + _DIGEST : at + _LENGTH + _DIGEST + size]
        if len(body) < size or _checksum(length, body) != head[_LENGTH:]:
            return records, 1  # torn by a process killed mid-write, or damaged
        record = _read_record(body)
        if record is None:
            return records, 1
        records.append(record)
        at += _LENGTH + _DIGEST + size
    return records, 0


def _append(path: Path, record: dict[str, bytes]) -> None:
    """One write of one record, in append mode: two checks appending at once do not
    interleave their records."""
    body = marshal.dumps(record)
    length = len(body).to_bytes(_LENGTH, "little")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(handle, length + _checksum(length, body) + body)
    finally:
        os.close(handle)


def _write_atomically(path: Path, record: dict[str, bytes]) -> None:
    """A shard, checksummed, in a temporary file renamed into place: a reader never sees half
    a shard."""
    body = marshal.dumps(record)
    _write_bytes_atomically(path, _MAGIC + _checksum(body) + body)


def _write_bytes_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=".shard-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


class MemoShard(Shard):
    """A shard as a memo (`get(key, default)`, `memo[key] = value`): the resolver's
    (`pedrag.dsl.resolve.remembering_resolved`), one per set of declarations."""

    def get(self, key: str, default: Any = None, /) -> Any:
        value = super().get(key)
        return default if value is MISSING else value

    def __setitem__(self, key: str, value: Any, /) -> None:
        self.put(key, value)


class ParsedShard(MemoShard):
    """A memo shared by every file checked, so it keeps what other files' checks stored:
    the parser's (`pedrag.dsl.parser.remembering`) and `CheckCache.memo`'s."""

    keeps_unused = True


class ParsedConditions(ParsedShard):
    """The parsed-condition memo, which also seals the grammar's table file lark wrote during
    this check (`CheckCache._verify_tables`)."""

    def __init__(self, path: Path | None, damage: Damage, tables: Path | None) -> None:
        super().__init__(path, damage)
        self.tables = tables

    def save(self) -> None:
        super().save()
        if self.tables is None:
            return
        body = _safe_read(self.tables)
        stamp = _stamp(self.tables)
        if body and _safe_read(stamp) != _checksum(body):
            try:
                _write_bytes_atomically(stamp, _checksum(body))
            except OSError:
                pass


def _stamp(tables: Path) -> Path:
    return tables.with_name(tables.name + ".sum")


class ResolvedShelves:
    """Resolved conditions, one shard per theory declarations (`CheckCache.resolved_conditions`)."""

    def __init__(self, cache: CheckCache) -> None:
        self.cache = cache
        self.opened: dict[str, MemoShard] = {}

    def shelf(self, declarations: str) -> MemoShard:
        if declarations not in self.opened:
            from pedrag.dsl.parser import grammar_text

            path = self.cache.shard(("resolved conditions", grammar_text(), declarations)).path
            self.opened[declarations] = MemoShard(path, self.cache.damage)
        return self.opened[declarations]

    def save(self) -> None:
        for shard in self.opened.values():
            shard.save()


LOADED_KEPT = 256
"""Front-end results kept whole (`LoadedFiles`): the files last checked twice unchanged, at
most this many and at most `LOADED_BYTES` together (a 5,000-rule file's is about 5 MB, a
shipped theory's tens of KB), so a repository of many small theories keeps all of them."""
LOADED_BYTES = 64 * 1024 * 1024
SEEN_KEPT = 256
"""Contents remembered as seen once (`LoadedFiles`), the oldest forgotten first."""


_DIGEST_NAME = re.compile("[0-9a-f]{40}")
"""A kept result's file name (`LoadedFiles`): what a `.latest` pointer may name."""


class LoadedFiles:
    """Whole front-end results (a file's `LoadedFile`: source, positions, validated model,
    resolved theory, diagnostics) by the file's bytes and the name it is shown under, in
    `loaded/` beside the shards, so a re-check of an unchanged file neither composes its YAML
    nor validates nor resolves it. At 5,000 generated rules that front end costs 0.75 s of CPU
    without the parsed-condition memo, and reading the pickle back 0.14 s.

    Writing the pickle costs 0.3 s at that size, so a content earns one only the second time it
    is checked: the first time it is marked as seen (an empty `<digest>.seen`), which a
    one-rule edit's re-check, a content never seen before, pays nothing for. The pickle is
    checksummed like a shard (a damaged one is dropped, counted and written again), and only
    the most recently written are kept, `LOADED_KEPT` and `LOADED_BYTES` at most (the newest
    always)."""

    def __init__(self, folder: Path | None, damage: Damage, kind: str = "loaded") -> None:
        self.folder = folder / kind if folder is not None else None
        self.damage = damage

    def load(
        self,
        raw: bytes,
        shown: str,
        load: Callable[[bytes, str], T],
        code: str = "",
        keep: Callable[[T], bool] = lambda result: True,
        splice: Callable[[T, bytes], T | None] | None = None,
        at_once: bool = False,
    ) -> T:
        """`load(raw, shown)`, or its result as a check of the same bytes and name kept it.
        `code` names the front end's own code (`driver.front_end_code`), so a working tree
        whose loader changed without a new version does not read an old one's results. A
        result `keep` refuses (one with a solver timeout in it) is neither kept nor marked.
        `splice(previous, raw)` makes the result from the last one kept under the same name
        and code, where it can (`pedrag.dsl.incremental`); None from it loads afresh.
        `at_once`: kept the first time (a small result, such as a report, whose write costs
        less than a second check would)."""
        if self.folder is None:
            return load(raw, shown)
        digest, latest = self._names(raw, shown, code)
        kept, seen = self.folder / f"{digest}.pickle", self.folder / f"{digest}.seen"
        named = self._pointed(latest) if splice is not None else None
        body = _safe_read(kept)
        if body:
            found = self._read(kept, body)
            if found is not MISSING:
                if splice is not None and named != digest:
                    self._point(latest, digest)
                return found  # type: ignore[no-any-return]
        result = None
        if splice is not None and named is not None and named != digest:
            previous = self.folder / f"{named}.pickle"
            old = _safe_read(previous)
            earlier = self._read(previous, old) if old else MISSING
            if earlier is not MISSING:
                result = splice(earlier, raw)
        if result is None:
            result = load(raw, shown)
        if not keep(result):
            return result
        try:
            if at_once or body or seen.exists():
                self._write(kept, result)
                if splice is not None:
                    self._point(latest, digest)
                seen.unlink(missing_ok=True)
            else:
                self.folder.mkdir(parents=True, exist_ok=True)
                seen.touch()
                self._forget_oldest("*.seen", SEEN_KEPT)
        except (OSError, RecursionError, pickle.PicklingError):
            pass  # not kept: time, never a result
        return result

    def keep(
        self,
        raw: bytes,
        shown: str,
        load: Callable[[bytes, str], Any],
        code: str = "",
        splice: Callable[[Any, bytes], Any] | None = None,
    ) -> None:
        """`load`'s result kept as `load` keeps it, without reading it back where it is kept
        already (a 5,000-rule front end's pickle takes 0.1 s to read): the name's `.latest`
        pointer then names it, as `load` reading it would."""
        if self.folder is None:
            return
        digest, latest = self._names(raw, shown, code)
        if not (self.folder / f"{digest}.pickle").exists():
            self.load(raw, shown, load, code, splice=splice)
        elif splice is not None and self._pointed(latest) != digest:
            self._point(latest, digest)

    def replace(self, raw: bytes, shown: str, value: Any, code: str = "") -> None:
        """Keep `value` as the result for `raw` and `shown` (under `code`), in place of the
        one kept (`load`'s key); not kept is only time lost."""
        if self.folder is None:
            return
        try:
            self._write(self.folder / f"{self._names(raw, shown, code)[0]}.pickle", value)
        except (OSError, RecursionError, pickle.PicklingError):
            pass

    def _names(self, raw: bytes, shown: str, code: str) -> tuple[str, Path]:
        """(The digest a result for `raw` is kept under, the `.latest` pointer of `shown`)."""
        assert self.folder is not None
        versions = repr((*_versions(), shown, code)).encode("utf-8")
        digest = hashlib.sha256(versions + b"\x00" + raw).hexdigest()[:40]
        return digest, self.folder / f"{hashlib.sha256(versions).hexdigest()[:40]}.latest"

    def _write(self, kept: Path, result: Any) -> None:
        """Pickle `result` to `kept`, checksummed, and forget the oldest beyond the budget."""
        data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        _write_bytes_atomically(kept, _MAGIC + _checksum(data) + data)
        self._forget_oldest("*.pickle", LOADED_KEPT, LOADED_BYTES)

    def _point(self, latest: Path, digest: str) -> None:
        """Name `digest` as the last result kept or read for its name (`splice` starts there),
        with a checksum (`_pointed`)."""
        name = digest.encode("ascii")
        try:
            _write_bytes_atomically(latest, name + _checksum(name))
            self._forget_oldest("*.latest", SEEN_KEPT)
        except OSError:
            pass

    def _pointed(self, latest: Path) -> str | None:
        """The digest a `.latest` pointer names, or None: none there, or damaged (counted,
        removed)."""
        body = _safe_read(latest)
        if not body:
            return None
        name, check = body[:-_DIGEST], body[-_DIGEST:]
        if _checksum(name) == check and _DIGEST_NAME.fullmatch(name.decode("ascii", "replace")):
            return name.decode("ascii")
        self.damage.dropped += 1
        latest.unlink(missing_ok=True)
        return None

    def _read(self, kept: Path, body: bytes) -> Any:
        """A kept result's pickle, checksummed, or `MISSING` (a damaged one is counted and
        removed, another version's is removed)."""
        start = len(_MAGIC) + _DIGEST
        if body.startswith(_MAGIC) and _checksum(body[start:]) == body[len(_MAGIC) : start]:
            try:
                return pickle.loads(body[start:])
            except Exception:  # another version's classes: load it again
                pass
        else:
            self.damage.dropped += 1
        kept.unlink(missing_ok=True)
        return MISSING

    def _forget_oldest(self, pattern: str, keep: int, budget: int | None = None) -> None:
        """Delete all but the `keep` newest files of `pattern`, and (with a byte `budget`)
        the oldest of those until the rest fit in it; the newest is always kept."""
        assert self.folder is not None
        found = []
        for path in self.folder.glob(pattern):
            try:
                found.append((path.stat(), path))
            except OSError:
                continue  # removed by another check meanwhile
        if len(found) <= keep and budget is None:
            return
        found.sort(key=lambda item: item[0].st_mtime_ns, reverse=True)
        total = 0
        for index, (stat, path) in enumerate(found):
            total += stat.st_size
            if index and (index >= keep or (budget is not None and total > budget)):
                path.unlink(missing_ok=True)


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

T = TypeVar("T")


class Memo(Protocol):
    """Where answers are kept between checks: a `CheckCache.memo` shard (`ParsedShard`)."""

    def get(self, key: str, default: Any, /) -> Any: ...

    def __setitem__(self, key: str, value: Any, /) -> None: ...


def remembered(
    memo: Memo | None,
    key: str,
    compute: Callable[[], T],
    keep: Callable[[T], bool] = lambda value: True,
) -> T:
    """`compute()`, or the answer an earlier check kept under `key` (text made only of
    content). An answer is kept only when `keep` says so (never an `unknown`: it is asked
    again next time); `memo` None remembers nothing."""
    if memo is None:
        return compute()
    found = memo.get(key, MISSING)
    if found is MISSING:
        found = compute()
        if keep(found):
            memo[key] = found
    return found  # type: ignore[no-any-return]


class CheckCache:
    """Shards under one folder (None: a cache that remembers nothing, for `--no-cache`)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.damage = Damage()

    @property
    def dropped(self) -> int:
        """Damaged shards and journal records dropped (their answers computed again)."""
        return self.damage.dropped

    @classmethod
    def default(cls) -> CheckCache:
        return cls(default_folder() / "check")

    @classmethod
    def disabled(cls) -> CheckCache:
        return cls(None)

    def parsed_conditions(self) -> ParsedShard:
        """The parsed-condition memo (condition text -> AST) for the front end, in its own
        shard keyed by the grammar: parsing is most of the front end's time on a large file."""
        from pedrag.dsl.parser import grammar_text, keep_tables

        tables = None
        if self.folder is not None:
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
                tables = self.folder / "condition-grammar.lark"
                self._verify_tables(tables)
                keep_tables(str(tables))
            except OSError:
                pass  # the tables are built again: time, never a result
        path = self.shard(("parsed conditions", grammar_text())).path
        return ParsedConditions(path, self.damage, tables)

    def _verify_tables(self, tables: Path) -> None:
        """Lark's table file checks only the grammar's hash, not its own bytes: it is kept
        with a checksum beside it (`.sum`, written once lark has written the tables), and a
        file whose checksum is missing or wrong is removed, so lark builds the tables again."""
        body = _safe_read(tables)
        if body and _safe_read(_stamp(tables)) != _checksum(body):
            self.damage.dropped += 1
            tables.unlink(missing_ok=True)
            _stamp(tables).unlink(missing_ok=True)

    def loaded_files(self) -> LoadedFiles:
        """Whole front-end results by file content (`LoadedFiles`)."""
        return LoadedFiles(self.folder, self.damage)

    def kept_findings(self) -> LoadedFiles:
        """A theory's semantic findings and facts, whole, by the file's text, the name it is
        shown under, the compiler's code and the checks run (`driver.run_semantic`): kept
        as a front end is (`LoadedFiles`, in `findings/`), once the same text has been
        checked twice, so a re-check of an unchanged file builds no analysis at all."""
        return LoadedFiles(self.folder, self.damage, "findings")

    def kept_reports(self) -> LoadedFiles:
        """A `pedrag check` report's text and exit status, whole, by everything it is made
        from (`pedrag.compiler.kept_report`), in `reports/`, kept at the first check of the
        inputs (`load(at_once=True)`: a report is one small write, and a second check that
        analysed again was slower than the first): a re-check of unchanged files then reads
        one entry and imports neither the front end nor the checks."""
        return LoadedFiles(self.folder, self.damage, "reports")

    def resolved_conditions(self) -> ResolvedShelves:
        """The resolver's memo: conditions resolved without a diagnostic, by context and text,
        in a shard per set of declarations (`pedrag.dsl.resolve.remembering_resolved`)."""
        return ResolvedShelves(self)

    def memo(self, name: str) -> ParsedShard:
        """A shard of answers by content shared by every file checked, as a memo
        (`get(key, default)`, `memo[key] = value`): "material findings" (the runtime's
        material check, by each exercise's material and answer key), "set answers" (the
        set-level checks' graph answers, `compiler/graphs.py`)."""
        return ParsedShard(self.shard(("memo", name)).path, self.damage)

    def shard(self, semantics: Any) -> Shard:
        """The shard for a theory semantics (any value with a deterministic `repr`)."""
        if self.folder is None:
            return Shard(None, self.damage)
        digest = hashlib.sha256(repr((*_versions(), semantics)).encode("utf-8")).hexdigest()
        return Shard(self.folder / f"{digest[:40]}.pickle", self.damage)
