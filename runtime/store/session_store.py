"""Session persistence: tutoring sessions, their per-turn audit records and deployment spending.

Runtime stage: persistence. Takes a session's state and one audit record per turn (opaque,
JSON-able dicts owned by the turn loop) and gives them back after a restart, a crash or on
another worker; also keeps running spend totals for deployment-wide caps.

Why it looks like this:

- **A turn is one transaction.** ``save_turn`` replaces the session state and inserts the turn's
  audit record together, or writes nothing. A process killed mid-turn therefore loses nothing
  that was committed and never leaves a state without its audit record (or the reverse); the
  test suite checks this by SIGKILLing a real subprocess.
- **Turn indexes are a compare-and-set.** ``save_turn(id, n, ...)`` commits only if exactly
  ``n - 1`` turns are committed, so two writers working on the same session (two workers, a
  retried request) cannot interleave: the loser gets :class:`TurnConflict` and nothing written.
- **SQLAlchemy Core, two dialects.** SQLite is the default (``PEDRAG_DB``, a path or a URL);
  PostgreSQL replaces it by URL for multi-worker deployments, with no change for callers. Other
  databases are refused rather than half-supported: the atomic upsert behind ``add_spend`` and
  the locking behind ``save_turn`` are only verified on those two.
- **SQLite settings.** WAL, so readers (``pedrag audit``, the HTTP service) never block the
  writer. ``synchronous=NORMAL`` by default: in WAL mode a committed turn survives any crash of
  the process (a kill, an exception, the OOM killer), and the database is never corrupted; only
  a power cut or OS crash may roll back the last turns committed since the latest checkpoint
  (each turn still all or nothing). ``PEDRAG_DB_SYNCHRONOUS=FULL`` (or ``synchronous="FULL"``)
  syncs every commit so those survive too, at one fsync per turn (measured with
  ``benchmarks/turn_overhead.py``; docs/persistence.md). Foreign keys on; a busy timeout so
  concurrent writers wait instead of failing; write transactions start with
  ``BEGIN IMMEDIATE`` so they queue on the lock up front instead of failing mid-transaction
  when a deferred read lock cannot be upgraded.
- **What you save is what you load.** States and audit records must be plain JSON values (dict
  with str keys, list, str, int, float, bool, None); anything JSON would silently change (a
  tuple, an int key, NaN) is refused with the path to the offending value.
- **One exception hierarchy.** Every database failure surfaces as :class:`StoreError` (or its
  subclasses), never as a driver or SQLAlchemy exception, so the turn loop catches one thing.
- **Tenants are kept apart here, not by callers.** A store is bound to one tenant
  (``SessionStore(url, tenant=...)``, or ``store.for_tenant(id)`` sharing the connection pool;
  ``default`` when none is given) and every statement it runs carries ``tenant = ?``: another
  tenant's session, audit record, learner or spend total is indistinguishable from one that
  does not exist (:class:`SessionNotFound`, :class:`LearnerNotFound`). The HTTP service maps
  an API key to a tenant (:class:`TenantDirectory`) and then only ever holds a bound store.
- **Schema by migrations.** Opening a store applies the Alembic revisions up to the head,
  once, under a lock (``pedrag.runtime.store.migrate``), so any number of processes may start on an
  empty database at the same time.
"""

from __future__ import annotations

import builtins
import hashlib
import math
import os
import secrets
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    bindparam,
    create_engine,
    delete,
    event,
    func,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import (
    ArgumentError,
    DBAPIError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    SQLAlchemyError,
)
from sqlalchemy.pool import StaticPool

from pedrag.runtime.store.errors import (
    AlreadyExists,
    LearnerNotFound,
    SessionNotFound,
    StoreError,
    StoreUnavailable,
    TurnConflict,
)
from pedrag.runtime.store.safe_text import safe_text
from pedrag.runtime.store.schema import (
    DEFAULT_TENANT,
    TENANT_ID_LENGTH,
    api_keys,
    audit_records,
    learner_goals,
    learners,
    rate_windows,
    sessions,
    spend,
    tenants,
)
from pedrag.runtime.store.sqlite_driver import load_vectors, sqlite_dbapi, vectors_unavailable
from pedrag.runtime.store.stored import StoredSession

__all__ = [
    "ROLES",
    "AlreadyExists",
    "ApiKey",
    "DEFAULT_DB_PATH",
    "DEFAULT_TENANT",
    "ENV_DB",
    "ENV_SYNCHRONOUS",
    "LearnerNotFound",
    "SessionNotFound",
    "SessionStore",
    "StoreError",
    "StoreUnavailable",
    "StoredSession",
    "Tenant",
    "TenantDirectory",
    "TurnConflict",
    "resolve_db_url",
]

ENV_DB = "PEDRAG_DB"
"""Environment variable naming the database: a filesystem path or an SQLAlchemy URL."""

# SQLite durability (the module docstring, docs/persistence.md): NORMAL in WAL mode syncs at
# checkpoints, so a committed turn survives any crash of the process; FULL also syncs every
# commit, so it survives a power cut or OS crash too, for one fsync more per turn.
ENV_SYNCHRONOUS = "PEDRAG_DB_SYNCHRONOUS"
DEFAULT_SYNCHRONOUS = "NORMAL"

DEFAULT_DB_PATH = Path(".pedrag") / "sessions.db"
"""Used when neither ``url`` nor ``PEDRAG_DB`` is given; relative to the working directory."""

BUSY_TIMEOUT_SECONDS = 30.0
"""How long an SQLite writer waits for another writer's lock before giving up. A turn
transaction takes milliseconds, so waiting this long means something is stuck."""

ENV_RETRY = "PEDRAG_DB_RETRY_SECONDS"
DEFAULT_RETRY_SECONDS = 10.0
"""How long a PostgreSQL store keeps trying to get a connection (a server restarting, a
network cut) before a call fails with :class:`StoreUnavailable`: exponential backoff with
jitter from 50 ms to 1 s between attempts. ``PEDRAG_DB_RETRY_SECONDS=0`` fails at once."""

_SUPPORTED_DIALECTS = ("sqlite", "postgresql")
# Connection execution option telling the SQLite ``begin`` hook to take the write lock up front.
_WRITE_TRANSACTION = "pedrag_write_transaction"


def resolve_db_url(url: str | None = None) -> URL:
    """The database a store opens: ``url``, else ``$PEDRAG_DB``, else ``./.pedrag/sessions.db``.

    Either may be a filesystem path (``~`` expanded, made absolute now so a later ``chdir`` does
    not move the database) or an SQLAlchemy URL such as ``postgresql+psycopg://host/pedrag``.
    """
    raw = url if url is not None else os.environ.get(ENV_DB, "").strip() or None
    if raw is not None and "://" in raw:
        try:
            return make_url(raw)
        except ArgumentError as error:
            raise StoreError(f"invalid database URL {raw!r}: {error}") from error
    path = Path(raw).expanduser() if raw is not None else DEFAULT_DB_PATH
    return URL.create("sqlite+pysqlite", database=str(path.resolve()))


class SessionStore:
    """Sessions, audit records and spend totals in one SQL database (see the module docstring).

    Safe to share between threads; several stores (in one process or many) may open the same
    database. Use as a context manager or call :meth:`close`.
    """

    def __init__(
        self,
        url: str | None = None,
        synchronous: str | None = None,
        *,
        tenant: str = DEFAULT_TENANT,
    ) -> None:
        self._url = resolve_db_url(url)
        self.synchronous = resolve_synchronous(synchronous)
        self._tenant = _require_tenant_id(tenant)
        self._owns_engine = True
        self._parent: SessionStore | None = None  # the store a for_tenant() view shares
        dialect = self._url.get_backend_name()
        if dialect not in _SUPPORTED_DIALECTS:
            raise StoreError(
                f"unsupported database {dialect!r}: pedrag stores sessions in "
                f"{' or '.join(_SUPPORTED_DIALECTS)}"
            )
        self._closed = False
        self._retry_seconds = resolve_retry_seconds()
        with self._errors("open the session database"):
            self._engine = _create_engine(self._url, self.synchronous)
        try:
            with self._errors("migrate the session tables"):
                # Lazy: the migration machinery (Alembic) is imported only when a store opens.
                from pedrag.runtime.store.migrate import upgrade

                upgrade(self._engine, lambda: self._transaction(write=True))
                if dialect == "sqlite" and _is_sqlite_file(self._url):
                    with self._engine.connect() as connection:
                        mode = connection.exec_driver_sql("PRAGMA journal_mode").scalar()
                    if str(mode).lower() != "wal":
                        # Some filesystems (network mounts) cannot hold a WAL; fail rather
                        # than run with weaker guarantees than documented.
                        raise StoreError(
                            f"SQLite database {self._url.database} is in journal mode "
                            f"{mode!r}, not WAL; put PEDRAG_DB on a local filesystem"
                        )
        except BaseException:
            self.close()
            raise

    @property
    def url(self) -> str:
        """The database URL, password hidden (safe to log)."""
        return self._url.render_as_string(hide_password=True)

    @property
    def tenant(self) -> str:
        """The tenant every statement of this store is scoped to."""
        return self._tenant

    def __repr__(self) -> str:
        return f"SessionStore({self.url!r}, tenant={self._tenant!r})"

    def for_tenant(self, tenant: str) -> SessionStore:
        """A store bound to ``tenant`` on the same database and connection pool (no new
        connection, no migration check). Closing it leaves this store open."""
        bound = object.__new__(SessionStore)
        bound._url = self._url
        bound._tenant = _require_tenant_id(tenant)
        bound._engine = self._engine
        bound._owns_engine = False
        bound._closed = False
        bound._parent = self
        bound._retry_seconds = self._retry_seconds
        return bound

    @property
    def tenants(self) -> TenantDirectory:
        """The directory of tenants and API keys on this database (not tenant-scoped: it is
        what maps a key to its tenant)."""
        return TenantDirectory(self)

    def ping(self) -> None:
        """Raise :class:`StoreError` unless the database answers (``/readyz``)."""
        with self._errors("reach the session database"):
            with self._transaction(write=False) as connection:
                connection.execute(text("SELECT 1"))

    # -- sessions ----------------------------------------------------------------------------

    def create_session(self, session_id: str, meta: dict[str, Any], state: dict[str, Any]) -> None:
        """Start a session with zero turns. ``meta`` is fixed at creation (theory, learner,
        exercise, ...); ``state`` is replaced by every :meth:`save_turn`.

        ``meta["learner_id"]``, when set, names a learner of this tenant (:meth:`create_learner`;
        :class:`LearnerNotFound` otherwise): the session is theirs and goes with
        :meth:`delete_learner`."""
        _require_session_id(session_id)
        _require_document(meta, "meta")
        _require_document(state, "state")
        learner_id = meta.get("learner_id")
        if learner_id is not None:
            _require_session_id(learner_id, "learner id")
        now = _utcnow()
        with self._errors(f"create session {session_id!r}"):
            try:
                with self._transaction(write=True) as connection:
                    if learner_id is not None and not self._learner_exists(connection, learner_id):
                        raise LearnerNotFound(learner_id)
                    connection.execute(
                        insert(sessions).values(
                            id=session_id,
                            meta=meta,
                            state=state,
                            turns=0,
                            created_at=now,
                            updated_at=now,
                            tenant=self._tenant,
                            learner_id=learner_id,
                        )
                    )
            except IntegrityError as error:
                raise AlreadyExists(f"a session with id {session_id!r} already exists") from error

    def save_turn(
        self,
        session_id: str,
        turn_index: int,
        state: dict[str, Any],
        audit: dict[str, Any],
        learner: tuple[str, Mapping[str, Mapping[str, Any]]] | None = None,
        *,
        version: int | None = None,
    ) -> None:
        """Commit turn ``turn_index`` (1-based): insert its audit record and replace the session
        state, in one transaction; ``learner`` — ``(learner id, {goal: {"mastery", "evidence",
        "solved"}})`` — writes the learner's goals the turn changed in the same transaction.

        Raises :class:`TurnConflict` unless exactly ``turn_index - 1`` turns are committed and,
        when ``version`` is given (the one :meth:`read_session` gave), the state was not written
        since (``state_changed``: an instructor's toggle landed while the turn ran); and
        :class:`SessionNotFound` for an unknown id. In all these cases, and on any other error,
        nothing is written.
        """
        _require_session_id(session_id)
        if isinstance(turn_index, bool) or not isinstance(turn_index, int) or turn_index < 1:
            raise StoreError(f"turn_index must be an int >= 1, got {turn_index!r}")
        _require_document(state, "state")
        audit = _safe_document(audit)  # text from models and endpoints: cleaned, not refused
        _require_document(audit, "audit")
        now = _utcnow()
        with self._errors(f"save turn {turn_index} of session {session_id!r}"):
            with self._transaction(write=True) as connection:
                # The compare-and-set: only the writer that saw turns == n - 1 advances it. On
                # PostgreSQL a concurrent writer blocks on the row lock, then re-checks the
                # condition against the committed row and matches nothing.
                values = {
                    "b_id": session_id,
                    "b_tenant": self._tenant,
                    "b_before": turn_index - 1,
                    "b_state": state,
                    "b_turns": turn_index,
                    "b_now": now,
                }
                if version is None:
                    advanced = connection.execute(_ADVANCE, values)
                else:
                    advanced = connection.execute(_ADVANCE_AT, {**values, "b_version": version})
                if advanced.rowcount != 1:
                    self._raise_conflict(connection, session_id, turn_index)
                # A record already stored for this turn (only possible if the tables were
                # edited behind the store's back) fails on the primary key: StoreError, and
                # the update above is rolled back with it.
                connection.execute(
                    _RECORD,
                    {
                        "session_id": session_id,
                        "turn_index": turn_index,
                        "record": audit,
                        "created_at": now,
                        "tenant": self._tenant,
                    },
                )
                if learner is not None:
                    self._write_learner(connection, learner[0], learner[1], now)

    def _upsert_insert(self) -> Any:
        """The dialect's INSERT that has ``on_conflict_do_update`` (the store's upserts)."""
        return postgresql.insert if self._engine.dialect.name == "postgresql" else sqlite.insert

    def _raise_conflict(self, connection: Connection, session_id: str, turn_index: int) -> None:
        """A compare-and-set on the turn count matched nothing: say why (no such session of
        this tenant, or another writer committed first)."""
        committed = connection.execute(
            select(sessions.c.turns).where(
                sessions.c.id == session_id, sessions.c.tenant == self._tenant
            )
        ).scalar_one_or_none()
        if committed is None:
            raise SessionNotFound(session_id)
        raise TurnConflict(
            session_id, turn_index, committed, state_changed=committed == turn_index - 1
        )

    def _write_learner(
        self,
        connection: Connection,
        learner_id: str,
        goals: Mapping[str, Mapping[str, Any]],
        now: datetime,
    ) -> None:
        dialect_insert = self._upsert_insert()
        for goal_id, goal in goals.items():
            row = dialect_insert(learner_goals).values(
                tenant=self._tenant,
                learner_id=learner_id,
                goal_id=goal_id,
                mastery=float(goal["mastery"]),
                evidence=int(goal["evidence"]),
                solved=list(goal["solved"]),
                updated_at=now,
            )
            connection.execute(
                row.on_conflict_do_update(
                    index_elements=[
                        learner_goals.c.tenant,
                        learner_goals.c.learner_id,
                        learner_goals.c.goal_id,
                    ],
                    set_={
                        "mastery": row.excluded.mastery,
                        "evidence": row.excluded.evidence,
                        "solved": row.excluded.solved,
                        "updated_at": row.excluded.updated_at,
                    },
                )
            )

    def load_learner_goals(self, learner_id: str) -> dict[str, dict[str, Any]]:
        """The learner's goals as last committed: ``{goal: {"mastery", "evidence", "solved"}}``;
        empty for a learner never seen."""
        with self._errors(f"load learner {learner_id!r}"):
            with self._transaction(write=False) as connection:
                rows = connection.execute(
                    select(learner_goals).where(
                        learner_goals.c.tenant == self._tenant,
                        learner_goals.c.learner_id == learner_id,
                    )
                ).all()
        return {
            row.goal_id: {
                "mastery": float(row.mastery),
                "evidence": int(row.evidence),
                "solved": list(row.solved),
            }
            for row in rows
        }

    def set_state(
        self, session_id: str, turns: int, state: dict[str, Any], *, version: int | None = None
    ) -> None:
        """Replace the state of a session between turns (an instructor's toggle), without a
        turn: a compare-and-set on ``turns`` (and on ``version`` when given) as
        :meth:`save_turn`'s, which bumps the version, so neither a turn committed meanwhile is
        overwritten (:class:`TurnConflict`; nothing written) nor can a turn that read the state
        before this write commit over it."""
        _require_session_id(session_id)
        _require_document(state, "state")
        scope = [
            sessions.c.id == session_id,
            sessions.c.tenant == self._tenant,
            sessions.c.turns == turns,
        ]
        if version is not None:
            scope.append(sessions.c.version == version)
        with self._errors(f"update the state of session {session_id!r}"):
            with self._transaction(write=True) as connection:
                changed = connection.execute(
                    update(sessions)
                    .where(*scope)
                    .values(state=state, updated_at=_utcnow(), version=sessions.c.version + 1)
                )
                if changed.rowcount != 1:
                    self._raise_conflict(connection, session_id, turns + 1)

    def load_session(self, session_id: str) -> tuple[dict[str, Any], dict[str, Any], int]:
        """``(meta, state, turns)`` as of the last committed turn; resume with turn
        ``turns + 1``."""
        stored = self.read_session(session_id)
        return stored.meta, stored.state, stored.turns

    def read_session(self, session_id: str) -> StoredSession:
        """The session as last written, with the version a turn or a toggle commits against."""
        with self._errors(f"load session {session_id!r}"):
            with self._transaction(write=False) as connection:
                row = connection.execute(
                    select(
                        sessions.c.meta, sessions.c.state, sessions.c.turns, sessions.c.version
                    ).where(sessions.c.id == session_id, sessions.c.tenant == self._tenant)
                ).one_or_none()
        if row is None:
            raise SessionNotFound(session_id)
        return StoredSession(dict(row.meta), dict(row.state), int(row.turns), int(row.version))

    def audit_records(self, session_id: str) -> list[dict[str, Any]]:
        """The session's audit records as saved, ordered by turn (the record of turn ``n`` is
        at index ``n - 1``)."""
        with self._errors(f"read the audit records of session {session_id!r}"):
            with self._transaction(write=False) as connection:
                exists = connection.execute(
                    select(sessions.c.id).where(
                        sessions.c.id == session_id, sessions.c.tenant == self._tenant
                    )
                ).first()
                records = connection.execute(
                    select(audit_records.c.record)
                    .where(
                        audit_records.c.session_id == session_id,
                        audit_records.c.tenant == self._tenant,
                    )
                    .order_by(audit_records.c.turn_index)
                ).scalars()
                result = [dict(record) for record in records]
        if exists is None:
            raise SessionNotFound(session_id)
        return result

    def list_sessions(
        self, limit: int = 50, *, learner_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The most recently updated sessions first (of one learner, if given), each ``{"id",
        "created_at", "updated_at", "turns", "meta"}``; the timestamps are timezone-aware UTC
        datetimes."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise StoreError(f"limit must be an int >= 0, got {limit!r}")
        scope = [sessions.c.tenant == self._tenant]
        if learner_id is not None:
            scope.append(sessions.c.learner_id == learner_id)
        with self._errors("list sessions"):
            with self._transaction(write=False) as connection:
                rows = connection.execute(
                    select(
                        sessions.c.id,
                        sessions.c.created_at,
                        sessions.c.updated_at,
                        sessions.c.turns,
                        sessions.c.meta,
                    )
                    .where(*scope)
                    .order_by(sessions.c.updated_at.desc(), sessions.c.id)
                    .limit(limit)
                ).all()
        return [
            {
                "id": row.id,
                "created_at": _as_utc(row.created_at),
                "updated_at": _as_utc(row.updated_at),
                "turns": int(row.turns),
                "meta": dict(row.meta),
            }
            for row in rows
        ]

    # -- spending ----------------------------------------------------------------------------

    def add_spend(self, scope: str, usd: float) -> float:
        """Add ``usd`` to the running total of ``scope`` atomically and return the new total.

        One statement (an upsert returning the sum), so concurrent workers never lose an
        addition and each sees the total including its own.
        """
        if not isinstance(scope, str) or not scope:
            raise StoreError(f"spend scope must be a non-empty str, got {scope!r}")
        if isinstance(usd, bool) or not isinstance(usd, int | float):
            raise StoreError(f"usd must be a number, got {usd!r}")
        if not math.isfinite(usd) or usd < 0:
            raise StoreError(f"usd must be finite and >= 0, got {usd!r}")
        dialect_insert = self._upsert_insert()
        row = dialect_insert(spend).values(
            tenant=self._tenant, scope=scope, usd=float(usd), updated_at=_utcnow()
        )
        statement = row.on_conflict_do_update(
            index_elements=[spend.c.tenant, spend.c.scope],
            set_={"usd": spend.c.usd + row.excluded.usd, "updated_at": row.excluded.updated_at},
        ).returning(spend.c.usd)
        with self._errors(f"add spend to {scope!r}"):
            with self._transaction(write=True) as connection:
                total = connection.execute(statement).scalar_one()
        return float(total)

    def spend(self, scope: str) -> float:
        """The running total of ``scope`` in USD; 0.0 if nothing was spent yet."""
        with self._errors(f"read spend of {scope!r}"):
            with self._transaction(write=False) as connection:
                total = connection.execute(
                    select(spend.c.usd).where(
                        spend.c.tenant == self._tenant, spend.c.scope == scope
                    )
                ).scalar_one_or_none()
        return 0.0 if total is None else float(total)

    # -- learners, deletion, retention -------------------------------------------------------

    def create_learner(self, learner_id: str, meta: dict[str, Any] | None = None) -> None:
        """A learner of this tenant; ``meta`` is the application's (display name, cohort...)."""
        _require_session_id(learner_id, "learner id")
        meta = dict(meta or {})
        _require_document(meta, "meta")
        with self._errors(f"create learner {learner_id!r}"):
            try:
                with self._transaction(write=True) as connection:
                    connection.execute(
                        insert(learners).values(
                            id=learner_id, tenant=self._tenant, meta=meta, created_at=_utcnow()
                        )
                    )
            except IntegrityError as error:
                raise AlreadyExists(f"a learner with id {learner_id!r} already exists") from error

    def load_learner(self, learner_id: str) -> dict[str, Any]:
        """``{"id", "meta", "created_at", "sessions"}`` (the number of sessions)."""
        with self._errors(f"load learner {learner_id!r}"):
            with self._transaction(write=False) as connection:
                row = connection.execute(
                    select(learners.c.meta, learners.c.created_at).where(
                        learners.c.id == learner_id, learners.c.tenant == self._tenant
                    )
                ).one_or_none()
                count = connection.execute(
                    select(func.count())
                    .select_from(sessions)
                    .where(sessions.c.tenant == self._tenant, sessions.c.learner_id == learner_id)
                ).scalar_one()
        if row is None:
            raise LearnerNotFound(learner_id)
        return {
            "id": learner_id,
            "meta": dict(row.meta),
            "created_at": _as_utc(row.created_at),
            "sessions": int(count),
        }

    def delete_learner(self, learner_id: str) -> int:
        """Delete a learner with every session, audit record and goal record of theirs, in one
        transaction;
        returns the number of sessions deleted. :class:`LearnerNotFound` if there is none."""
        with self._errors(f"delete learner {learner_id!r}"):
            with self._transaction(write=True) as connection:
                if not self._learner_exists(connection, learner_id):
                    raise LearnerNotFound(learner_id)
                owned = select(sessions.c.id).where(
                    sessions.c.tenant == self._tenant, sessions.c.learner_id == learner_id
                )
                connection.execute(
                    delete(audit_records).where(
                        audit_records.c.tenant == self._tenant,
                        audit_records.c.session_id.in_(owned),
                    )
                )
                deleted = connection.execute(
                    delete(sessions).where(
                        sessions.c.tenant == self._tenant, sessions.c.learner_id == learner_id
                    )
                ).rowcount
                connection.execute(
                    delete(learner_goals).where(
                        learner_goals.c.tenant == self._tenant,
                        learner_goals.c.learner_id == learner_id,
                    )
                )
                connection.execute(
                    delete(learners).where(
                        learners.c.tenant == self._tenant, learners.c.id == learner_id
                    )
                )
        return int(deleted)

    def purge_expired(self, retention_days: int, now: datetime | None = None) -> int:
        """Delete this tenant's sessions (and their audit records) whose last turn is older
        than ``retention_days``; returns how many. Learners stay (they may come back)."""
        if isinstance(retention_days, bool) or not isinstance(retention_days, int):
            raise StoreError(f"retention_days must be an int, got {retention_days!r}")
        if retention_days < 0:
            raise StoreError(f"retention_days must be >= 0, got {retention_days}")
        cutoff = (now or _utcnow()) - timedelta(days=retention_days)
        with self._errors("purge expired sessions"):
            with self._transaction(write=True) as connection:
                expired = select(sessions.c.id).where(
                    sessions.c.tenant == self._tenant, sessions.c.updated_at < cutoff
                )
                connection.execute(
                    delete(audit_records).where(
                        audit_records.c.tenant == self._tenant,
                        audit_records.c.session_id.in_(expired),
                    )
                )
                deleted = connection.execute(
                    delete(sessions).where(
                        sessions.c.tenant == self._tenant, sessions.c.updated_at < cutoff
                    )
                ).rowcount
        return int(deleted)

    def count_request(self, minute: int) -> int:
        """Count one request of this tenant in minute ``minute`` (since the epoch) and return
        the minute's count so far, atomically across workers (the rate limit's counter).
        Windows older than the previous minute are dropped on the way."""
        dialect_insert = self._upsert_insert()
        row = dialect_insert(rate_windows).values(tenant=self._tenant, minute=minute, requests=1)
        statement = row.on_conflict_do_update(
            index_elements=[rate_windows.c.tenant, rate_windows.c.minute],
            set_={"requests": rate_windows.c.requests + 1},
        ).returning(rate_windows.c.requests)
        with self._errors("count a request"):
            with self._transaction(write=True) as connection:
                count = connection.execute(statement).scalar_one()
                if count == 1:  # the first request of a minute clears the old windows
                    connection.execute(
                        delete(rate_windows).where(
                            rate_windows.c.tenant == self._tenant,
                            rate_windows.c.minute < minute - 1,
                        )
                    )
        return int(count)

    def _learner_exists(self, connection: Connection, learner_id: str) -> bool:
        return (
            connection.execute(
                select(learners.c.id).where(
                    learners.c.id == learner_id, learners.c.tenant == self._tenant
                )
            ).first()
            is not None
        )

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Release every connection. Idempotent; the store cannot be used afterwards."""
        if not self._closed:
            self._closed = True
            if self._owns_engine:
                self._engine.dispose()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------------

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Connection]:
        """A connection inside a transaction: committed on normal exit, rolled back on any
        exception. ``write`` takes SQLite's write lock at BEGIN (see the module docstring)."""
        if self._closed or (self._parent is not None and self._parent._closed):
            raise StoreError("the session store is closed")
        with self._connect() as connection:
            if write:
                connection.execution_options(**{_WRITE_TRANSACTION: True})
            with connection.begin():
                yield connection

    def _connect(self) -> Connection:
        """A connection from the pool; on PostgreSQL, a server that cannot be reached is tried
        again with backoff for ``PEDRAG_DB_RETRY_SECONDS`` (the pool's pre-ping replaces a
        connection a restart broke). Only getting the connection is retried, never a statement:
        whether a write whose connection broke mid-commit was committed is not knowable here."""
        if self._engine.dialect.name == "sqlite" or self._retry_seconds <= 0:
            return self._engine.connect()
        # Lazy: only a PostgreSQL store needs it, and the CLI's start-up time counts.
        from tenacity import (
            Retrying,
            retry_if_exception,
            stop_after_delay,
            wait_exponential,
            wait_random,
        )

        for attempt in Retrying(
            retry=retry_if_exception(_connection_lost),
            stop=stop_after_delay(self._retry_seconds),
            wait=wait_exponential(multiplier=0.05, max=1.0) + wait_random(0, 0.05),
            reraise=True,
        ):
            with attempt:
                return self._engine.connect()
        raise AssertionError("unreachable")  # Retrying either returns or re-raises

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Turn SQLAlchemy and driver exceptions into :class:`StoreError` (a lost or refused
        connection: :class:`StoreUnavailable`). The message names the database (password
        hidden) for the operator's log; the service never shows it to a client."""
        try:
            yield
        except SQLAlchemyError as error:
            cause = getattr(error, "orig", None) or error
            kind = StoreUnavailable if _connection_lost(error) else StoreError
            raise kind(f"could not {action} in {self.url}: {cause}") from error


def _connection_lost(error: BaseException) -> bool:
    """A refused or broken connection (worth retrying later), not a statement's own error."""
    if isinstance(error, DBAPIError) and error.connection_invalidated:
        return True
    return isinstance(error, OperationalError | InterfaceError)


def resolve_retry_seconds() -> float:
    raw = os.environ.get(ENV_RETRY, "").strip()
    try:
        seconds = float(raw) if raw else DEFAULT_RETRY_SECONDS
    except ValueError:
        raise StoreError(f"{ENV_RETRY} must be a number of seconds, got {raw!r}") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise StoreError(f"{ENV_RETRY} must be >= 0 seconds, got {raw!r}")
    return seconds


def resolve_synchronous(value: str | None = None) -> str:
    """SQLite's `synchronous` level: `value`, else ``$PEDRAG_DB_SYNCHRONOUS``, else NORMAL."""
    raw = value if value is not None else os.environ.get(ENV_SYNCHRONOUS, "").strip()
    level = (raw or DEFAULT_SYNCHRONOUS).upper()
    if level not in ("NORMAL", "FULL"):
        raise StoreError(f"{ENV_SYNCHRONOUS} must be NORMAL or FULL, got {raw!r}")
    return level


def _create_engine(url: URL, synchronous: str = "FULL") -> Engine:
    if url.get_backend_name() != "sqlite":
        # pool_pre_ping: a server restart should cost one reconnect, not a failed turn.
        return create_engine(url, pool_pre_ping=True)
    if _is_sqlite_file(url):
        assert url.database is not None
        folder = Path(url.database).parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(
                f"cannot create the database folder {folder}: {error.strerror or error}"
            ) from error
        engine = create_engine(
            url,
            module=sqlite_dbapi(),
            connect_args={"timeout": BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
        )
    else:
        # In-memory: one shared connection, or every pooled connection would see its own
        # empty database. Useful for tests; nothing persists.
        engine = create_engine(
            url,
            module=sqlite_dbapi(),
            connect_args={"check_same_thread": False},
            poolclass=StaticPool,
        )
    vectors = vectors_unavailable() is None

    @event.listens_for(engine, "connect")
    def _configure_sqlite(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's ``begin`` hook emit BEGIN itself; the pysqlite driver's implicit
        # transactions are always deferred and skip some statements.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
            _enter_wal(cursor)
            cursor.execute(f"PRAGMA synchronous = {synchronous}")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()
        if vectors:  # course-passage vectors (sqlite-vec's vec0 tables)
            load_vectors(dbapi_connection)

    @event.listens_for(engine, "begin")
    def _begin_sqlite(connection: Connection) -> None:
        write = connection.get_execution_options().get(_WRITE_TRANSACTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def _enter_wal(cursor: Any) -> None:
    """Switch the database to WAL, waiting out other openers.

    Why not just the PRAGMA: SQLite answers ``PRAGMA journal_mode = WAL`` with "database is
    locked" at once, without its busy handler, while another connection is converting a fresh
    file (3 in 60 trials of eight threads opening one new database). The conversion is done once
    per file and is idempotent, so waiting and asking again is safe; the wait is bounded by the
    same busy timeout as every other lock."""
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    pause = 0.005
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except Exception as error:  # the driver's OperationalError; its module varies
            if "locked" not in str(error) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _is_sqlite_file(url: URL) -> bool:
    database = url.database or ""
    return database not in ("", ":memory:") and not database.startswith("file:")


def _require_session_id(session_id: object, what: str = "session id") -> None:
    if not isinstance(session_id, str) or not 1 <= len(session_id) <= 128:
        raise StoreError(f"{what} must be a str of 1 to 128 characters, got {session_id!r}")


def _require_tenant_id(tenant: object) -> str:
    if not isinstance(tenant, str) or not 1 <= len(tenant) <= TENANT_ID_LENGTH:
        raise StoreError(
            f"tenant id must be a str of 1 to {TENANT_ID_LENGTH} characters, got {tenant!r}"
        )
    return tenant


# A turn's two statements, built once: building them per turn (and their cache keys) was a
# sixth of the SQLite store's share of a turn. Bound by name, so one compiled form serves all.
_ADVANCE = (
    update(sessions)
    .where(
        sessions.c.id == bindparam("b_id"),
        sessions.c.tenant == bindparam("b_tenant"),
        sessions.c.turns == bindparam("b_before"),
    )
    .values(
        state=bindparam("b_state", type_=sessions.c.state.type),
        turns=bindparam("b_turns"),
        updated_at=bindparam("b_now", type_=sessions.c.updated_at.type),
        version=sessions.c.version + 1,
    )
)
# The same, also against the version the turn read (a toggle since makes it match nothing).
_ADVANCE_AT = _ADVANCE.where(sessions.c.version == bindparam("b_version"))
_RECORD = insert(audit_records)


def _require_document(value: object, what: str) -> None:
    """Refuse anything that would not come back unchanged from a JSON column."""
    if not isinstance(value, dict):
        raise StoreError(f"{what} must be a dict, got {type(value).__name__}")
    if _plainly_json(value):
        return
    try:
        problem = _json_problem(value, what)
    except RecursionError:
        problem = f"{what} is nested too deeply to store"
    if problem is not None:
        raise StoreError(problem)


def _safe_document(value: Any, depth: int = 0) -> Any:
    """An audit record with every string (keys too) made safe to store and print
    (``runtime.text.safe_text``): a NUL in a judge's reason or an HTTP error body, a lone
    surrogate, an ANSI escape or a password in a URL must not lose the turn or leak. Values
    of other types are left for :func:`_require_document` to judge."""
    if isinstance(value, str):
        return safe_text(value)
    if depth > 200:
        return value  # _require_document reports the nesting
    if isinstance(value, dict):
        return {
            (safe_text(key) if isinstance(key, str) else key): _safe_document(item, depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_safe_document(item, depth + 1) for item in value]
    return value


def _plainly_json(value: object) -> bool:
    """Whether `_json_problem` would find nothing, decided without building the path of every
    value it passes (which was a tenth of a turn's own cost): plain str, int, bool, None,
    finite floats, lists and str-keyed dicts, with no U+0000 and no deep nesting. Anything
    else is left to `_json_problem`, which names what is wrong and where."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        kind = type(current)
        if kind is str:
            if "\x00" in current:  # type: ignore[operator]
                return False
        elif kind is dict:
            if depth > 100:
                return False
            for key, item in current.items():  # type: ignore[attr-defined]
                if type(key) is not str or "\x00" in key:
                    return False
                stack.append((item, depth + 1))
        elif kind is list:
            if depth > 100:
                return False
            stack.extend((item, depth + 1) for item in current)  # type: ignore[attr-defined]
        elif kind is float:
            if not math.isfinite(current):  # type: ignore[arg-type]
                return False
        elif not (current is None or kind is bool or kind is int):
            return False
    return True


def _json_problem(value: object, path: str) -> str | None:
    if isinstance(value, str):
        # PostgreSQL's JSONB cannot hold U+0000; refuse it on SQLite too, so a turn that works
        # in development cannot fail in a PostgreSQL deployment.
        return f"{path} contains U+0000, which PostgreSQL cannot store" if "\x00" in value else None
    if value is None or isinstance(value, bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path} is {value!r}, which JSON cannot hold"
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path} has the key {key!r}; JSON object keys must be str"
            if "\x00" in key:
                return f"{path} has a key containing U+0000, which PostgreSQL cannot store"
            problem = _json_problem(item, f"{path}[{key!r}]")
            if problem is not None:
                return problem
        return None
    if isinstance(value, list):
        for index, item in enumerate(value):
            problem = _json_problem(item, f"{path}[{index}]")
            if problem is not None:
                return problem
        return None
    return (
        f"{path} is a {type(value).__name__}; only dict, list, str, int, float, bool and None "
        "are stored unchanged as JSON"
    )


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _as_utc(moment: datetime) -> datetime:
    # SQLite keeps no offset; every timestamp this module writes is UTC.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


# -- tenants and API keys -------------------------------------------------------------------

API_KEY_PREFIX = "pdg_"


def hash_api_key(key: str) -> str:
    """The digest an API key is stored as. SHA-256 suffices (no salt, no slow hash): keys are
    32 random bytes from :func:`secrets.token_urlsafe`, not guessable passwords."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Tenant:
    """A tenant and its settings; ``None`` means no limit."""

    id: str
    name: str
    retention_days: int | None = None
    max_usd: float | None = None
    requests_per_minute: int | None = None


class TenantDirectory:
    """Tenants and their API keys (hashed at rest). The one part of the store that is not
    tenant-scoped: it is how a request's key becomes a tenant."""

    def __init__(self, store: SessionStore) -> None:
        self._store = store

    def create(
        self,
        tenant_id: str,
        name: str | None = None,
        *,
        retention_days: int | None = None,
        max_usd: float | None = None,
        requests_per_minute: int | None = None,
    ) -> Tenant:
        _require_tenant_id(tenant_id)
        tenant = Tenant(tenant_id, name or tenant_id, retention_days, max_usd, requests_per_minute)
        store = self._store
        with store._errors(f"create tenant {tenant_id!r}"):
            try:
                with store._transaction(write=True) as connection:
                    connection.execute(
                        insert(tenants).values(
                            id=tenant.id,
                            name=tenant.name,
                            created_at=_utcnow(),
                            retention_days=retention_days,
                            max_usd=max_usd,
                            requests_per_minute=requests_per_minute,
                        )
                    )
            except IntegrityError as error:
                raise AlreadyExists(f"a tenant with id {tenant_id!r} already exists") from error
        return tenant

    def get(self, tenant_id: str) -> Tenant | None:
        store = self._store
        with store._errors(f"load tenant {tenant_id!r}"):
            with store._transaction(write=False) as connection:
                row = connection.execute(
                    select(tenants).where(tenants.c.id == tenant_id)
                ).one_or_none()
        return _tenant(row) if row is not None else None

    def list(self) -> list[Tenant]:
        store = self._store
        with store._errors("list tenants"):
            with store._transaction(write=False) as connection:
                rows = connection.execute(select(tenants).order_by(tenants.c.id)).all()
        return [_tenant(row) for row in rows]

    def issue_key(self, tenant_id: str, label: str = "", *, role: str = "learner") -> str:
        """A new API key of ``role`` for the tenant (least privilege by default). The key
        itself is returned once and never stored; :func:`key_id` names it afterwards."""
        if role not in ROLES:
            raise StoreError(f"unknown role {role!r} (roles: {', '.join(ROLES)})")
        key = API_KEY_PREFIX + secrets.token_urlsafe(32)
        store = self._store
        with store._errors(f"issue an API key for tenant {tenant_id!r}"):
            with store._transaction(write=True) as connection:
                if (
                    connection.execute(
                        select(tenants.c.id).where(tenants.c.id == tenant_id)
                    ).first()
                    is None
                ):
                    raise StoreError(f"no tenant with id {tenant_id!r}")
                connection.execute(
                    insert(api_keys).values(
                        key_hash=hash_api_key(key),
                        tenant=tenant_id,
                        label=label[:200],
                        created_at=_utcnow(),
                        role=role,
                    )
                )
        return key

    def authenticate(self, key: str) -> Tenant | None:
        """The tenant of an API key in force, or None for an unknown or revoked key."""
        found = self.key(key)
        return found.tenant if found is not None and found.revoked_at is None else None

    def key(self, key: str) -> ApiKey | None:
        """The record of an API key (revoked or not), or None for an unknown key."""
        digest = hash_api_key(key)
        store = self._store
        with store._errors("check an API key"):
            with store._transaction(write=False) as connection:
                row = connection.execute(
                    select(tenants, *_KEY_COLUMNS)
                    .join(api_keys, api_keys.c.tenant == tenants.c.id)
                    .where(api_keys.c.key_hash == digest)
                ).one_or_none()
        return _api_key(row) if row is not None else None

    def list_keys(self, tenant_id: str) -> builtins.list[ApiKey]:
        """The tenant's keys (revoked ones too), oldest first; never the keys themselves."""
        store = self._store
        with store._errors(f"list the API keys of tenant {tenant_id!r}"):
            with store._transaction(write=False) as connection:
                rows = connection.execute(
                    select(tenants, *_KEY_COLUMNS)
                    .join(api_keys, api_keys.c.tenant == tenants.c.id)
                    .where(tenants.c.id == tenant_id)
                    .order_by(api_keys.c.created_at, api_keys.c.key_hash)
                ).all()
        return [_api_key(row) for row in rows]

    def revoke_key(self, key_id: str, tenant_id: str | None = None) -> bool:
        """Revoke the key named ``key_id`` (of ``tenant_id`` when given: another tenant's key
        is as unknown as none); False if there is no such key in force. Takes effect on the
        next request of every worker (keys are checked per request, never cached)."""
        if not isinstance(key_id, str) or len(key_id) != KEY_ID_LENGTH:
            return False
        scope = [
            func.substr(api_keys.c.key_hash, 1, KEY_ID_LENGTH) == key_id,
            api_keys.c.revoked_at.is_(None),
        ]
        if tenant_id is not None:
            scope.append(api_keys.c.tenant == tenant_id)
        store = self._store
        with store._errors(f"revoke API key {key_id!r}"):
            with store._transaction(write=True) as connection:
                revoked = connection.execute(
                    update(api_keys).where(*scope).values(revoked_at=_utcnow())
                ).rowcount
        return bool(revoked)


ROLES = ("learner", "instructor", "admin")
"""The roles of API keys, each allowed everything the ones before it are (docs/service.md)."""

KEY_ID_LENGTH = 12


def key_id(key_hash: str) -> str:
    """How a key is named once issued: the first hex digits of its digest (not a secret)."""
    return key_hash[:KEY_ID_LENGTH]


@dataclass(frozen=True)
class ApiKey:
    """An API key's record: never the key itself."""

    id: str
    tenant: Tenant
    role: str
    label: str
    created_at: datetime
    revoked_at: datetime | None


_KEY_COLUMNS = (
    api_keys.c.key_hash,
    api_keys.c.role,
    api_keys.c.label,
    api_keys.c.created_at.label("key_created_at"),
    api_keys.c.revoked_at,
)


def _api_key(row: Any) -> ApiKey:
    return ApiKey(
        id=key_id(row.key_hash),
        tenant=_tenant(row),
        role=row.role,
        label=row.label,
        created_at=_as_utc(row.key_created_at),
        revoked_at=None if row.revoked_at is None else _as_utc(row.revoked_at),
    )


def _tenant(row: Any) -> Tenant:
    return Tenant(
        id=row.id,
        name=row.name,
        retention_days=row.retention_days,
        max_usd=None if row.max_usd is None else float(row.max_usd),
        requests_per_minute=row.requests_per_minute,
    )
