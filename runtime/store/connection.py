"""Store connections: which database, how it is opened, and the transaction every store part uses.

Runtime stage: persistence. Takes a database URL or path (``PEDRAG_DB``) and a tenant; gives
:class:`StoreConnection`, the base of every part of the session store (sessions, learners,
spend, request counts): an engine with the dialect's settings, tenant scoping, transactions
that take SQLite's write lock up front, and one translation of driver errors into
:class:`StoreError`.

Why it looks like this:

- **SQLAlchemy Core, two dialects.** SQLite is the default; PostgreSQL replaces it by URL for
  multi-worker deployments. Other databases are refused rather than half-supported.
- **SQLite settings.** WAL, ``synchronous=NORMAL`` by default (``PEDRAG_DB_SYNCHRONOUS=FULL``
  syncs every commit), foreign keys on, a busy timeout, ``BEGIN IMMEDIATE`` for writes (the
  session store's module docstring and docs/persistence.md say why).
- **One SQLite writer at a time per process, queued in Python.** A store's write transactions
  on SQLite take a lock of the store's (shared by its ``for_tenant`` views) before
  ``BEGIN IMMEDIATE``: the threads of one process wait for each other on it, woken as soon
  as the writer before them commits, instead of in SQLite's busy handler, which sleeps 1, 2,
  5, 10 ms... between tries and retries on a file lock each time (:meth:`_one_writer`).
  Writers in other processes still meet at SQLite's lock, as before. On a file, the
  driver's write transactions (a turn's commit) run on one pooled connection kept for them
  (``statements.KeptWriter``), not one checked out and back in per transaction.
- **Schema by migrations.** Opening a store applies the Alembic revisions up to the head,
  once, under a lock (``pedrag.runtime.store.migrate``).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import (
    ArgumentError,
    DBAPIError,
    DisconnectionError,
    InterfaceError,
    OperationalError,
    SQLAlchemyError,
)
from sqlalchemy.pool import StaticPool

from pedrag.runtime.store.documents import _require_tenant_id, json_text, json_value
from pedrag.runtime.store.errors import StoreError, StoreUnavailable
from pedrag.runtime.store.schema import DEFAULT_TENANT
from pedrag.runtime.store.sqlite_driver import load_vectors, sqlite_dbapi, vectors_unavailable
from pedrag.runtime.store.statements import (
    KeptWriter,
    Statements,
    core_statements,
    driver_read,
    driver_write,
)

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

POOL_SIZE = 15
"""Connections a store's pool keeps open, at most, per process: as many as SQLAlchemy's
default pool allows (5 kept and 10 more while busy), all of them kept.

Why: with the default, a service worker with more than 5 turns in flight (8 clients on one
worker) opened a connection for the sixth and closed it when it came back, about once every
6 turns on PostgreSQL (a new server connection: 0.8 ms of the worker's CPU, and psycopg's
prepared statements lost with it) and every 20 on SQLite (0.55 ms: the pragmas, sqlite-vec
loaded again). Kept, they are opened once per burst's peak; the most a worker holds at once
is unchanged, so a PostgreSQL server's ``max_connections`` needs no more room than before
(``--workers`` times 15). A file's SQLite connections are as many file handles."""

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


# The read transaction a thread holds open in `StoreConnection.reading`, by engine.
_SHARED_READS = threading.local()


class StoreConnection:
    """The engine, the tenant and the transactions of a store; the store's parts extend it."""

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
        self._parent: StoreConnection | None = None  # the store a for_tenant() view shares
        dialect = self._url.get_backend_name()
        if dialect not in _SUPPORTED_DIALECTS:
            raise StoreError(
                f"unsupported database {dialect!r}: pedrag stores sessions in "
                f"{' or '.join(_SUPPORTED_DIALECTS)}"
            )
        self._closed = False
        self._retry_seconds = resolve_retry_seconds()
        # SQLite's writers of this process, one at a time, and on a file their kept
        # connection (the in-memory database's one shared connection is not kept apart).
        self._writers = KeptWriter() if dialect == "sqlite" else None
        self._keeps_writer = dialect == "sqlite" and _is_sqlite_file(self._url)
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
        return f"{type(self).__name__}({self.url!r}, tenant={self._tenant!r})"

    def for_tenant(self, tenant: str) -> Self:
        """A store bound to ``tenant`` on the same database and connection pool (no new
        connection, no migration check). Closing it leaves this store open."""
        bound = object.__new__(type(self))
        bound._url = self._url
        bound._tenant = _require_tenant_id(tenant)
        bound._engine = self._engine
        bound._owns_engine = False
        bound._closed = False
        bound._parent = self
        bound._retry_seconds = self._retry_seconds
        bound._writers = self._writers
        bound._keeps_writer = self._keeps_writer
        return bound

    def ping(self) -> None:
        """Raise :class:`StoreError` unless the database answers (``/readyz``)."""
        with self._errors("reach the session database"):
            with self._transaction(write=False) as connection:
                connection.execute(text("SELECT 1"))

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Release every connection. Idempotent; the store cannot be used afterwards."""
        if not self._closed:
            self._closed = True
            if self._owns_engine:
                if self._writers is not None:
                    with self._one_writer() as held:  # not while a write transaction uses it
                        if held and self._writers.available():
                            self._writers.release()
                self._engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------------

    def _upsert_insert(self) -> Any:
        """The dialect's INSERT that has ``on_conflict_do_update`` (the store's upserts)."""
        return postgresql.insert if self._engine.dialect.name == "postgresql" else sqlite.insert

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Run the reads of this thread inside the block in one read transaction, on one
        pooled connection, with every store of this database (``for_tenant`` views too).

        Why: a request that reads an API key and then a session paid a pool checkout, a
        BEGIN and a COMMIT for each — on SQLite about 0.2 ms of CPU apiece, most of a short
        read. Inside the block each read sees the same snapshot; writes still take their own
        transaction (on SQLite in WAL mode a reader never blocks the writer). Nested blocks
        share the outer transaction."""
        shared = _SHARED_READS.__dict__.setdefault("by_engine", {})
        if self._engine in shared:
            yield
            return
        # Getting the connection, BEGIN and COMMIT fail as any read would (StoreUnavailable
        # when the database cannot be reached); the reads inside translate their own errors.
        with self._errors("read from the session database"):
            with self._transaction(write=False) as connection:
                shared[self._engine] = connection
                try:
                    yield
                finally:
                    del shared[self._engine]

    def _require_open(self) -> None:
        if self._closed or (self._parent is not None and self._parent._closed):
            raise StoreError("the session store is closed")

    @contextmanager
    def _read_statement(self) -> Iterator[Statements]:
        """One read statement, run without a transaction around it (a statement is its own
        snapshot on both databases) on the pooled connection's DB-API connection directly
        (``pedrag.runtime.store.statements``); inside :meth:`reading`, on that block's
        transaction. Driver errors are translated by :meth:`_errors`. Only for a read that is
        a single statement: two statements so run may see two snapshots.

        Why: BEGIN and COMMIT are two round trips on PostgreSQL and two passes through
        SQLAlchemy on either database, and SQLAlchemy's connection and result machinery cost
        more CPU than the driver's work, for the key check every request makes
        (docs/persistence.md)."""
        self._require_open()
        shared = _SHARED_READS.__dict__.get("by_engine")
        if shared and self._engine in shared:
            yield core_statements(shared[self._engine])
            return
        with driver_read(self._connect(raw=True), self._engine.dialect) as statements:
            yield statements

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Connection]:
        """A connection inside a transaction: committed on normal exit, rolled back on any
        exception. ``write`` takes SQLite's write lock at BEGIN (see the module docstring).
        A read inside :meth:`reading` uses that block's transaction."""
        self._require_open()
        if not write:
            shared = _SHARED_READS.__dict__.get("by_engine")
            if shared and self._engine in shared:
                yield shared[self._engine]
                return
        with self._one_writer() if write else nullcontext():
            with self._connect() as connection:
                if write:
                    connection.execution_options(**{_WRITE_TRANSACTION: True})
                with connection.begin():
                    yield connection

    @contextmanager
    def _write_statements(self) -> Iterator[Statements]:
        """A write transaction whose statements run as :class:`Statements` on the pooled
        connection's DB-API connection directly (``pedrag.runtime.store.statements``: the
        turn's commit, where SQLAlchemy's connection cost more CPU than the driver's work).
        Driver errors are translated by :meth:`_errors`."""
        self._require_open()
        with self._one_writer() as held:
            writer = self._writers
            if held and self._keeps_writer and writer is not None and writer.available():
                with writer.transaction(
                    lambda: self._connect(raw=True), self._engine.dialect
                ) as statements:
                    yield statements
                return
            with driver_write(self._connect(raw=True), self._engine.dialect) as statements:
                yield statements

    @contextmanager
    def _one_writer(self) -> Iterator[bool]:
        """On SQLite, hold the store's writer lock for a write transaction (the module
        docstring); nothing on PostgreSQL, whose writers lock rows, not the database.

        Why: eight service turns in flight in one worker met at SQLite's write lock, and its
        busy handler let each wait 13.5 ms on average at ``BEGIN IMMEDIATE`` (0.95 ms queued
        here), where the commit itself takes well under a millisecond; eight threads
        committing turns in a loop spent 122 us of CPU per commit, 81 queued (546 and 518
        with 0.4 ms of Python work between commits, as a turn has). A live server, one
        worker, 8 clients, showed no difference beyond its noise either way (two runs of 12
        and 16 alternated rounds against one without the queue: 3.00 and 2.50 ms of CPU per
        turn against 2.90 and 2.50, 233 and 283 turns/s against 250 and 272).
        Taken before a connection is checked out, so a waiting writer holds no pool slot;
        reentrant, so a write transaction opened inside another on the same thread meets
        SQLite's lock as before. A writer that waited ``BUSY_TIMEOUT_SECONDS`` here goes on to
        SQLite's own wait, whose timeout is the error it always gave. Gives whether the lock is
        held (only then may the kept writer connection be used: ``KeptWriter``)."""
        writers = self._writers
        if writers is None:
            yield False
            return
        held = writers.lock.acquire(timeout=BUSY_TIMEOUT_SECONDS)
        try:
            yield held
        finally:
            if held:
                writers.lock.release()

    def _connect(self, *, raw: bool = False) -> Any:
        """A connection from the pool (``raw``: its pooled DB-API connection); on PostgreSQL,
        a server that cannot be reached is tried again with backoff for
        ``PEDRAG_DB_RETRY_SECONDS`` (a connection idle for ``PING_AFTER_IDLE_SECONDS`` is
        pinged first and replaced if a restart broke it). Only getting the connection is
        retried, never a statement: whether a write whose connection broke mid-commit was
        committed is not knowable here."""
        connect = self._raw_connection if raw else self._engine.connect
        if self._engine.dialect.name == "sqlite" or self._retry_seconds <= 0:
            return connect()
        try:
            # The usual case first: building the retry machinery for every transaction cost
            # more CPU than the connection checkout itself.
            return connect()
        except SQLAlchemyError as error:
            if not _connection_lost(error):
                raise
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
                return connect()
        raise AssertionError("unreachable")  # Retrying either returns or re-raises

    def _raw_connection(self) -> Any:
        """The pool's DB-API connection; a driver error getting it wrapped as
        ``Engine.connect`` wraps it, so the retry and :meth:`_errors` judge it alike."""
        engine = self._engine
        try:
            return engine.raw_connection()
        except engine.dialect.loaded_dbapi.Error as error:
            raise DBAPIError.instance(
                None, None, error, engine.dialect.loaded_dbapi.Error, dialect=engine.dialect
            ) from error

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
        except Exception as error:
            # A statement run on the driver directly (_write_statements): the driver's own
            # error, translated as SQLAlchemy's wrapping of it is above.
            engine = getattr(self, "_engine", None)
            driver = engine.dialect.loaded_dbapi if engine is not None else None
            if driver is None or not isinstance(error, driver.Error):
                raise
            lost = isinstance(error, driver.OperationalError | driver.InterfaceError)
            kind = StoreUnavailable if lost else StoreError
            raise kind(f"could not {action} in {self.url}: {error}") from error


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
        engine = create_engine(url, json_serializer=json_text, pool_size=POOL_SIZE, max_overflow=0)
        _ping_after_idle(engine)
        return engine
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
            json_serializer=json_text,
            json_deserializer=json_value,
            pool_size=POOL_SIZE,
            max_overflow=0,
        )
    else:
        # In-memory: one shared connection, or every pooled connection would see its own
        # empty database. Useful for tests; nothing persists.
        engine = create_engine(
            url,
            module=sqlite_dbapi(),
            connect_args={"check_same_thread": False},
            poolclass=StaticPool,
            json_serializer=json_text,
            json_deserializer=json_value,
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
        options = connection.get_execution_options()
        write = options.get(_WRITE_TRANSACTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


# A pooled PostgreSQL connection idle this long is pinged before use.
PING_AFTER_IDLE_SECONDS = 1.0


def _ping_after_idle(engine: Engine) -> None:
    """Ping a pooled connection before use only when it has sat unused for
    ``PING_AFTER_IDLE_SECONDS``; a failed ping replaces it (SQLAlchemy's pessimistic
    disconnect handling: ``DisconnectionError`` at checkout makes the pool connect again).

    Why not ``pool_pre_ping``: it pays a round trip on every transaction, and a service turn
    runs several. A server restart leaves every connection idle for at least as long as it
    lasts, so they are pinged; a connection used within the last second that the server
    dropped fails its statement once (``StoreUnavailable``, a 503 the client retries) and
    SQLAlchemy then discards the whole pool."""

    @event.listens_for(engine, "checkin")
    def _idle_from(_dbapi_connection: Any, record: Any) -> None:
        record.info["pedrag_idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping_if_idle(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.get("pedrag_idle_since")
        if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE_SECONDS:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)  # what pool_pre_ping runs
        except Exception as error:  # the driver's error: its module varies
            raise DisconnectionError(f"the pooled connection is gone: {error}") from error


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
