"""A SQLite store's write transactions on the driver run on one kept connection
(``statements.KeptWriter``): checked out of the pool once, not per turn; given back to the
pool by any transaction that fails, so a failure leaves nothing open and the next write takes
a fresh connection; given back when the store closes; never shared by two transactions at once
(a write inside a write on the same thread takes the pool's)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from pedrag.runtime.store.session_store import SessionStore, StoreError, TurnConflict
from pedrag.runtime.store.sqlite_driver import sqlite_dbapi


def _checkouts(store: SessionStore) -> list[int]:
    """The ids of the DB-API connections the store's pool hands out, in order."""
    seen: list[int] = []
    event.listen(
        store._engine, "checkout", lambda connection, _record, _proxy: seen.append(id(connection))
    )
    return seen


def test_a_stores_turns_check_the_writer_connection_out_once_not_per_turn(tmp_path: Path) -> None:
    with SessionStore(str(tmp_path / "s.db")) as store:
        store.create_session("s1", {}, {"turn": 0})
        seen = _checkouts(store)
        for turn in range(1, 21):
            store.save_turn("s1", turn, {"turn": turn}, {"turn": turn})
        assert len(seen) == 1
        assert store.load_session("s1")[1:] == ({"turn": 20}, 20)
        assert [record["turn"] for record in store.audit_records("s1")] == list(range(1, 21))


def test_a_failed_turn_gives_the_connection_back_and_the_next_turn_commits(
    tmp_path: Path,
) -> None:
    """A conflict (a statement's outcome) and a driver error inside the transaction both roll
    back and give the kept connection back to the pool: nothing of the failed turn is written,
    no transaction stays open on the connection, and the next turn commits on another."""
    with SessionStore(str(tmp_path / "s.db")) as store:
        store.create_session("s1", {}, {"turn": 0})
        store.save_turn("s1", 1, {"turn": 1}, {"turn": 1})
        with pytest.raises(TurnConflict):
            store.save_turn("s1", 3, {"turn": 3}, {"turn": 3})
        assert store._writers is not None and store._writers._pooled is None
        store.save_turn("s1", 2, {"turn": 2}, {"turn": 2})
        # A record for turn 3 already there (the tables edited behind the store's back): the
        # insert fails after the update ran; both are rolled back.
        with sqlite_dbapi().connect(str(tmp_path / "s.db")) as raw:
            raw.execute(
                "INSERT INTO pedrag_audit_records (session_id, turn_index, record, created_at,"
                " tenant) VALUES ('s1', 3, '{}', '2026-01-01 00:00:00', 'default')"
            )
        with pytest.raises(StoreError):
            store.save_turn("s1", 3, {"turn": 3}, {"turn": 3})
        assert store._writers._pooled is None
        assert store.load_session("s1")[1:] == ({"turn": 2}, 2)
        # Another connection can write at once: the failed turns left no transaction open.
        with sqlite_dbapi().connect(str(tmp_path / "s.db"), timeout=0) as raw:
            raw.execute("BEGIN IMMEDIATE")
            raw.execute("ROLLBACK")


def test_closing_the_store_gives_the_kept_connection_back(tmp_path: Path) -> None:
    closed: list[int] = []
    store = SessionStore(str(tmp_path / "s.db"))
    event.listen(store._engine, "close", lambda connection, _record: closed.append(1))
    store.create_session("s1", {}, {"turn": 0})
    store.save_turn("s1", 1, {"turn": 1}, {"turn": 1})
    assert store._writers is not None and store._writers._pooled is not None
    store.close()
    assert store._writers._pooled is None
    assert closed, "the pool closed no connection: the kept one was not given back"


def test_a_write_inside_a_write_on_the_same_thread_does_not_share_the_kept_connection(
    tmp_path: Path,
) -> None:
    """A write transaction opened inside one on the kept connection (the writer lock is
    reentrant) gets the pool's connection and meets SQLite's lock, as before: it never runs
    its statements inside the outer transaction."""
    with SessionStore(str(tmp_path / "s.db")) as store:
        store.create_session("s1", {}, {"turn": 0})
        store.save_turn("s1", 1, {"turn": 1}, {"turn": 1})
        event.listen(
            store._engine,
            "checkout",
            lambda connection, _record, _proxy: connection.execute("PRAGMA busy_timeout = 0"),
        )
        inner: list[BaseException] = []
        with store._write_statements():
            try:
                store.save_turn("s1", 2, {"turn": 2}, {"turn": 2})
            except StoreError as error:
                inner.append(error)
        assert len(inner) == 1 and "locked" in str(inner[0])
        assert store.load_session("s1")[2] == 1
        store.save_turn("s1", 2, {"turn": 2}, {"turn": 2})
        assert store.load_session("s1")[2] == 2


def test_views_of_other_tenants_share_the_kept_connection_one_writer_at_a_time(
    tmp_path: Path,
) -> None:
    with SessionStore(str(tmp_path / "s.db")) as store:
        views = [store.for_tenant(name) for name in ("acme", "globex", "initech")]
        for view in views:
            view.create_session(view.tenant, {}, {"turn": 0})
        seen = _checkouts(store)
        errors: list[BaseException] = []

        def turns(view: Any) -> None:
            try:
                for turn in range(1, 31):
                    view.save_turn(view.tenant, turn, {"turn": turn}, {"turn": turn})
            except BaseException as error:  # noqa: BLE001 (reported below)
                errors.append(error)

        threads = [threading.Thread(target=turns, args=(view,)) for view in views]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert len(seen) == 1
        for view in views:
            assert view.load_session(view.tenant)[2] == 30
            assert len(view.audit_records(view.tenant)) == 30
