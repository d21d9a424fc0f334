"""The store's hot statements (a turn's commit, a service turn's key-and-session read), run on
the database's DB-API connection directly.

Runtime stage: persistence. Takes SQLAlchemy Core statements (the store's own, built once in
its modules) and their bound values; gives :class:`Statements`, what a write transaction or a
single read of the store runs them through: each statement compiled once to its SQL text and
parameters (positional on SQLite, by name on psycopg; with the column types' own bind
processors, so JSON columns get the store's ``json_text`` and timestamps SQLAlchemy's text,
byte for byte, and for a read the types' own result processors) and executed on a pooled
DB-API cursor: a write inside ``BEGIN IMMEDIATE`` ... ``COMMIT`` on SQLite, inside the
transaction psycopg begins with its first statement on PostgreSQL; a read with no transaction
around it. :func:`core_statements` runs them through a SQLAlchemy connection instead (a
read inside ``StoreConnection.reading``, an instructor's toggle). :class:`KeptWriter` is a
SQLite store's writer: its lock and the one pooled connection its driver writes run on.

Why: a committed turn is two statements. Through SQLAlchemy's connection, on SQLite, the
transaction alone (pool checkout, the ``begin`` hook, commit, the connection's events) cost
about 110 us of CPU and each statement about 50 us more, where the driver itself takes about 65
us for the whole transaction (``docs/runtime.md``, "Overhead"). The statements, their
compare-and-set and their errors are the store's unchanged (on PostgreSQL, a turn's commit 350
-> 252 us of CPU with a 14 kB state, the key-and-session read 214 -> 122 us: psycopg's own work
is the rest): the SQL is SQLAlchemy's compiled form of the same Core statement, and driver
errors reach the store's one translation into :class:`~pedrag.runtime.store.errors.StoreError`
(``StoreConnection._errors``).
"""

from __future__ import annotations

import functools
import threading
from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy import Connection
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import MultipleResultsFound
from sqlalchemy.sql.expression import Executable

_REQUIRED = object()


class Statements(Protocol):
    """What a write transaction runs its statements through."""

    def rowcount(self, statement: Executable, values: Mapping[str, Any]) -> int:
        """Run ``statement``; how many rows it changed."""
        ...

    def scalar(self, statement: Executable, values: Mapping[str, Any]) -> Any:
        """Run ``statement``; the first column of its first row, or None for no row."""
        ...

    def row(self, statement: Executable, values: Mapping[str, Any]) -> Any:
        """Run ``statement``; its only row (its columns by name), or None for no row."""
        ...


@dataclass(frozen=True)
class CompiledStatement:
    """A Core statement compiled for one dialect with a positional parameter style: its SQL
    text and, in order, each parameter's name, its value when none is given (a literal in
    the statement; required otherwise) and the column type's bind processor; for a SELECT,
    its result columns' result processors and the type of its rows (columns by name)."""

    sql: str
    parameters: tuple[tuple[str, Any, Callable[[Any], Any] | None], ...]
    results: tuple[Any, ...] = ()  # the result columns' types, for the dialect
    row_type: Any = None
    positional: bool = True  # False: the parameters go by name (psycopg's pyformat)
    # The result processors, from the cursor's column type codes at the first row (psycopg's
    # depend on them; a statement's columns keep their types): kept, since reading a psycopg
    # cursor's description builds an object per column.
    processors: list[tuple[Callable[[Any], Any] | None, ...]] = field(
        default_factory=list, compare=False
    )

    @classmethod
    def of(cls, statement: Executable, dialect: Dialect) -> CompiledStatement:
        compiled = statement.compile(dialect=dialect)  # type: ignore[attr-defined]
        positional = compiled.positiontup is not None
        if not positional and (dialect.paramstyle != "pyformat" or compiled.escaped_bind_names):
            raise ValueError(f"dialect {dialect.name!r} takes neither positional nor plain names")
        parameters = []
        for name in compiled.positiontup if positional else compiled.binds:
            bind = compiled.binds[name]
            default = _REQUIRED if bind.required else bind.effective_value
            process = bind.type.dialect_impl(dialect).bind_processor(dialect)
            parameters.append((name, default, process))
        columns = compiled._result_columns  # what SQLAlchemy's own result processing reads
        results = tuple(column[3].dialect_impl(dialect) for column in columns)
        row_type = namedtuple("Row", [column[0] for column in columns]) if columns else None
        return cls(compiled.string, tuple(parameters), results, row_type, positional)

    def row(self, fetched: tuple[Any, ...] | None, cursor: Any, dialect: Dialect) -> Any:
        """A row fetched from ``cursor`` with its columns processed as SQLAlchemy would (each
        type's result processor for the cursor's column type), named as its ``Row``'s are
        (``row.turns``); None for no row."""
        if fetched is None:
            return None
        if not self.processors:
            codes = [column[1] for column in cursor.description]
            self.processors.append(
                tuple(
                    kind.result_processor(dialect, code)
                    for kind, code in zip(self.results, codes, strict=True)
                )
            )
        return self.row_type._make(
            value if process is None else process(value)
            for value, process in zip(fetched, self.processors[0], strict=True)
        )

    def values(self, given: Mapping[str, Any]) -> tuple[Any, ...] | dict[str, Any]:
        """The DB-API parameters for ``given`` (by name), processed as SQLAlchemy would: in
        order, or by name for a dialect that takes them so."""
        values = []
        for name, default, process in self.parameters:
            value = given.get(name, default)
            if value is _REQUIRED:
                raise KeyError(f"no value for the statement's parameter {name!r}")
            values.append(value if process is None else process(value))
        if not self.positional:
            return {
                name: value for (name, _, _), value in zip(self.parameters, values, strict=True)
            }
        return tuple(values)


@functools.lru_cache(maxsize=64)
def compiled_form(statement: Executable, dialect: Dialect) -> CompiledStatement:
    """The compiled form of one of the store's statements, kept: they are module constants
    with their values bound by name, never built per call (so the cache holds a few)."""
    return CompiledStatement.of(statement, dialect)


class _DriverStatements:
    """Statements on a DB-API cursor inside a transaction the caller began."""

    def __init__(self, cursor: Any, dialect: Dialect) -> None:
        self._cursor = cursor
        self._dialect = dialect

    def _execute(self, statement: Executable, values: Mapping[str, Any]) -> Any:
        form = compiled_form(statement, self._dialect)
        return self._cursor.execute(form.sql, form.values(values))

    def row(self, statement: Executable, values: Mapping[str, Any]) -> Any:
        form = compiled_form(statement, self._dialect)
        cursor = self._cursor.execute(form.sql, form.values(values))
        first = cursor.fetchone()
        if first is not None and cursor.fetchone() is not None:
            raise MultipleResultsFound("the statement gave more than one row")  # one_or_none's
        return form.row(first, cursor, self._dialect)

    def rowcount(self, statement: Executable, values: Mapping[str, Any]) -> int:
        return int(self._execute(statement, values).rowcount)

    def scalar(self, statement: Executable, values: Mapping[str, Any]) -> Any:
        row = self._execute(statement, values).fetchone()
        return None if row is None else row[0]


class _CoreStatements:
    """Statements on a SQLAlchemy connection inside its transaction."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def rowcount(self, statement: Executable, values: Mapping[str, Any]) -> int:
        return int(self._connection.execute(statement, dict(values)).rowcount)  # type: ignore[attr-defined]

    def scalar(self, statement: Executable, values: Mapping[str, Any]) -> Any:
        return self._connection.execute(statement, dict(values)).scalar_one_or_none()

    def row(self, statement: Executable, values: Mapping[str, Any]) -> Any:
        return self._connection.execute(statement, dict(values)).one_or_none()  # type: ignore[attr-defined]


def core_statements(connection: Connection) -> Statements:
    return _CoreStatements(connection)


@contextmanager
def driver_read(pooled: Any, dialect: Dialect) -> Iterator[Statements]:
    """One read statement on ``pooled`` (a pooled DB-API connection, given back to the pool
    afterwards) outside any transaction, as the store's ``_read_statement`` runs it: SQLite's
    connections are in autocommit already; a psycopg connection is put in autocommit for the
    statement (no BEGIN, no COMMIT: two round trips) and out of it before it goes back. Give
    it only statements built once (module constants): their compiled forms are kept."""
    try:
        driver = pooled.driver_connection
        switch = dialect.name == "postgresql"
        if switch:
            driver.autocommit = True
        try:
            cursor = pooled.cursor()
            try:
                yield _DriverStatements(cursor, dialect)
            finally:
                cursor.close()
        finally:
            if switch:
                try:
                    driver.autocommit = False
                except Exception:  # a broken connection: never back to the pool in autocommit
                    pooled.invalidate()
    finally:
        pooled.close()  # back to the pool


class KeptWriter:
    """A SQLite store's writer connection, checked out of its pool once and kept for the
    store's write transactions on the driver (a turn's commit), with the lock that makes them
    one at a time in the process (the store's ``_one_writer``; shared by its ``for_tenant``
    views).

    Why: each such transaction checked a connection out of SQLAlchemy's pool and back in (its
    events, its reset-on-return ``ROLLBACK``): about 10 us of CPU alone and 100 us and more in a
    loaded turn, as much as SQLite's own ``UPDATE`` of the state. Writes are one at a time
    anyway, so one connection serves them all. The transaction is the same (``BEGIN
    IMMEDIATE`` ... ``COMMIT`` on a connection of the same pool, pragmas and all), so nothing
    about durability or isolation changes; a transaction that fails in any way gives the
    connection back to the pool (reset there, as before) and the next write takes another."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._pooled: Any = None
        self._busy = False  # a write transaction on the kept connection is open (this thread)

    def available(self) -> bool:
        """Whether a write transaction may use the kept connection: not while one is open on
        it (a write inside a write, on the thread holding the lock)."""
        return not self._busy

    @contextmanager
    def transaction(self, connect: Callable[[], Any], dialect: Dialect) -> Iterator[Statements]:
        """:func:`driver_write`'s transaction on the kept connection (``connect`` gives the
        pool's when none is kept). Only with :attr:`lock` held and :meth:`available`."""
        pooled = self._pooled
        if pooled is None:
            pooled = self._pooled = connect()
        self._busy = True
        try:
            with _transaction(pooled, dialect) as statements:
                yield statements
        except BaseException:
            self.release()  # back to the pool, reset there: the next write takes another
            raise
        finally:
            self._busy = False

    def release(self) -> None:
        """Give the kept connection back to the pool (a failed transaction, the store closing)."""
        pooled, self._pooled = self._pooled, None
        if pooled is not None:
            pooled.close()


@contextmanager
def driver_write(pooled: Any, dialect: Dialect) -> Iterator[Statements]:
    """A write transaction on ``pooled`` (a pooled DB-API connection, given back to the pool
    afterwards): on SQLite its write lock taken at ``BEGIN IMMEDIATE`` (as the store's
    ``begin`` hook does for every write), on PostgreSQL begun by psycopg with the first
    statement, as SQLAlchemy's transactions are; committed on normal exit, rolled back on any
    exception. Give it only statements built once (module constants): their compiled forms
    are kept."""
    try:
        with _transaction(pooled, dialect) as statements:
            yield statements
    finally:
        pooled.close()  # back to the pool


@contextmanager
def _transaction(pooled: Any, dialect: Dialect) -> Iterator[Statements]:
    """The one write transaction both writers run (``driver_write``, ``KeptWriter``): begun
    (``BEGIN IMMEDIATE`` on SQLite), committed on normal exit, rolled back on any exception."""
    cursor = pooled.cursor()
    try:
        if dialect.name == "sqlite":
            cursor.execute("BEGIN IMMEDIATE")
        try:
            yield _DriverStatements(cursor, dialect)
        except BaseException:
            pooled.rollback()
            raise
        pooled.commit()
    finally:
        cursor.close()
