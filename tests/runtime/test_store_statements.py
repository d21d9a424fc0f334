"""A turn's commit on SQLite runs on the driver directly (``runtime/store/statements.py``): it
must write exactly the rows SQLAlchemy's execution of the same statements writes, and fail as
the store always has (a translated ``StoreError``, nothing written)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import bindparam, select

from pedrag.runtime.store.schema import audit_records, sessions
from pedrag.runtime.store.session_store import SessionStore, StoreError, TurnConflict
from pedrag.runtime.store.sessions import _ADVANCE, _RECORD
from pedrag.runtime.store.sqlite_driver import sqlite_dbapi
from pedrag.runtime.store.statements import (
    CompiledStatement,
    core_statements,
    driver_read,
    driver_write,
)
from pedrag.runtime.store.tenants import _KEY_AND_SESSION, hash_api_key

NOW = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
STATE = {"turn": 1, "text": "naïve \u2028 ✓", "nested": [{"a": 1.5}, None, True, "x"]}
AUDIT = {"turn": 1, "tutor": "What is 7 times 8?", "scores": [0.25, 3], "empty": {}}


def _rows(path: Path) -> list[Any]:
    connection: sqlite3.Connection = sqlite_dbapi().connect(path)
    try:
        return [
            connection.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in ("pedrag_sessions", "pedrag_audit_records", "pedrag_learner_goals")
        ]
    finally:
        connection.close()


def _commit(store: SessionStore, statements: Any) -> int:
    advanced = statements.rowcount(
        _ADVANCE,
        {
            "b_id": "s1",
            "b_tenant": store.tenant,
            "b_before": 0,
            "b_state": STATE,
            "b_turns": 1,
            "b_now": NOW,
        },
    )
    statements.rowcount(
        _RECORD,
        {
            "session_id": "s1",
            "turn_index": 1,
            "record": AUDIT,
            "created_at": NOW,
            "tenant": store.tenant,
        },
    )
    store._write_learner(
        statements, "ada", {"sums": {"mastery": 0.5, "evidence": 2, "solved": ["a"]}}, NOW
    )
    return int(advanced)


def test_the_driver_writes_the_rows_sqlalchemy_writes_byte_for_byte(tmp_path: Path) -> None:
    written = []
    for name, driver in (("core", False), ("driver", True)):
        path = tmp_path / f"{name}.db"
        with SessionStore(str(path)) as store:
            store.create_learner("ada")
            store.create_session("s1", {"learner_id": "ada"}, {"turn": 0})
            if driver:
                with driver_write(
                    store._engine.raw_connection(), store._engine.dialect
                ) as statements:
                    assert _commit(store, statements) == 1
            else:
                with store._transaction(write=True) as connection:
                    assert _commit(store, core_statements(connection)) == 1
        written.append(_rows(path))
    sessions_core, sessions_driver = written[0][0], written[1][0]
    # created_at of the session is the clock's; everything the turn wrote is compared.
    assert [row[:4] + row[5:] for row in sessions_core] == [
        row[:4] + row[5:] for row in sessions_driver
    ]
    assert written[0][1:] == written[1][1:]
    assert (
        written[1][1][0][2]
        == '{"turn":1,"tutor":"What is 7 times 8?","scores":[0.25,3],"empty":{}}'
    )
    assert written[1][1][0][3] == "2026-03-04 05:06:07.890123"


def test_a_driver_error_mid_transaction_writes_nothing_and_is_a_store_error(
    tmp_path: Path,
) -> None:
    with SessionStore(str(tmp_path / "s.db")) as store:
        a_driver_error_writes_nothing(store, "UNIQUE constraint failed")


def a_driver_error_writes_nothing(store: SessionStore, refusal: str) -> None:
    """A turn's commit on the driver (tests/service/test_postgres.py runs this on PostgreSQL
    too): a statement the database refuses mid-transaction rolls back the ones before it, is
    a translated ``StoreError``, and leaves the pooled connection usable."""
    store.create_session("s1", {}, {"turn": 0})
    store.save_turn("s1", 1, {"turn": 1}, {"turn": 1})
    with pytest.raises(StoreError, match=refusal):
        with (
            store._errors("save"),
            driver_write(store._engine.raw_connection(), store._engine.dialect) as statements,
        ):
            statements.rowcount(
                _ADVANCE,
                {
                    "b_id": "s1",
                    "b_tenant": store.tenant,
                    "b_before": 1,
                    "b_state": {"turn": 2},
                    "b_turns": 2,
                    "b_now": NOW,
                },
            )
            statements.rowcount(  # turn 1's record again: the primary key refuses it
                _RECORD,
                {
                    "session_id": "s1",
                    "turn_index": 1,
                    "record": {},
                    "created_at": NOW,
                    "tenant": store.tenant,
                },
            )
    assert store.load_session("s1") == ({}, {"turn": 1}, 1)  # the update was rolled back
    assert store.audit_records("s1") == [{"turn": 1}]
    with pytest.raises(TurnConflict):  # a conflict's diagnosis runs on the driver too
        store.save_turn("s1", 3, {"turn": 3}, {"turn": 3})
    store.save_turn("s1", 2, {"turn": 2}, {"turn": 2})  # the pooled connection still works
    assert store.load_session("s1")[1:] == ({"turn": 2}, 2)


def test_a_compiled_statement_needs_every_value_it_does_not_hold(tmp_path: Path) -> None:
    with SessionStore(str(tmp_path / "s.db")) as store:
        query = select(sessions.c.turns).where(sessions.c.id == bindparam("b_id"))
        form = CompiledStatement.of(query, store._engine.dialect)
        assert form.values({"b_id": "s1"}) == ("s1",)
        with pytest.raises(KeyError, match="b_id"):
            form.values({})
        # A literal in the statement (the version's + 1) is its own default.
        advance = CompiledStatement.of(_ADVANCE, store._engine.dialect)
        assert [name for name, _, _ in advance.parameters].count("version_1") == 1
        assert (
            audit_records.c.record.name in CompiledStatement.of(_RECORD, store._engine.dialect).sql
        )


def test_a_read_on_the_driver_gives_the_row_sqlalchemy_gives(tmp_path: Path) -> None:
    with SessionStore(str(tmp_path / "s.db")) as store:
        driver_row_is_sqlalchemys(store)


def driver_row_is_sqlalchemys(store: SessionStore) -> None:
    """``key_with_session`` reads on the driver (``driver_read``; tests/service/
    test_postgres.py runs this on PostgreSQL too): every column of its row, JSON documents,
    timestamps and floats included, must come back as SQLAlchemy's execution of the same
    statement gives it, and a revoked key's timestamp too."""
    store.tenants.create("acme", max_usd=2.5, retention_days=7)
    key = store.tenants.issue_key("acme", "a label", role="instructor")
    acme = store.for_tenant("acme")
    acme.create_session("s1", {"curriculum": "intro", "x": [1.5, None]}, {"text": STATE})
    acme.save_turn("s1", 1, {"n": 1, "text": "naïve ✓"}, AUDIT)
    found = store.tenants.key(key)
    assert found is not None and store.tenants.revoke_key(found.id)
    for session_id in ("s1", "nope"):
        values = {"b_hash": hash_api_key(key), "b_session": session_id}
        with store._transaction(write=False) as connection:
            core = core_statements(connection).row(_KEY_AND_SESSION, values)
        with driver_read(store._engine.raw_connection(), store._engine.dialect) as statements:
            driver = statements.row(_KEY_AND_SESSION, values)
        assert core is not None and driver is not None
        assert driver._asdict() == core._asdict()
        assert [type(value) for value in driver] == [type(value) for value in core]
    assert driver.revoked_at is not None and driver.max_usd == 2.5 and driver.turns is None
    with driver_read(store._engine.raw_connection(), store._engine.dialect) as statements:
        assert statements.row(_KEY_AND_SESSION, {"b_hash": "none", "b_session": "s1"}) is None


def test_a_read_of_more_than_one_row_is_a_store_error(tmp_path: Path) -> None:
    with SessionStore(str(tmp_path / "s.db")) as store:
        store.create_session("s1", {}, {"turn": 0})
        store.create_session("s2", {}, {"turn": 0})
        with pytest.raises(StoreError, match="more than one row"):
            with (
                store._errors("read"),
                driver_read(store._engine.raw_connection(), store._engine.dialect) as statements,
            ):
                statements.row(select(sessions.c.turns), {})
