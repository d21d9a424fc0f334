"""The course index on a real PostgreSQL: the same behaviour through its full-text search
(a generated tsvector column with a GIN index), so a multi-worker service grounds too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from pedrag.extract.materials import index_materials
from pedrag.runtime.course.index import CourseIndex
from pedrag.runtime.store.session_store import SessionStore
from tests.course_folder import write_course
from tests.service.postgres import SKIP_REASON, postgres_bin, running_postgres

pytestmark = pytest.mark.skipif(postgres_bin() is None, reason=SKIP_REASON)


@pytest.fixture(scope="module")
def store() -> Iterator[SessionStore]:
    with running_postgres() as url, SessionStore(url) as opened:
        yield opened


def test_postgres_ranks_replaces_and_scopes_course_passages(
    store: SessionStore, tmp_path: Path
) -> None:
    index = CourseIndex(store)
    folder = write_course(tmp_path / "bio")
    index_materials(index, "bio", [folder])

    [best, *_] = index.search("bio", "Is chlorophyll the thing that catches the light?")
    assert best.citation == "[slides 4, p. 2]" and best.supports
    assert not any(p.supports for p in index.search("bio", "What is a black hole made of?"))

    (folder / "notes.md").write_text("# Osmosis\n\nOsmosis moves water across a membrane.\n")
    results, _ = index_materials(index, "bio", [folder])
    assert {r.document: r.outcome for r in results}["notes.md"] == "replaced"
    assert index.search("bio", "osmosis membrane")[0].citation == "[notes, Osmosis]"
    assert index.search("bio", "stomata pores") == []
    assert CourseIndex(store.for_tenant("other")).search("bio", "chlorophyll") == []

    with store._engine.connect() as connection:
        plan = connection.execute(
            text(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'pedrag_course_chunks' "
                "AND indexdef LIKE '%gin%'"
            )
        ).scalars()
        assert list(plan) == ["ix_pedrag_course_chunks_search"]


def test_a_grounded_turn_on_postgres_quotes_and_cites(store: SessionStore, tmp_path: Path) -> None:
    from pedrag.runtime.turn.tutor import Tutor
    from tests.runtime.test_grounding import CHLOROPHYLL, CURRICULUM, QUESTION
    from tests.runtime.tutor_fixtures import shipped

    index_materials(CourseIndex(store), "pg_bio", [write_course(tmp_path / "bio")])
    curriculum = tmp_path / "biology.yaml"
    curriculum.write_text(CURRICULUM.format(course="pg_bio"), "utf-8")
    tutor = Tutor(shipped(), None, curriculum, store)
    session = tutor.start("socratic", exercise="gas_in", seed=3)
    result = tutor.turn(session, QUESTION)

    assert f'"{CHLOROPHYLL}" [slides 4, p. 2].' in result.tutor
    assert store.audit_records(session.id)[0]["grounding"]["cited"] == ["[slides 4, p. 2]"]
