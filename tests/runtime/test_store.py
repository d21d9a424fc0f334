"""Session persistence on SQLite: a turn is one transaction, turn indexes cannot interleave,
and a process SIGKILLed mid-turn leaves the last committed turn intact.

Concurrency is tested with real separate connections (threads with their own stores) and real
separate processes; crash safety by killing a real subprocess at random moments.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import event

from pedrag.runtime.store.connection import POOL_SIZE
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.store.session_store import (
    ENV_DB,
    ENV_SYNCHRONOUS,
    SessionNotFound,
    SessionStore,
    StoreError,
    TurnConflict,
    resolve_db_url,
)
from pedrag.runtime.store.sqlite_driver import sqlite_dbapi
from pedrag.runtime.store.tenants import _KEY, hash_api_key


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "sessions.db"


@pytest.fixture
def store(db_path: Path) -> Any:
    with SessionStore(str(db_path)) as opened:
        yield opened


def _raw(db_path: Path) -> sqlite3.Connection:
    """An independent connection that does not go through the store's code (with the
    store's SQLite library: two copies of SQLite must not open one file in a process)."""
    connection: sqlite3.Connection = sqlite_dbapi().connect(db_path)
    return connection


# -- round trip -------------------------------------------------------------------------------


def test_reads_inside_reading_share_one_transaction(store: SessionStore) -> None:
    """`reading()`: an API key's check and a session's read (what a service turn does) take
    one pooled connection and one transaction, for every store on the database; a write
    inside the block still commits on its own."""
    from sqlalchemy import event

    store.tenants.create("t")
    key = store.tenants.issue_key("t")
    bound = store.for_tenant("t")
    bound.create_session("s1", {}, {})
    checkouts: list[object] = []
    event.listen(store._engine, "checkout", lambda *args: checkouts.append(args))
    with store.reading():
        assert store.tenants.key(key) is not None
        with bound.reading():  # nested: the same transaction
            assert bound.read_session("s1").turns == 0
        assert len(checkouts) == 1
        assert bound.add_spend("deployment", 0.5) == 0.5  # a write: its own transaction
    assert len(checkouts) == 2
    assert bound.spend("deployment") == 0.5
    store.tenants.key(key)
    bound.read_session("s1")
    assert len(checkouts) == 5  # outside the block, a transaction per read (spend too)


def test_saved_turns_come_back_from_a_fresh_store(db_path: Path) -> None:
    meta = {"theory": "socratic", "learner": "ana", "exercise": "fizzbuzz"}
    with SessionStore(str(db_path)) as first:
        first.create_session("s1", meta, {"turn": 0, "metrics": {}})
        for turn in (1, 2, 3):
            state = {
                "turn": turn,
                "metrics": {"frustration": 0.1 * turn, "affect": "calm", "exam_active": False},
                "history": [{"student": "¿por qué? 🤔", "tutor": "What do you think?"}] * turn,
                "goal": None,
            }
            first.save_turn("s1", turn, state, {"turn": turn, "action": "elicit", "cost": 0.001})

    with SessionStore(str(db_path)) as second:
        loaded_meta, loaded_state, turns = second.load_session("s1")
        records = second.audit_records("s1")

    assert loaded_meta == meta
    assert turns == 3
    assert loaded_state == state
    assert records == [{"turn": t, "action": "elicit", "cost": 0.001} for t in (1, 2, 3)]


def test_a_new_session_has_zero_turns_and_no_audit_records(store: SessionStore) -> None:
    store.create_session("s1", {"m": 1}, {"s": 1})
    assert store.load_session("s1") == ({"m": 1}, {"s": 1}, 0)
    assert store.audit_records("s1") == []


def test_unknown_sessions_raise_session_not_found(store: SessionStore) -> None:
    with pytest.raises(SessionNotFound) as raised:
        store.load_session("nope")
    assert raised.value.session_id == "nope"
    with pytest.raises(SessionNotFound):
        store.audit_records("nope")
    with pytest.raises(SessionNotFound):
        store.save_turn("nope", 1, {}, {})
    assert store.list_sessions() == []


def test_creating_an_existing_session_fails_and_keeps_the_original(store: SessionStore) -> None:
    store.create_session("s1", {"v": "original"}, {"v": "original"})
    store.save_turn("s1", 1, {"v": "turn 1"}, {"turn": 1})
    with pytest.raises(StoreError, match="already exists"):
        store.create_session("s1", {"v": "impostor"}, {"v": "impostor"})
    assert store.load_session("s1") == ({"v": "original"}, {"v": "turn 1"}, 1)
    assert store.audit_records("s1") == [{"turn": 1}]


# -- turn ordering ----------------------------------------------------------------------------


def test_turns_must_be_saved_in_order_and_a_conflict_writes_nothing(
    store: SessionStore, db_path: Path
) -> None:
    store.create_session("s1", {}, {"turn": 0})
    store.save_turn("s1", 1, {"turn": 1}, {"turn": 1})

    for wrong in (1, 3, 7):
        with pytest.raises(TurnConflict) as raised:
            store.save_turn("s1", wrong, {"turn": "bad"}, {"turn": "bad"})
        assert (raised.value.turn_index, raised.value.committed_turns) == (wrong, 1)

    assert store.load_session("s1") == ({}, {"turn": 1}, 1)
    assert store.audit_records("s1") == [{"turn": 1}]
    with _raw(db_path) as raw:
        assert raw.execute("SELECT count(*) FROM pedrag_audit_records").fetchone() == (1,)

    store.save_turn("s1", 2, {"turn": 2}, {"turn": 2})
    assert store.load_session("s1")[1:] == ({"turn": 2}, 2)


@pytest.mark.parametrize("turn_index", [0, -1, True, 1.0, "1"])
def test_turn_index_must_be_a_positive_int(store: SessionStore, turn_index: Any) -> None:
    store.create_session("s1", {}, {})
    with pytest.raises(StoreError, match="turn_index"):
        store.save_turn("s1", turn_index, {}, {})
    assert store.load_session("s1")[2] == 0


# -- failing saves are all-or-nothing ---------------------------------------------------------


def test_a_non_json_audit_record_writes_neither_state_nor_audit(store: SessionStore) -> None:
    store.create_session("s1", {}, {"turn": 0})
    store.save_turn("s1", 1, {"turn": 1}, {"turn": 1})
    with pytest.raises(StoreError, match=r"audit\['verdict'\] is a object"):
        store.save_turn("s1", 2, {"turn": 2}, {"verdict": object()})
    assert store.load_session("s1") == ({}, {"turn": 1}, 1)
    assert store.audit_records("s1") == [{"turn": 1}]


@pytest.mark.parametrize(
    ("state", "problem"),
    [
        ({"history": ("a", "b")}, r"state\['history'\] is a tuple"),
        ({"by_turn": {1: "a"}}, r"state\['by_turn'\] has the key 1"),
        ({"frustration": float("nan")}, r"state\['frustration'\] is nan"),
        ({"seen": {"a"}}, r"state\['seen'\] is a set"),
        ({"when": datetime.now(UTC)}, r"state\['when'\] is a datetime"),
        ({"reply": ["ok", "a\x00b"]}, r"state\['reply'\]\[1\] contains U\+0000"),
    ],
)
def test_values_json_would_silently_change_are_refused(
    store: SessionStore, state: dict[str, Any], problem: str
) -> None:
    store.create_session("s1", {}, {"turn": 0})
    with pytest.raises(StoreError, match=problem):
        store.save_turn("s1", 1, state, {"turn": 1})
    assert store.load_session("s1") == ({}, {"turn": 0}, 0)


@pytest.mark.parametrize(
    ("goal", "problem"),
    [
        (
            {"mastery": 0.5, "evidence": 1, "solved": ["mult_7x8", float("nan")]},
            r"learner goal 'times_tables' solved\[1\] is nan, which JSON cannot hold",
        ),
        (
            {"mastery": float("inf"), "evidence": 1, "solved": []},
            r"learner goal 'times_tables' mastery is inf",
        ),
        (
            {"mastery": 0.5, "evidence": 1, "solved": [{"id": "a\x00b"}]},
            r"solved\[0\]\['id'\] contains U\+0000",
        ),
    ],
)
def test_a_learner_goal_json_would_change_is_refused_and_the_turn_writes_nothing(
    store: SessionStore, goal: dict[str, Any], problem: str
) -> None:
    """orjson, the JSON columns' writer, stores NaN and infinity as null: a goal's ``solved``
    (a JSON column) and ``mastery`` are refused first, with the store's document check, and
    the turn that carried them is not written at all."""
    store.create_learner("ada")
    store.create_session("s1", {}, {"turn": 0})
    with pytest.raises(StoreError, match=problem):
        store.save_turn("s1", 1, {"turn": 1}, {"turn": 1}, ("ada", {"times_tables": goal}))
    assert store.load_session("s1") == ({}, {"turn": 0}, 0)
    assert store.load_learner_goals("ada") == {}


@pytest.mark.parametrize(
    ("solved", "problem"),
    [
        ([float("nan")], r"\['solved'\]\[0\] is nan, which JSON cannot hold"),
        ([{"id": "a\x00b"}], r"\['solved'\]\[0\]\['id'\] contains U\+0000"),
    ],
)
def test_the_in_memory_store_refuses_what_the_sql_stores_refuse_in_a_learner_goal(
    solved: list[Any], problem: str
) -> None:
    goal = {"mastery": 0.5, "evidence": 1, "solved": solved}
    with MemoryStore() as memory:
        memory.create_session("s1", {}, {"turn": 0})
        with pytest.raises(StoreError, match=problem):
            memory.save_turn("s1", 1, {"turn": 1}, {"turn": 1}, ("ada", {"times_tables": goal}))
        assert memory.load_learner_goals("ada") == {}
        assert memory.load_session("s1") == ({}, {"turn": 0}, 0)


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_every_store_refuses_a_nul_in_state_and_meta_and_cleans_it_in_audit(
    kind: str, db_path: Path
) -> None:
    """PostgreSQL cannot hold U+0000: the SQL stores refuse it in what the caller owns (meta,
    state) and replace it in an audit record (text from models and endpoints); the in-memory
    store, which tests and throwaway runs use, does the same, so what works there works on
    PostgreSQL."""
    with SessionStore(str(db_path)) if kind == "sqlite" else MemoryStore() as store:
        with pytest.raises(StoreError, match=r"meta\['note'\] contains U\+0000"):
            store.create_session("s0", {"note": "a\x00b"}, {"turn": 0})
        with pytest.raises(StoreError, match=r"state\['reply'\] contains U\+0000"):
            store.create_session("s0", {}, {"reply": "a\x00b"})
        store.create_session("s1", {}, {"turn": 0})
        with pytest.raises(StoreError, match=r"state\['reply'\] contains U\+0000"):
            store.save_turn("s1", 1, {"reply": "a\x00b"}, {"turn": 1})
        with pytest.raises(StoreError, match=r"state\['reply'\] contains U\+0000"):
            store.set_state("s1", 0, {"reply": "a\x00b"})
        store.save_turn("s1", 1, {"turn": 1}, {"reason": "a\x00b"})
        assert store.audit_records("s1") == [{"reason": "a\ufffdb"}]
        assert store.load_session("s1") == ({}, {"turn": 1}, 1)


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
@pytest.mark.parametrize("session_id", ["", "x" * 129, 7])
def test_every_store_refuses_a_session_id_the_sql_columns_cannot_hold(
    kind: str, session_id: Any, db_path: Path
) -> None:
    with SessionStore(str(db_path)) if kind == "sqlite" else MemoryStore() as store:
        with pytest.raises(StoreError, match="session id must be a str of 1 to 128 characters"):
            store.create_session(session_id, {}, {"turn": 0})
        store.create_session("x" * 128, {}, {"turn": 0})  # the longest id is taken


def test_a_database_error_after_the_state_update_rolls_the_whole_turn_back(
    store: SessionStore, db_path: Path
) -> None:
    """The failure happens inside the database, between the state update and the audit insert,
    so only the transaction can undo the already-executed update."""
    store.create_session("s1", {}, {"turn": 0})
    store.save_turn("s1", 1, {"turn": 1}, {"turn": 1})
    with _raw(db_path) as raw:
        raw.execute(
            "CREATE TRIGGER fail_audit BEFORE INSERT ON pedrag_audit_records "
            "BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"
        )

    with pytest.raises(StoreError, match="disk on fire"):
        store.save_turn("s1", 2, {"turn": 2}, {"turn": 2})
    assert store.load_session("s1") == ({}, {"turn": 1}, 1)
    assert store.audit_records("s1") == [{"turn": 1}]

    with _raw(db_path) as raw:
        raw.execute("DROP TRIGGER fail_audit")
    store.save_turn("s1", 2, {"turn": 2}, {"turn": 2})
    assert store.load_session("s1")[1:] == ({"turn": 2}, 2)


# -- a real process killed mid-turn -----------------------------------------------------------

_WRITER = textwrap.dedent(
    """
    import hashlib, sys
    from pedrag.runtime.store.session_store import SessionStore

    db, session_id, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = SessionStore(db)
    _, _, turns = store.load_session(session_id)
    print("ready", flush=True)
    while True:
        turn = turns + 1
        # Different bytes every turn, so a state stitched from two turns fails its digest.
        blob = hashlib.sha256(f"{session_id}:{turn}".encode()).hexdigest() * (size // 64)
        state = {"turn": turn, "blob": blob, "digest": hashlib.sha256(blob.encode()).hexdigest()}
        store.save_turn(session_id, turn, state, {"turn": turn, "trace": blob[: size // 2]})
        print(turn, flush=True)
        turns = turn
    """
)


def test_a_process_killed_mid_turn_leaves_the_last_committed_turn_intact(db_path: Path) -> None:
    size = 1 << 20  # ~1 MB states and ~0.5 MB audit records: each commit takes a while
    with SessionStore(str(db_path)) as store:
        store.create_session("s1", {"kind": "crash test"}, {"turn": 0})
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    last_turns = 0
    for kill in range(6):
        child = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(db_path), "s1", str(size)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n", child.communicate()[1]
        delay = rng.uniform(0.05, 0.35)
        time.sleep(delay)
        os.kill(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        where = f"seed {seed}, kill {kill}, after {delay:.3f}s"
        assert child.returncode == -signal.SIGKILL, f"{where}: writer died on its own:\n{err}"
        acknowledged = [int(line) for line in out.split()]

        with _raw(db_path) as raw:
            assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)], where
            (turns,) = raw.execute("SELECT turns FROM pedrag_sessions WHERE id = 's1'").fetchone()
            indexes = [
                index
                for (index,) in raw.execute(
                    "SELECT turn_index FROM pedrag_audit_records "
                    "WHERE session_id = 's1' ORDER BY turn_index"
                )
            ]
        assert indexes == list(range(1, turns + 1)), where

        with SessionStore(str(db_path)) as store:
            _, state, loaded_turns = store.load_session("s1")
            records = store.audit_records("s1")
        assert loaded_turns == turns, where
        assert len(records) == turns and state["turn"] == turns, where
        if turns:  # on a busy machine the first kill can come before any turn committed
            assert records[-1]["turn"] == turns, where
            assert hashlib.sha256(state["blob"].encode()).hexdigest() == state["digest"], where
        # Nothing the writer saw committed is lost; at most the turn whose "committed" line
        # the kill cut off is there without having been acknowledged.
        last_acknowledged = acknowledged[-1] if acknowledged else last_turns
        assert last_acknowledged <= turns <= last_acknowledged + 1, where
        last_turns = turns

    assert last_turns >= 6, f"seed {seed}: the writers made almost no progress"


# -- several writers on one database ----------------------------------------------------------


def test_two_stores_on_one_file_cannot_both_commit_the_same_turn(db_path: Path) -> None:
    with SessionStore(str(db_path)) as first, SessionStore(str(db_path)) as second:
        first.create_session("s1", {}, {"turn": 0})
        assert first.load_session("s1")[2] == second.load_session("s1")[2] == 0

        first.save_turn("s1", 1, {"turn": 1, "by": "first"}, {"by": "first"})
        with pytest.raises(TurnConflict):
            second.save_turn("s1", 1, {"turn": 1, "by": "second"}, {"by": "second"})

        assert second.load_session("s1")[1:] == ({"turn": 1, "by": "first"}, 1)
        assert second.audit_records("s1") == [{"by": "first"}]


def test_simultaneous_writers_of_one_turn_yield_one_commit_and_only_conflicts(
    db_path: Path,
) -> None:
    with SessionStore(str(db_path)) as setup:
        setup.create_session("s1", {}, {"turn": 0})
    writers = 8
    stores = [SessionStore(str(db_path)) for _ in range(writers)]
    barrier = threading.Barrier(writers)
    outcomes: list[str] = [""] * writers

    def write(number: int) -> None:
        barrier.wait()
        try:
            stores[number].save_turn("s1", 1, {"by": number}, {"by": number})
            outcomes[number] = "committed"
        except TurnConflict:
            outcomes[number] = "conflict"
        except Exception as error:  # anything else (e.g. "database is locked") is a failure
            outcomes[number] = repr(error)

    threads = [threading.Thread(target=write, args=(number,)) for number in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for opened in stores:
        opened.close()

    assert sorted(outcomes) == ["committed"] + ["conflict"] * (writers - 1)
    winner = outcomes.index("committed")
    with SessionStore(str(db_path)) as check:
        assert check.load_session("s1")[1:] == ({"by": winner}, 1)
        assert check.audit_records("s1") == [{"by": winner}]


def test_stores_opening_a_fresh_database_at_once_all_succeed(db_path: Path) -> None:
    """Creating the tables reads the schema before writing it; the write lock taken at BEGIN
    makes openers queue instead of failing with "database is locked" or "table exists"."""
    openers = 8
    barrier = threading.Barrier(openers)
    failures: list[BaseException] = []
    opened: list[SessionStore] = []

    def open_store() -> None:
        barrier.wait()
        try:
            opened.append(SessionStore(str(db_path)))
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=open_store) for _ in range(openers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for store in opened:
        store.close()
    assert failures == []


_RACER = textwrap.dedent(
    """
    import sys
    from pedrag.runtime.store.session_store import SessionStore, TurnConflict

    db, name, wanted = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = SessionStore(db)
    committed = []
    while len(committed) < wanted:
        _, state, turns = store.load_session("s1")
        assert state["turn"] == turns, (state, turns)
        try:
            store.save_turn("s1", turns + 1, {"turn": turns + 1, "by": name}, {"by": name})
        except TurnConflict:
            continue
        committed.append(turns + 1)
    print(" ".join(map(str, committed)))
    """
)


def test_racing_processes_each_commit_distinct_contiguous_turns(db_path: Path) -> None:
    with SessionStore(str(db_path)) as setup:
        setup.create_session("s1", {}, {"turn": 0})
    per_process = 15
    names = ["a", "b", "c"]
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(db_path), name, str(per_process)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    committed: dict[str, list[int]] = {}
    for name, racer in zip(names, racers, strict=True):
        out, err = racer.communicate(timeout=60)
        assert racer.returncode == 0, err
        committed[name] = [int(turn) for turn in out.split()]

    total = per_process * len(names)
    assert sorted(turn for turns in committed.values() for turn in turns) == list(
        range(1, total + 1)
    )
    with SessionStore(str(db_path)) as check:
        _, state, turns = check.load_session("s1")
        records = check.audit_records("s1")
    assert turns == total and state["turn"] == total
    for name, turns_of_racer in committed.items():
        assert all(records[turn - 1] == {"by": name} for turn in turns_of_racer)


# -- configuration ----------------------------------------------------------------------------


def test_pedrag_db_as_a_path_is_used_and_its_folders_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "deep" / "er" / "tutor.db"
    monkeypatch.setenv(ENV_DB, str(target))
    with SessionStore() as store:
        store.create_session("s1", {}, {})
    with _raw(target) as raw:
        assert raw.execute("SELECT id FROM pedrag_sessions").fetchall() == [("s1",)]


def test_pedrag_db_as_a_url_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "url.db"
    monkeypatch.setenv(ENV_DB, f"sqlite:///{target}")
    with SessionStore() as store:
        store.create_session("s1", {}, {})
    assert target.exists()


def test_an_explicit_url_wins_over_pedrag_db(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_DB, str(tmp_path / "from_env.db"))
    with SessionStore(str(tmp_path / "explicit.db")) as store:
        store.create_session("s1", {}, {})
    assert (tmp_path / "explicit.db").exists()
    assert not (tmp_path / "from_env.db").exists()


def test_without_pedrag_db_the_database_is_dot_pedrag_sessions_db(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_DB, raising=False)
    monkeypatch.chdir(tmp_path)
    with SessionStore() as store:
        store.create_session("s1", {}, {})
        # Resolved once: changing directory later does not move the database.
        monkeypatch.chdir(tmp_path.parent)
        assert store.load_session("s1")[2] == 0
    assert (tmp_path / ".pedrag" / "sessions.db").exists()
    assert resolve_db_url().database == str(tmp_path.parent.resolve() / ".pedrag" / "sessions.db")


def test_sqlite_runs_in_wal_mode_with_normal_sync_foreign_keys_and_a_busy_timeout(
    store: SessionStore, db_path: Path
) -> None:
    with _raw(db_path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    with store._engine.connect() as connection:  # per-connection settings: look inside
        pragma = connection.exec_driver_sql
        assert pragma("PRAGMA synchronous").scalar() == 1  # NORMAL (durable across crashes in WAL)
        assert pragma("PRAGMA foreign_keys").scalar() == 1
        assert pragma("PRAGMA busy_timeout").scalar() >= 1000


def test_full_sync_is_chosen_by_argument_or_environment_and_nonsense_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def level(store: SessionStore) -> int:
        with store._engine.connect() as connection:
            return int(connection.exec_driver_sql("PRAGMA synchronous").scalar())

    with SessionStore(str(tmp_path / "a.db"), synchronous="full") as store:
        assert level(store) == 2
    monkeypatch.setenv(ENV_SYNCHRONOUS, "FULL")
    with SessionStore(str(tmp_path / "b.db")) as store:
        assert level(store) == 2
    monkeypatch.setenv(ENV_SYNCHRONOUS, "off")
    with pytest.raises(StoreError, match="PEDRAG_DB_SYNCHRONOUS must be NORMAL or FULL"):
        SessionStore(str(tmp_path / "c.db"))


@pytest.mark.parametrize(
    ("url", "problem"),
    [("mysql://user@host/db", "unsupported database 'mysql'"), ("sqlite:://x", "invalid")],
)
def test_unsupported_or_malformed_urls_are_refused(url: str, problem: str) -> None:
    with pytest.raises(StoreError, match=problem):
        SessionStore(url)


def test_a_closed_store_refuses_to_work(store: SessionStore) -> None:
    store.close()
    store.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        store.list_sessions()


def test_the_url_hides_the_password() -> None:
    url = resolve_db_url("postgresql+psycopg://tutor:s3cret@db.internal/pedrag")
    assert "s3cret" not in url.render_as_string(hide_password=True)
    assert url.get_backend_name() == "postgresql"


# -- listing ----------------------------------------------------------------------------------


def test_list_sessions_shows_the_most_recently_updated_first_with_utc_timestamps(
    store: SessionStore,
) -> None:
    before = datetime.now(UTC)
    for name in ("old", "middle", "new"):
        store.create_session(name, {"name": name}, {})
        time.sleep(0.002)  # distinct timestamps even on a coarse clock
    store.save_turn("old", 1, {}, {})  # now the most recently updated
    after = datetime.now(UTC)

    listed = store.list_sessions()
    assert [row["id"] for row in listed] == ["old", "new", "middle"]
    first = listed[0]
    assert set(first) == {"id", "created_at", "updated_at", "turns", "meta"}
    assert (first["turns"], first["meta"]) == (1, {"name": "old"})
    for row in listed:
        assert row["created_at"].utcoffset() == timedelta(0)
        assert before <= row["created_at"] <= row["updated_at"] <= after
    assert [row["id"] for row in store.list_sessions(limit=2)] == ["old", "new"]


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_changing_a_listed_session_changes_nothing_stored(kind: str, db_path: Path) -> None:
    meta = {"learner": {"name": "ada", "goals": ["fractions"]}, "course": "maths"}
    with SessionStore(str(db_path)) if kind == "sqlite" else MemoryStore() as store:
        store.create_session("s1", meta, {"turn": 0})
        (listed,) = store.list_sessions()
        listed["meta"]["learner"]["name"] = "eve"
        listed["meta"]["learner"]["goals"].append("algebra")
        listed["meta"]["course"] = "art"
        assert store.list_sessions()[0]["meta"] == meta
        assert store.load_session("s1") == (meta, {"turn": 0}, 0)


# -- spending ---------------------------------------------------------------------------------


def test_spend_accumulates_per_scope(store: SessionStore) -> None:
    assert store.spend("deployment") == 0.0
    assert store.add_spend("deployment", 0.25) == 0.25
    assert store.add_spend("deployment", 0.5) == 0.75
    assert store.add_spend("other", 2.0) == 2.0
    assert store.add_spend("deployment", 0) == 0.75
    assert store.spend("deployment") == 0.75
    assert store.spend("other") == 2.0
    assert store.add_spend("tiny", 0.1) + store.add_spend("tiny", 0.2) - 0.1 == pytest.approx(0.3)


@pytest.mark.parametrize("usd", [-0.01, float("nan"), float("inf"), "1", True])
def test_spend_must_be_a_finite_non_negative_number(store: SessionStore, usd: Any) -> None:
    with pytest.raises(StoreError, match="usd"):
        store.add_spend("deployment", usd)
    assert store.spend("deployment") == 0.0


def test_concurrent_spend_from_several_stores_loses_nothing(db_path: Path) -> None:
    """Each addition returns the total including itself, so the returned totals of all
    writers together are exactly 0.25, 0.5, ..., the final total (0.25 is exact in binary)."""
    workers, additions = 4, 40
    stores = [SessionStore(str(db_path)) for _ in range(workers)]
    returned: list[float] = []
    lock = threading.Lock()

    def spend_money(opened: SessionStore) -> None:
        for _ in range(additions):
            total = opened.add_spend("deployment", 0.25)
            with lock:
                returned.append(total)

    threads = [threading.Thread(target=spend_money, args=(opened,)) for opened in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for opened in stores:
        opened.close()

    count = workers * additions
    assert sorted(returned) == [0.25 * k for k in range(1, count + 1)]
    with SessionStore(str(db_path)) as check:
        assert check.spend("deployment") == 0.25 * count


def test_one_store_can_be_shared_between_threads(store: SessionStore) -> None:
    for number in range(4):
        store.create_session(f"s{number}", {}, {"turn": 0})
    errors: list[BaseException] = []

    def run(number: int) -> None:
        try:
            for turn in range(1, 11):
                store.save_turn(f"s{number}", turn, {"turn": turn}, {"turn": turn})
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(number,)) for number in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert all(store.load_session(f"s{number}")[2] == 10 for number in range(4))


def test_an_uncreatable_database_folder_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match="cannot create the database folder"):
        SessionStore(str(blocker / "sub" / "sessions.db"))


_JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.sampled_from("ab\x00é"), max_size=3)
    | st.tuples(st.integers()),  # not JSON: refused by name
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(alphabet="ab\x00", max_size=2) | st.integers(), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(_JSONISH)
def test_the_quick_document_check_passes_exactly_what_the_full_check_passes(value: object) -> None:
    """`_plainly_json` spares the path-naming walk of `_json_problem` on a turn's documents;
    it must never pass a document the full check refuses (it may leave doubtful ones to it)."""
    from pedrag.runtime.store.session_store import _json_problem, _plainly_json

    # These documents nest shallowly, so the quick check refuses only what has a problem.
    assert _plainly_json(value) == (_json_problem(value, "audit") is None)


@pytest.mark.parametrize("container", [list, dict])
def test_the_quick_check_reads_101_levels_and_leaves_deeper_documents_to_the_full_check(
    container: type,
) -> None:
    """Containers at depth 0 to 100 pass the quick walk; one deeper is left to the full check,
    which stores it (the limit bounds the walk's recursion, it refuses nothing)."""
    from pedrag.runtime.store.documents import _plainly_json, _require_document

    def nested(levels: int) -> Any:
        value: Any = "leaf"
        for _ in range(levels):
            value = [value] if container is list else {"k": value}
        return value

    assert _plainly_json(nested(101))
    assert not _plainly_json(nested(102))
    _require_document({"deep": nested(150)}, "state")  # the full check passes it
    assert not _plainly_json([nested(50), float("nan")])


# Strings with everything safe_text changes (NUL, ESC and an ANSI sequence, a C1 control,
# a lone surrogate, credentials in a URL, a form feed) and what only looks like it (a
# literal backslash before u, b or f, an @ without a URL, non-ASCII text).
_TEXTY = st.lists(
    st.sampled_from(
        ["a", "é", "…", "\x00", "\x1b[31m", "\x9b", "\ud800", "\x0c", "\\u", "\\b", "@", "\n"]
        + ["https://user:secret@host/v1", "\t"]
    ),
    max_size=4,
).map("".join)
_AUDITISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | _TEXTY
    | st.tuples(st.integers()),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(_TEXTY | st.integers() | st.booleans(), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(st.dictionaries(_TEXTY, _AUDITISH, max_size=4))
def test_the_quick_audit_check_cleans_and_refuses_exactly_as_the_full_walk(
    record: dict[Any, Any],
) -> None:
    """`_safe_audit` spares the rebuilding clean-and-check walk of an already clean record
    (one walk that builds nothing); on every record it gives what the full walk gives, or
    the same error."""
    from pedrag.runtime.store.documents import (
        _require_document,
        _safe_audit,
        _safe_document,
    )

    expected: Any
    try:
        expected = _safe_document(record)
        _require_document(expected, "audit")
    except StoreError as error:
        expected = error
    if isinstance(expected, StoreError):
        with pytest.raises(StoreError) as raised:
            _safe_audit(record)
        assert str(raised.value) == str(expected)
    else:
        got = _safe_audit(record)
        assert repr(got) == repr(expected)  # repr: a NaN never gets here; types must match


def test_a_clean_record_is_stored_as_given_and_a_dirty_one_cleaned() -> None:
    from pedrag.runtime.store.documents import _safe_audit

    clean = {"reason": "plain text, é and … and\ttabs\nand lines", "n": [1, 2.5, None, True]}
    assert _safe_audit(clean) is clean
    dirty = {"reason": "a\x00b \x1b[31mred https://u:pw@host/x \ud800", "k\x9b": 1}
    assert _safe_audit(dirty) == {
        "reason": "a\ufffdb \ufffdred https://***@host/x \ufffd",
        "k\ufffd": 1,
    }
    with pytest.raises(StoreError, match=r"audit\['t'\] is a tuple"):
        _safe_audit({"t": (1, 2)})


class _Label(str):  # a str subclass, as an enum label is
    pass


_WRITABLE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)  # beyond orjson's 64 bits too
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from('a"\\\n\x00é…\ud800\U0001f600'), max_size=4)
    | st.text(alphabet="ab", max_size=2).map(_Label),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(
            st.text(alphabet="a\ud800é", max_size=2) | st.integers(), inner, max_size=3
        )
    ),
    max_leaves=12,
)


@given(_WRITABLE)
def test_json_columns_read_back_what_the_standard_library_wrote_would(value: Any) -> None:
    """The store writes JSON columns with orjson (`json_text`), whose text differs from
    `json.dumps`'s (compact, UTF-8 rather than escapes): what is read back must not."""
    import json

    from pedrag.runtime.store.documents import json_text

    assert repr(json.loads(json_text(value))) == repr(json.loads(json.dumps(value)))


def _outcome(check: Any, value: Any) -> Any:
    try:
        return check(value)
    except StoreError as error:
        return ("refused", str(error))


@settings(max_examples=300)
@given(st.dictionaries(_TEXTY, _AUDITISH, max_size=4) | st.dictionaries(_TEXTY, _WRITABLE))
def test_the_text_read_check_of_a_record_writes_what_the_walks_would(
    record: dict[Any, Any],
) -> None:
    """`save_turn` checks the turn's record and state on the text orjson writes (read back
    equal, nothing a string cleaning would change) and gives the columns that text: on every
    document, the same text the walks and the column's writer give, or the same error."""
    from pedrag.runtime.store.documents import (
        _audit_text,
        _document_text,
        _require_document,
        _safe_audit,
        json_text,
    )

    def by_walks(value: Any) -> str:
        _require_document(value, "state")
        return json_text(value)

    assert _outcome(lambda r: _audit_text(r).text, record) == _outcome(
        lambda r: json_text(_safe_audit(r)), record
    )
    assert _outcome(lambda r: _document_text(r, "state").text, record) == _outcome(by_walks, record)


def test_the_text_read_check_leaves_what_only_the_walks_can_judge_to_them() -> None:
    from pedrag.runtime.store.documents import _audit_text, _document_text, _plain_text

    for doubtful in (
        {"t": (1, 2)},  # written as a list
        {"x": float("nan")},  # written as null
        {1: "a"},  # a key orjson refuses
        {"label": _Label("a")},  # a subclass orjson passes back
        {"s": "a\x00b"},  # U+0000
        {"s": "a\\u0000"},  # only looks like it: a backslash, then u0000
    ):
        assert _plain_text(doubtful) is None, doubtful
    assert _document_text({"s": "a\\u0000"}, "state").text == '{"s":"a\\\\u0000"}'
    assert _document_text({"label": _Label("a")}, "state").text == '{"label": "a"}'
    with pytest.raises(StoreError, match=r"state\['t'\] is a tuple"):
        _document_text({"t": (1, 2)}, "state")
    assert _audit_text({"url": "https://u:pw@h/x"}).text == '{"url":"https://***@h/x"}'
    assert _audit_text({"c1": "\x9b"}).text == '{"c1":"\ufffd"}'
    assert _audit_text({"ok": "plain, é …"}).text == '{"ok":"plain, é …"}'


def test_a_turn_is_stored_as_json_text_and_read_back_unchanged(
    store: SessionStore, db_path: Path
) -> None:
    import json

    from pedrag.runtime.store.documents import json_text

    state = {"n": 2**60, "x": 0.1, "text": "é … 😀", "nested": {"list": [1, 2.0, None, True]}}
    store.create_session("s", {}, {})
    store.save_turn("s", 1, state, {"reason": "é"})
    raw = _raw(db_path)
    try:
        (stored,) = raw.execute("SELECT state FROM pedrag_sessions WHERE id = 's'").fetchone()
    finally:
        raw.close()
    assert stored == json_text(state) and ": " not in stored  # orjson's compact text
    assert json.loads(stored) == state
    assert store.load_session("s")[1] == state


@given(_WRITABLE)
def test_json_columns_read_back_what_the_standard_library_reads(value: Any) -> None:
    """SQLite's store reads JSON columns with ``json_value`` (orjson's reading when it is
    safe): every text the column's writer leaves must read back as ``json.loads`` reads it,
    type for type (orjson alone reads an int beyond 64 bits as a float)."""
    import json

    from pedrag.runtime.store.documents import json_text, json_value

    text = json_text(value)
    assert repr(json_value(text)) == repr(json.loads(text))


def test_json_texts_orjson_misreads_are_read_by_the_standard_library(
    store: SessionStore,
) -> None:
    import json

    from pedrag.runtime.store.documents import json_text, json_value

    texts = [
        json_text({"n": 2**60, "x": 0.1, "y": 1e-7, "z": -0.0, "s": 'é … 😀\n\t"'}),
        json_text({"big": 2**70, "more": [-(2**65)]}),  # json.dumps's text: beyond 64 bits
        json_text([2**64]),  # one element: no separator to tell json.dumps's text by
        json.dumps({"lone": "\ud800x"}),  # a lone surrogate, as json.dumps escapes it
        json.dumps({"nan": float("nan")}),  # NaN: never written, still readable
        '{"a": 1, "a": 2, "f": 1.7976931348623157e308, "u": "\\u00e9"}',
    ]
    for text in texts:
        assert repr(json_value(text)) == repr(json.loads(text)), text[:60]
    assert type(json_value(json_text([2**64]))[0]) is int
    # And through the store: a session whose state needed json.dumps reads back unchanged.
    state = {"big": 2**70, "lone": "\ud800"}
    store.create_session("s", {}, {})
    store.save_turn("s", 1, state, {})
    assert store.read_session("s").state == state


# -- the connection pool ----------------------------------------------------------------------


def test_a_burst_of_concurrent_reads_reopens_no_connection_the_last_one_opened(
    store: SessionStore,
) -> None:
    a_second_burst_opens_no_connection(store)


def a_second_burst_opens_no_connection(store: SessionStore, readers: int = 12) -> None:
    """``readers`` threads each hold a pooled connection at once, twice over (a service worker
    with that many turns in flight; tests/service/test_postgres.py runs this on PostgreSQL):
    the second burst finds every connection the first opened still in the pool (the pool
    keeps ``POOL_SIZE``; SQLAlchemy's default kept 5 and closed the rest as they came back,
    so each burst past 5 paid a connect), and every reader's statement is answered."""
    assert readers <= POOL_SIZE
    store.tenants.create("acme")
    key = store.tenants.issue_key("acme")
    opened: list[object] = []
    event.listen(store._engine, "connect", lambda connection, _record: opened.append(connection))
    answers: list[str] = []
    lock = threading.Lock()

    def burst() -> None:
        together = threading.Barrier(readers, timeout=30)

        def read() -> None:
            with store._read_statement() as statements:
                together.wait()  # every reader holds its connection now
                row = statements.row(_KEY, {"b_hash": hash_api_key(key)})
            with lock:
                answers.append(row.id)

        threads = [threading.Thread(target=read) for _ in range(readers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    burst()
    first = len(opened)
    burst()
    assert first >= readers - 1  # the store had at most one open before the burst
    assert len(opened) == first, "the second burst opened connections the first had opened"
    assert answers == ["acme"] * (2 * readers)


def test_writers_of_one_process_queue_for_each_other_not_at_sqlites_lock(db_path: Path) -> None:
    """A write transaction waits for another of the same process (a ``for_tenant`` view's
    too) on the store's own lock, before SQLite's: with SQLite's busy timeout at 0, the
    second writer's ``BEGIN IMMEDIATE`` would fail at once with "database is locked" if it
    met the first at SQLite's lock; queued, it commits when the first is done."""
    with SessionStore(str(db_path)) as store:
        store.create_session("s1", {}, {"turn": 0})
        event.listen(
            store._engine,
            "connect",
            lambda connection, _record: connection.execute("PRAGMA busy_timeout = 0"),
        )
        store._engine.dispose()  # every connection from now on gives up at once
        view = store.for_tenant(store.tenant)
        holding, release = threading.Event(), threading.Event()
        errors: list[BaseException] = []

        def first() -> None:
            with store._transaction(write=True):
                holding.set()
                release.wait(30)

        def second() -> None:
            try:
                view.save_turn("s1", 1, {"turn": 1}, {"turn": 1})
            except BaseException as error:  # noqa: BLE001 (reported below)
                errors.append(error)

        writer = threading.Thread(target=first)
        writer.start()
        assert holding.wait(30)
        waiting = threading.Thread(target=second)
        waiting.start()
        waiting.join(0.3)  # it waits for the first writer (unqueued, it has failed by now)
        release.set()
        writer.join()
        waiting.join()
        assert errors == []
        assert store.load_session("s1")[2] == 1
