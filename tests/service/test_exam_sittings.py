"""Exam sittings are store records (red team T1, finding 3): one row per (tenant, learner, exam,
sitting), written with the exam's session, so racing creations cannot both sit, on SQLite and
on a real PostgreSQL; sittings recorded before the records existed still count; a retake
allows exactly one more sitting."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, insert, select, text

from pedrag.runtime.llm.offline import OfflineBackend
from pedrag.runtime.policy.theory_set import TheorySet
from pedrag.runtime.store import migrate
from pedrag.runtime.store.schema import exam_sittings, sessions
from pedrag.runtime.store.session_store import NoRetakeDue, SessionStore
from pedrag.runtime.turn.tutor import Tutor
from tests.service.postgres import postgres_bin, running_postgres

LEARNING = Path(__file__).resolve().parents[1] / "data" / "runtime" / "learning.yaml"
RACERS = 8
needs_postgres = pytest.mark.skipif(postgres_bin() is None, reason="no PostgreSQL binaries")


_THEORIES: list[TheorySet] = []


def _tutor(store: SessionStore) -> Tutor:
    if not _THEORIES:  # loaded once: eight racers need eight tutors, not eight loads
        _THEORIES.append(TheorySet.shipped())
    return Tutor(_THEORIES[0], OfflineBackend(), LEARNING, store)


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    if postgres_bin() is None:
        pytest.skip("no PostgreSQL binaries")
    with running_postgres() as url:
        yield url


def _fresh_pg(pg_url: str) -> str:
    from tests.service.test_postgres import fresh_database

    return fresh_database(pg_url)


def racing_creations_sit_once(url: str, learner: str) -> None:
    """RACERS stores (each its own pool, as workers are) start the same learner's exam at
    the same moment: one sits, every other is refused, and no refused creation left a
    session behind."""
    stores = [SessionStore(url) for _ in range(RACERS)]
    tutors = [_tutor(store) for store in stores]
    gate = threading.Barrier(RACERS)
    outcomes: list[str] = []

    def sit(tutor: Tutor) -> None:
        gate.wait()
        try:
            tutor.start("socratic", exercise="times_exam", learner=learner)
            outcomes.append("sat")
        except ValueError as error:
            assert "has sat exam 'times_exam' already" in str(error), error
            outcomes.append("refused")

    threads = [threading.Thread(target=sit, args=(tutor,)) for tutor in tutors]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert sorted(outcomes) == ["refused"] * (RACERS - 1) + ["sat"]
        listed = stores[0].list_sessions(1000)
        mine = [s for s in listed if s["meta"].get("learner") == learner]
        assert len(mine) == 1
        sittings, _ = stores[0].exam_sittings(learner)
        assert [(s.sitting, s.session_id) for s in sittings] == [(1, mine[0]["id"])]
    finally:
        for store in stores:
            store.close()


def test_racing_creations_of_one_exam_sit_once_on_sqlite(tmp_path: Path) -> None:
    racing_creations_sit_once(str(tmp_path / "db.sqlite"), "mal")


@needs_postgres
def test_racing_creations_of_one_exam_sit_once_on_postgresql(pg_url: str) -> None:
    racing_creations_sit_once(pg_url, "mal")


@needs_postgres
def test_a_sitting_committed_after_the_check_read_nothing_loses_on_the_key(
    pg_url: str,
) -> None:
    """The exact race: a creation checks (no sitting yet) while another transaction holds an
    uncommitted sitting; its insert waits on the key, the other commits, the insert fails,
    and its session is not created either. Waited for by PostgreSQL's own lock view, not by
    time."""
    url = _fresh_pg(pg_url)
    engine = create_engine(url)
    with SessionStore(url) as store:
        tutor = _tutor(store)
        holder = engine.connect()
        transaction = holder.begin()
        holder.execute(
            insert(exam_sittings).values(
                tenant="default",
                learner_id="kim",
                exam_id="times_exam",
                sitting=1,
                session_id="elsewhere",
                sat_at=func.now(),
            )
        )
        failures: list[BaseException] = []

        def sit() -> None:
            try:
                tutor.start("socratic", exercise="times_exam", learner="kim")
            except BaseException as error:  # noqa: BLE001 - reported below
                failures.append(error)

        racer = threading.Thread(target=sit)
        racer.start()
        with engine.connect() as watcher:
            waiting = text(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE wait_event_type = 'Lock' AND datname = current_database()"
            )
            while watcher.execute(waiting).scalar() == 0 and racer.is_alive():
                time.sleep(0.01)
        transaction.commit()
        holder.close()
        racer.join()
        assert len(failures) == 1 and isinstance(failures[0], ValueError), failures
        # the key decided (a check that saw the row would name its session)
        assert "elsewhere" not in str(failures[0])
        assert "has sat exam 'times_exam' already" in str(failures[0])
        with engine.connect() as reader:
            count = reader.execute(select(func.count()).select_from(sessions)).scalar()
        assert count == 0
    engine.dispose()


def a_retake_allows_exactly_one_more_sitting(url: str) -> None:
    with SessionStore(url) as store:
        tutor = _tutor(store)
        with pytest.raises(NoRetakeDue, match="has not sat"):
            store.grant_retake("liv", "times_exam", "cli")
        first = tutor.start("socratic", exercise="times_exam", learner="liv")
        granted = store.grant_retake("liv", "times_exam", "key123")
        assert (granted.sitting, granted.granted_by) == (2, "key123")
        with pytest.raises(NoRetakeDue, match="not used yet"):
            store.grant_retake("liv", "times_exam", "key123")
        second = tutor.start("socratic", exercise="times_exam", learner="liv")
        with pytest.raises(ValueError, match=f"session {second.id}"):
            tutor.start("socratic", exercise="times_exam", learner="liv")
        sittings, retakes = store.exam_sittings("liv")
        assert [s.session_id for s in sittings] == [first.id, second.id]
        assert [(r.sitting, r.granted_by) for r in retakes] == [(2, "key123")]
        # another tenant's liv is someone else
        other = _tutor(store.for_tenant("other"))
        other.start("socratic", exercise="times_exam", learner="liv")
        assert len(store.exam_sittings("liv")[0]) == 2


def test_a_retake_allows_exactly_one_more_sitting_on_sqlite(tmp_path: Path) -> None:
    a_retake_allows_exactly_one_more_sitting(str(tmp_path / "db.sqlite"))


@needs_postgres
def test_a_retake_allows_exactly_one_more_sitting_on_postgresql(pg_url: str) -> None:
    a_retake_allows_exactly_one_more_sitting(_fresh_pg(pg_url))


def sittings_of_0008_still_count(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A database of revision 0008, whose sittings were sessions found by a scan: the
    migration copies them, so each still counts (two sittings of one learner, from a race
    the old check lost, are both kept); an anonymous exam session and a practice session are
    no sitting; a learner key of 0008 names no learner."""
    monkeypatch.setattr(migrate, "HEAD", "0008")
    with SessionStore(url) as old:
        tutor = _tutor(old)

        def old_sitting(learner: str | None, exercise: str = "times_exam") -> str:
            # what the code of 0008 wrote: the learner in meta, the exam lock in the state
            meta = {"learner": learner} if learner else {}
            return tutor.start("socratic", exercise=exercise, meta=meta).id

        mal = old_sitting("mal")
        ned = [old_sitting("ned"), old_sitting("ned")]
        old_sitting(None)
        practice = old_sitting("ivy", "mult_7x8")
        old.tenants.create("school")
        with old._transaction(write=True) as connection:
            connection.execute(
                text(
                    "INSERT INTO pedrag_api_keys (key_hash, tenant, label, created_at, role) "
                    "VALUES (:hash, 'school', 'old', CURRENT_TIMESTAMP, 'learner')"
                ),
                {"hash": "ab" * 32},
            )
    monkeypatch.setattr(migrate, "HEAD", "0009")
    with SessionStore(url) as new:
        tutor = _tutor(new)
        with pytest.raises(ValueError, match=f"session {mal}"):
            tutor.start("socratic", exercise="times_exam", learner="mal")
        with pytest.raises(ValueError, match=f"session {ned[1]}"):
            tutor.start("socratic", exercise="times_exam", learner="ned")
        sittings, _ = new.exam_sittings("ned")
        assert [(s.sitting, s.session_id) for s in sittings] == [(1, ned[0]), (2, ned[1])]
        assert new.grant_retake("ned", "times_exam", "cli").sitting == 3
        tutor.start("socratic", exercise="times_exam", learner="ned")
        assert new.exam_sittings("ivy") == ([], [])
        assert practice not in {s.session_id for s in new.exam_sittings("ivy")[0]}
        tutor.start("socratic", exercise="times_exam", learner="ivy")  # a first sitting
        (key,) = new.tenants.list_keys("school")
        assert key.role == "learner" and key.learner is None
        with new._transaction(write=False) as connection:
            total = connection.execute(select(func.count()).select_from(exam_sittings)).scalar()
        assert total == 5  # mal, ned x3, ivy: the anonymous sitting is nobody's


def test_sittings_of_a_0008_database_still_count_on_sqlite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sittings_of_0008_still_count(str(tmp_path / "0008.sqlite"), monkeypatch)


@needs_postgres
def test_sittings_of_a_0008_database_still_count_on_postgresql(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sittings_of_0008_still_count(_fresh_pg(pg_url), monkeypatch)
