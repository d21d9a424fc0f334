"""The store keeps tenants apart, deletes a learner's data, applies retention, and migrates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from pedrag.runtime.store.migrate import HEAD, script_directory
from pedrag.runtime.store.schema import rate_windows
from pedrag.runtime.store.session_store import (
    LearnerNotFound,
    SessionNotFound,
    SessionStore,
    StoreError,
    TurnConflict,
    hash_api_key,
)
from pedrag.runtime.store.sqlite_driver import sqlite_dbapi


@pytest.fixture()
def store(tmp_path: Path) -> SessionStore:
    with SessionStore(str(tmp_path / "db.sqlite")) as opened:
        yield opened


def test_head_constant_is_the_head_of_the_shipped_revisions() -> None:
    assert script_directory().get_current_head() == HEAD


def test_a_tenant_sees_none_of_another_tenants_rows(store: SessionStore) -> None:
    a, b = store.for_tenant("a"), store.for_tenant("b")
    a.create_learner("ana")
    a.create_session("s1", {"learner_id": "ana"}, {"n": 0})
    a.save_turn("s1", 1, {"n": 1}, {"turn": 1})
    a.add_spend("deployment", 0.25)

    with pytest.raises(SessionNotFound):
        b.load_session("s1")
    with pytest.raises(SessionNotFound):
        b.audit_records("s1")
    with pytest.raises(SessionNotFound):
        b.save_turn("s1", 2, {"n": 2}, {"turn": 2})
    with pytest.raises(SessionNotFound):
        b.set_state("s1", 1, {"n": 9})
    with pytest.raises(LearnerNotFound):
        b.load_learner("ana")
    with pytest.raises(LearnerNotFound):
        b.delete_learner("ana")
    with pytest.raises(LearnerNotFound):  # cannot attach a session to another tenant's learner
        b.create_session("s2", {"learner_id": "ana"}, {})
    assert b.list_sessions() == []
    assert b.spend("deployment") == 0.0
    assert store.list_sessions() == []  # the default tenant is a tenant like any other
    # ... and tenant a still has everything, untouched.
    assert a.load_session("s1") == ({"learner_id": "ana"}, {"n": 1}, 1)
    assert a.audit_records("s1") == [{"turn": 1}]
    assert a.spend("deployment") == 0.25


def test_set_state_is_a_compare_and_set_on_the_turn_count(store: SessionStore) -> None:
    store.create_session("s", {}, {"v": 0})
    store.save_turn("s", 1, {"v": 1}, {})
    with pytest.raises(TurnConflict):
        store.set_state("s", 0, {"v": "stale"})
    store.set_state("s", 1, {"v": "toggled"})
    assert store.load_session("s")[1:] == ({"v": "toggled"}, 1)


def test_deleting_a_learner_removes_their_sessions_and_audit_and_nothing_else(
    store: SessionStore,
) -> None:
    store.create_learner("ana")
    store.create_learner("ben")
    for session_id, learner in (("a1", "ana"), ("a2", "ana"), ("b1", "ben")):
        store.create_session(session_id, {"learner_id": learner}, {})
        store.save_turn(session_id, 1, {}, {"who": learner})
    assert store.load_learner("ana")["sessions"] == 2
    assert store.delete_learner("ana") == 2
    with pytest.raises(LearnerNotFound):
        store.load_learner("ana")
    for gone in ("a1", "a2"):
        with pytest.raises(SessionNotFound):
            store.audit_records(gone)
    assert store.audit_records("b1") == [{"who": "ben"}]
    raw = sqlite_dbapi().connect(store.url.removeprefix("sqlite+pysqlite:///"))
    left = raw.execute("SELECT session_id FROM pedrag_audit_records").fetchall()
    assert left == [("b1",)]


def test_retention_purges_only_sessions_idle_longer_than_the_setting(store: SessionStore) -> None:
    store.create_session("old", {}, {})
    store.create_session("new", {}, {})
    other = store.for_tenant("other")
    other.create_session("theirs", {}, {})
    later = datetime.now(UTC) + timedelta(days=10)
    assert store.purge_expired(30, now=later) == 0
    store.save_turn("new", 1, {}, {})
    assert store.purge_expired(9, now=later) == 2  # both are 10 days idle at `later`
    assert other.load_session("theirs")[2] == 0  # another tenant's retention is its own
    with pytest.raises(StoreError):
        store.purge_expired(-1)


def test_api_keys_are_stored_hashed_and_map_to_their_tenant(store: SessionStore) -> None:
    store.tenants.create("acme", "Acme", requests_per_minute=5)
    key = store.tenants.issue_key("acme")
    assert store.tenants.authenticate(key).id == "acme"  # type: ignore[union-attr]
    assert store.tenants.authenticate(key + "x") is None
    raw = sqlite_dbapi().connect(store.url.removeprefix("sqlite+pysqlite:///"))
    tables = [name for (name,) in raw.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    dump = "\n".join(repr(raw.execute(f'SELECT * FROM "{name}"').fetchall()) for name in tables)
    assert key not in dump and hash_api_key(key) in dump
    with pytest.raises(StoreError, match="no tenant"):
        store.tenants.issue_key("nobody")


def test_a_keys_check_and_its_tenants_session_come_in_one_statement(store: SessionStore) -> None:
    key_with_session_reads_only_the_keys_tenant(store)


def key_with_session_reads_only_the_keys_tenant(store: SessionStore) -> None:
    """``key_with_session`` (a service turn's first read; tests/service/test_postgres.py runs
    it on PostgreSQL too): the key's record as ``key`` gives it, and the session only when it
    is of the key's tenant, in one statement and outside any transaction (no BEGIN, COMMIT)."""
    from sqlalchemy import event

    def in_transaction(dbapi_connection: Any) -> bool:
        if hasattr(dbapi_connection, "autocommit"):  # psycopg: BEGIN goes with the statement
            return not dbapi_connection.autocommit
        return bool(dbapi_connection.in_transaction)  # pysqlite: BEGIN was run already

    store.tenants.create("acme", max_usd=2.5)
    store.tenants.create("other")
    key, other_key = store.tenants.issue_key("acme"), store.tenants.issue_key("other")
    acme = store.for_tenant("acme")
    acme.create_session("s1", {"curriculum": "intro"}, {"n": 0})
    acme.save_turn("s1", 1, {"n": 1}, {"turn": 1})
    statements: list[tuple[str, bool]] = []
    traced: list[tuple[Any, Any]] = []

    def tracing(dbapi_connection: Any, *_: Any) -> None:
        # The statement runs on the driver directly (runtime/store/statements.py), past
        # SQLAlchemy's events: SQLite's own trace sees every statement it runs (BEGIN too);
        # psycopg's cursors are made to record theirs (its BEGIN goes with a statement).
        def record(sql: Any) -> None:
            statements.append((str(sql), in_transaction(dbapi_connection)))

        if hasattr(dbapi_connection, "set_trace_callback"):
            traced.append((dbapi_connection, None))
            dbapi_connection.set_trace_callback(record)
            return
        factory = dbapi_connection.cursor_factory
        traced.append((dbapi_connection, factory))

        class Recording(factory):  # type: ignore[misc, valid-type]
            def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
                record(query)
                return super().execute(query, *args, **kwargs)

        dbapi_connection.cursor_factory = Recording

    event.listen(store._engine, "checkout", tracing)
    found, stored = store.tenants.key_with_session(key, "s1")
    event.remove(store._engine, "checkout", tracing)
    for dbapi_connection, factory in traced:
        if factory is None:
            dbapi_connection.set_trace_callback(None)
        else:
            dbapi_connection.cursor_factory = factory
    assert len(statements) == 1 and statements[0][0].lstrip().startswith("SELECT")
    assert statements[0][1] is False
    assert found == store.tenants.key(key)
    assert found is not None and found.tenant.max_usd == 2.5 and found.role == "learner"
    assert stored == acme.read_session("s1")
    assert stored is not None and (stored.meta, stored.state, stored.turns) == (
        {"curriculum": "intro"},
        {"n": 1},
        1,
    )
    # Another tenant's session is as unknown as none; the key is still checked.
    found, stored = store.tenants.key_with_session(other_key, "s1")
    assert found is not None and found.tenant.id == "other" and stored is None
    assert store.tenants.key_with_session(key, "nope")[1] is None
    assert store.tenants.key_with_session(key + "x", "s1") == (None, None)
    # A revoked key comes back revoked (the service refuses it: 401, not 404).
    assert found is not None and store.tenants.revoke_key(found.id)
    found, stored = store.tenants.key_with_session(other_key, "s1")
    assert found is not None and found.revoked_at is not None


def test_request_counts_are_per_tenant_and_per_minute(store: SessionStore) -> None:
    a, b = store.for_tenant("a"), store.for_tenant("b")
    assert [a.count_request(100) for _ in range(3)] == [1, 2, 3]
    assert b.count_request(100) == 1
    assert a.count_request(101) == 1


def test_a_minutes_first_request_drops_its_tenants_windows_before_the_last_minute(
    store: SessionStore,
) -> None:
    request_windows_are_dropped_when_old(store)


def request_windows_are_dropped_when_old(store: SessionStore) -> None:
    """The rate limit's windows (tests/service/test_postgres.py runs this on PostgreSQL
    too): the first request of a minute drops the tenant's windows older than the minute
    before it, and only the tenant's; a later request of the same minute drops nothing."""
    a, b = store.for_tenant("a"), store.for_tenant("b")
    for minute in (100, 101, 102):
        a.count_request(minute)
        b.count_request(minute)

    def windows() -> list[tuple[str, int, int]]:
        with store._transaction(write=False) as connection:
            rows = connection.execute(select(rate_windows).order_by("tenant", "minute"))
            return [(row.tenant, row.minute, row.requests) for row in rows]

    assert windows() == [("a", 101, 1), ("a", 102, 1), ("b", 101, 1), ("b", 102, 1)]
    assert a.count_request(104) == 1  # drops a's windows before 103
    assert windows() == [("a", 104, 1), ("b", 101, 1), ("b", 102, 1)]
    assert a.count_request(104) == 2
    assert a.count_request(103) == 1  # a late request: its window's first, dropping nothing new
    assert windows() == [("a", 103, 1), ("a", 104, 2), ("b", 101, 1), ("b", 102, 1)]


def test_a_database_from_before_migrations_is_upgraded_keeping_its_sessions(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    raw = sqlite_dbapi().connect(path)
    raw.executescript(
        """
        CREATE TABLE pedrag_sessions (id VARCHAR(128) PRIMARY KEY, meta JSON NOT NULL,
            state JSON NOT NULL, turns INTEGER NOT NULL, created_at DATETIME NOT NULL,
            updated_at DATETIME NOT NULL);
        CREATE INDEX ix_pedrag_sessions_updated_at ON pedrag_sessions (updated_at);
        CREATE TABLE pedrag_audit_records (session_id VARCHAR(128) NOT NULL
            REFERENCES pedrag_sessions (id) ON DELETE CASCADE, turn_index INTEGER NOT NULL,
            record JSON NOT NULL, created_at DATETIME NOT NULL,
            PRIMARY KEY (session_id, turn_index));
        CREATE TABLE pedrag_spend (scope VARCHAR(200) PRIMARY KEY, usd FLOAT NOT NULL,
            updated_at DATETIME NOT NULL);
        INSERT INTO pedrag_sessions VALUES ('s', '{"theory": "socratic"}', '{"x": 1}', 1,
            '2026-01-01 00:00:00', '2026-01-01 00:00:00');
        INSERT INTO pedrag_audit_records VALUES ('s', 1, '{"turn": 1}', '2026-01-01 00:00:00');
        INSERT INTO pedrag_spend VALUES ('deployment', 1.5, '2026-01-01 00:00:00');
        """
    )
    raw.commit()
    raw.close()
    with SessionStore(str(path)) as store:
        assert store.load_session("s") == ({"theory": "socratic"}, {"x": 1}, 1)
        assert store.audit_records("s") == [{"turn": 1}]
        assert store.spend("deployment") == 1.5
        store.save_turn("s", 2, {"x": 2}, {"turn": 2})
    version = (
        sqlite_dbapi().connect(path).execute("SELECT version_num FROM alembic_version").fetchall()
    )
    assert version == [(HEAD,)]


def test_learner_ids_are_per_tenant_so_no_id_of_another_tenant_is_revealed(
    store: SessionStore,
) -> None:
    a, b = store.for_tenant("a"), store.for_tenant("b")
    a.create_learner("bob", {"school": "a"})
    b.create_learner("bob", {"school": "b"})  # no 409: b learns nothing about a's ids
    assert a.load_learner("bob")["meta"] == {"school": "a"}
    assert b.load_learner("bob")["meta"] == {"school": "b"}
    a.create_session("s-a", {"learner_id": "bob"}, {})
    assert a.delete_learner("bob") == 1
    assert b.load_learner("bob")["meta"] == {"school": "b"}  # b's bob untouched
    with pytest.raises(LearnerNotFound):
        a.load_learner("bob")


def test_learners_of_revision_0007_are_kept_when_ids_become_per_tenant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pedrag.runtime.store import migrate

    path = str(tmp_path / "0007.sqlite")
    monkeypatch.setattr(migrate, "HEAD", "0007")
    with SessionStore(path) as old:
        old.for_tenant("a").create_learner("ana", {"n": 1})
        old.for_tenant("b").create_learner("bea", {"n": 2})
    monkeypatch.setattr(migrate, "HEAD", HEAD)
    with SessionStore(path) as new:
        assert new.for_tenant("a").load_learner("ana")["meta"] == {"n": 1}
        assert new.for_tenant("b").load_learner("bea")["meta"] == {"n": 2}
        new.for_tenant("b").create_learner("ana")
    version = sqlite_dbapi().connect(path).execute("SELECT version_num FROM alembic_version")
    assert version.fetchall() == [(HEAD,)]
