"""The on-disk check cache: the semantic analysis' answers, by content, across processes.

Compiler stage helper. Takes the answers `Analysis` computes (a rule's status, whether two
rules overlap or one implies the other, a same-action group's redundant rules, a shadow, an
invariant violation),
each under a key made only of content (condition text, rung, invariant text); gives them back
to a later `pedrag check` of the same theory semantics, so re-checking after a one-rule edit
asks z3 only about that rule and its pairs.

- **Content-addressed.** Answers live in one shard per *semantics*: the sha256 of pedrag's
  version, this cache's format and the theory's metric domains, ceiling and selection (what
  every answer depends on besides its own key). An edit to any of those starts a new shard;
  an edit to a rule only adds keys. Nothing is keyed by file name or path.
- **Plain values only.** An answer is stored when it is made of statuses, witnesses, cores,
  points and numbers (never formulas, whose identity matters in memory); `unknown` answers
  are never stored, so a timeout is asked again.
- **Where.** `$PEDRAG_CACHE_DIR`, else the platform's user cache folder (platformdirs:
  `~/.cache/pedrag` on Linux, `~/Library/Caches/pedrag` on macOS, `%LOCALAPPDATA%` on
  Windows), under `check/`. `pedrag check --no-cache` neither reads nor writes it.
- **Parsed conditions** live in one more shard, keyed by the condition grammar: condition
  text -> AST, shared by every file checked (`ParsedShard`), so the front end of a re-check
  parses only the conditions an edit changed.
- **The condition grammar's parser tables** (lark's cache, verified against the grammar's
  hash), so parsing the one condition an edit changed does not rebuild them.
- **Memos** shared by every file: the material check's findings (the answer-reveal detector
  over a curriculum's hints and examples, keyed by each exercise's material and answer key)
  and the set-level checks' graph answers (cycles, reachability, a switch cycle's z3 answer,
  keyed by the graph), each in a shard of its own (`CheckCache.memo`).
- **Safe to lose.** A shard that cannot be read (truncated, another version's, a full disk)
  is ignored and rewritten; writes go to a temporary file renamed into place, so a reader
  never sees half a shard. A shard keeps the answers its last check used, so it does not
  grow with every edit.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

ENV_CACHE_DIR = "PEDRAG_CACHE_DIR"
FORMAT = 1  # bump when what an answer means or how it is stored changes
PARSED_MAX = 200_000  # remembered condition texts, across every file checked
PERSISTED = frozenset({"rule", "pair", "implies", "redundant", "shadow", "invariant"})


def default_folder() -> Path:
    """Where the cache lives unless told otherwise (see the module docstring)."""
    configured = os.environ.get(ENV_CACHE_DIR, "").strip()
    if configured:
        return Path(configured).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("pedrag", appauthor=False))


def _version() -> str:
    from pedrag import __version__

    return __version__


class Shard:
    """The answers for one theory semantics: read once, written back once."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.stored: dict[str, Any] = {}
        self.used: dict[str, Any] = {}
        self.added = 0
        if path is not None:
            try:
                with path.open("rb") as handle:
                    loaded = pickle.load(handle)
                if isinstance(loaded, dict):
                    self.stored = loaded
            except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
                self.stored = {}
            except Exception:  # anything a damaged pickle raises: start afresh
                self.stored = {}

    def get(self, key: str) -> Any:
        """The stored answer, or `MISSING`."""
        if key in self.used:
            return self.used[key]
        value = self.stored.get(key, MISSING)
        if value is not MISSING:
            self.used[key] = value
        return value

    def put(self, key: str, value: Any) -> None:
        self.used[key] = value
        self.added += 1

    def save(self) -> None:
        """Write the answers this check used back, if anything changed."""
        if self.path is None or (self.added == 0 and len(self.used) == len(self.stored)):
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, name = tempfile.mkstemp(dir=self.path.parent, prefix=".shard-")
            try:
                with os.fdopen(handle, "wb") as out:
                    pickle.dump(self.used, out, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(name, self.path)
            except BaseException:
                Path(name).unlink(missing_ok=True)
                raise
        except OSError:
            pass  # a cache that cannot be written costs time, never a result


class ParsedShard(Shard):
    """A shard as the parser's memo (`pedrag.dsl.parser.remembering`): `None` when unknown."""

    def get(self, key: str, default: Any = None, /) -> Any:
        value = super().get(key)
        return default if value is MISSING else value

    def __setitem__(self, key: str, value: Any, /) -> None:
        self.put(key, value)

    def save(self) -> None:
        """Unlike an answer shard, every file's conditions share this one: keep what earlier
        checks stored too (checking one file must not evict another's), up to a bound, the
        least recently used first to go."""
        if self.added == 0:
            return
        merged = {k: v for k, v in self.stored.items() if k not in self.used}
        merged.update(self.used)
        self.used = dict(list(merged.items())[-PARSED_MAX:])
        super().save()


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

        if self.folder is not None:
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
                keep_tables(str(self.folder / "condition-grammar.lark"))
            except OSError:
                pass  # the tables are built again: time, never a result
        return ParsedShard(self.shard(("parsed conditions", grammar_text())).path)

    def memo(self, name: str) -> ParsedShard:
        """A shard of answers by content shared by every file checked, as a memo
        (`get(key, default)`, `memo[key] = value`): "material findings" (the runtime's
        material check, by each exercise's material and answer key), "set answers" (the
        set-level checks' graph answers, `compiler/graphs.py`)."""
        return ParsedShard(self.shard(("memo", name)).path)

    def shard(self, semantics: Any) -> Shard:
        """The shard for a theory semantics (any value with a deterministic `repr`)."""
        if self.folder is None:
            return Shard(None)
        digest = hashlib.sha256(repr((_version(), FORMAT, semantics)).encode("utf-8")).hexdigest()
        return Shard(self.folder / f"{digest[:40]}.pickle")
