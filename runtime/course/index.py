"""Course materials for grounding: indexed chunks in the session database, searched by BM25.

Runtime, retrieval (DESIGN, "Grounding"; seed 2, §3.4). Takes the chunks ``pedrag index``
read from a course's files (:class:`ChunkInput`: document, page, heading, text) and a
question; gives the course's :class:`Passage`\\ s that best answer it, each with the citation
a reply uses (``[slides 4, p. 2]``) and how much of the question it covers.

Why it looks like this:

- **Same database as the sessions**, through the store's connection and transactions, scoped
  to the store's tenant like every other row. Nothing to install: SQLite's FTS5 ranks with
  BM25 (stemmed by its porter tokenizer); on PostgreSQL a generated ``tsvector`` column with
  a GIN index, ranked with ``ts_rank_cd``, serves a multi-worker deployment the same way.
- **Re-indexing replaces only what changed.** Each document carries the SHA-256 of its bytes;
  an unchanged file is skipped, a changed one has its chunks deleted and written again in one
  transaction, so a search never sees half a document.
- **Fused with vectors when there are any.** With an :class:`Embedder` (an endpoint's
  ``/v1/embeddings``) and vectors of its model for the course (:meth:`CourseIndex.embed_missing`,
  run by ``pedrag index`` with an endpoint), the question is embedded and the nearest chunks by
  the vector extension (sqlite-vec, pgvector; ``pedrag.runtime.course.vectors``) are fused with
  BM25's ranking by reciprocal rank fusion (:data:`RRF_K`). Without either, search is BM25
  alone; an embedding failure on a question falls back to BM25 (logged, and counted in the
  backend's failures).
- **Support, not just rank.** BM25 ranks any passage sharing a word with the question; a
  passage *supports* an answer only when it covers enough of the question's content words
  (:data:`SUPPORT_COVERAGE`, stemmed with the Snowball English stemmer). With none that does,
  the tutor says the materials do not cover it instead of inventing an answer. The same rule
  applies to every passage, however it was found.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, text

from pedrag.runtime.course.passages import (
    CANDIDATES,
    RRF_K,
    SUPPORT_COVERAGE,
    ChunkInput,
    CourseIndexError,
    Passage,
    content_hash,
    content_terms,
    coverage,
    document_label,
    reciprocal_rank_fusion,
    require_course_id,
    stems,
)
from pedrag.runtime.course.vectors import (
    Embedder,
    VectorTables,
    check_vector,
    passage_text,
)
from pedrag.runtime.llm.interface import LLMError
from pedrag.runtime.store.schema import course_chunks, course_documents, course_vectors
from pedrag.runtime.store.session_store import SessionStore, _utcnow

# The plain values and the support measure live in `pedrag.runtime.course.passages` (no database);
# they are re-exported here for the callers that index and search.
__all__ = [
    "CANDIDATES",
    "RRF_K",
    "SUPPORT_COVERAGE",
    "ChunkInput",
    "CourseIndex",
    "CourseIndexError",
    "Embedder",
    "EmbeddingReport",
    "Passage",
    "content_hash",
    "content_terms",
    "coverage",
    "document_label",
    "require_course_id",
    "stems",
]


logger = logging.getLogger(__name__)

EMBED_BATCH = 128  # chunks embedded and stored per transaction: a failure keeps the batches before


@dataclass(frozen=True)
class EmbeddingReport:
    """What :meth:`CourseIndex.embed_missing` did: chunks embedded now, and still without."""

    model: str
    embedded: int
    missing: int


class CourseIndex:
    """A tenant's course materials in a :class:`SessionStore`'s database; with ``embedder``,
    searches fuse BM25 with the course's vectors of the embedder's model."""

    def __init__(self, store: SessionStore, embedder: Embedder | None = None) -> None:
        self.store = store
        self.embedder = embedder

    @property
    def _postgres(self) -> bool:
        return self.store._engine.dialect.name == "postgresql"

    @property
    def _vectors(self) -> VectorTables:
        return VectorTables(self.store.tenant, self._postgres)

    # -- writing -----------------------------------------------------------------------------

    def index_document(
        self, course: str, document: str, digest: str, chunks: Sequence[ChunkInput]
    ) -> str:
        """Store ``document``'s chunks for ``course``: ``unchanged`` (same hash: nothing
        written), ``added`` or ``replaced`` (its old chunks deleted in the same transaction)."""
        require_course_id(course)
        if not document or len(document) > 500:
            raise CourseIndexError(f"document name must be 1-500 characters, got {document!r}")
        tenant = self.store.tenant
        label = document_label(document)[:200]
        with self.store._errors(f"index {document!r} for course {course!r}"):
            with self.store._transaction(write=True) as connection:
                stored = connection.execute(
                    select(course_documents.c.content_hash).where(
                        course_documents.c.tenant == tenant,
                        course_documents.c.course == course,
                        course_documents.c.document == document,
                    )
                ).scalar_one_or_none()
                if stored == digest:
                    return "unchanged"
                if stored is not None:
                    self._delete_document(connection, course, document)
                for ordinal, chunk in enumerate(chunks):
                    row_id = connection.execute(
                        insert(course_chunks)
                        .values(
                            tenant=tenant,
                            course=course,
                            document=document,
                            ordinal=ordinal,
                            label=label,
                            page=chunk.page,
                            heading=chunk.heading[:500],
                            text=chunk.text,
                        )
                        .returning(course_chunks.c.id)
                    ).scalar_one()
                    if not self._postgres:
                        connection.execute(
                            text(
                                "INSERT INTO pedrag_course_fts (rowid, heading, text) "
                                "VALUES (:id, :heading, :text)"
                            ),
                            {"id": row_id, "heading": chunk.heading, "text": chunk.text},
                        )
                connection.execute(
                    insert(course_documents).values(
                        tenant=tenant,
                        course=course,
                        document=document,
                        content_hash=digest,
                        chunks=len(chunks),
                        indexed_at=_utcnow(),
                    )
                )
                return "added" if stored is None else "replaced"

    def remove_document(self, course: str, document: str) -> bool:
        """Remove one document and its chunks; False if the course has no such document."""
        with self.store._errors(f"remove {document!r} from course {course!r}"):
            with self.store._transaction(write=True) as connection:
                return self._delete_document(connection, course, document)

    def _delete_document(self, connection: Connection, course: str, document: str) -> bool:
        tenant = self.store.tenant
        where = (
            course_chunks.c.tenant == tenant,
            course_chunks.c.course == course,
            course_chunks.c.document == document,
        )
        self._vectors.delete_document(connection, course, document)
        if not self._postgres:
            connection.execute(
                text(
                    "DELETE FROM pedrag_course_fts WHERE rowid IN (SELECT id FROM "
                    "pedrag_course_chunks WHERE tenant = :tenant AND course = :course "
                    "AND document = :document)"
                ),
                {"tenant": tenant, "course": course, "document": document},
            )
        connection.execute(delete(course_chunks).where(*where))
        removed = connection.execute(
            delete(course_documents).where(
                course_documents.c.tenant == tenant,
                course_documents.c.course == course,
                course_documents.c.document == document,
            )
        )
        return bool(removed.rowcount)

    def embed_missing(
        self,
        course: str,
        embedder: Embedder,
        progress: Callable[[int], None] | None = None,
    ) -> EmbeddingReport:
        """Embed every chunk of ``course`` that has no vector of ``embedder``'s model, in
        batches of :data:`EMBED_BATCH`, each stored in its own transaction. Raises
        :class:`CourseIndexError` when the database cannot hold vectors (saying what to
        install) and the embedder's :class:`~pedrag.runtime.llm.interface.LLMError` when the endpoint
        fails; the chunks embedded before a failure keep their vectors."""
        vectors = self._vectors
        model = embedder.model
        embedded = 0
        with self.store._errors(f"embed the passages of course {course!r}"):
            with self.store._transaction(write=False) as connection:
                problem = vectors.problem(connection)
                dimension = vectors.dimension(connection, course, model)
            if problem is not None:
                raise CourseIndexError(f"passage vectors are unavailable: {problem}")
            while True:
                with self.store._transaction(write=False) as connection:
                    rows = vectors.missing(connection, course, model, EMBED_BATCH)
                if not rows:
                    break
                answered = embedder.embed([passage_text(row.heading, row.text) for row in rows])
                if len(answered) != len(rows):
                    raise CourseIndexError(
                        f"the embedding endpoint returned {len(answered)} vectors for "
                        f"{len(rows)} passages"
                    )
                items = []
                for row, vector in zip(rows, answered, strict=True):
                    values = check_vector(vector, dimension)
                    dimension = len(values)
                    items.append((int(row.id), values))
                with self.store._transaction(write=True) as connection:
                    stored = vectors.add(connection, course, model, items)
                embedded += stored
                if progress is not None:
                    progress(embedded)
                if stored == 0:
                    break  # the chunks were deleted meanwhile (a concurrent re-index)
            with self.store._transaction(write=False) as connection:
                left = vectors.count_missing(connection, course, model)
        return EmbeddingReport(model, embedded, left)

    # -- reading -----------------------------------------------------------------------------

    def documents(self, course: str) -> list[dict[str, Any]]:
        """The course's documents: name, content hash, chunk count, when indexed."""
        with self.store._errors(f"list the documents of course {course!r}"):
            with self.store._transaction(write=False) as connection:
                rows = connection.execute(
                    select(course_documents)
                    .where(
                        course_documents.c.tenant == self.store.tenant,
                        course_documents.c.course == course,
                    )
                    .order_by(course_documents.c.document)
                ).all()
        return [
            {
                "document": row.document,
                "content_hash": row.content_hash,
                "chunks": row.chunks,
                "indexed_at": row.indexed_at.isoformat(),
            }
            for row in rows
        ]

    def vector_counts(self, course: str) -> list[dict[str, Any]]:
        """The course's passage vectors per embedding model: model, size, passages embedded
        (what `pedrag index --list` shows next to the documents)."""
        with self.store._errors(f"count the vectors of course {course!r}"):
            with self.store._transaction(write=False) as connection:
                rows = connection.execute(
                    select(
                        course_vectors.c.model,
                        course_vectors.c.dimension,
                        func.count().label("passages"),
                    )
                    .where(
                        course_vectors.c.tenant == self.store.tenant,
                        course_vectors.c.course == course,
                    )
                    .group_by(course_vectors.c.model, course_vectors.c.dimension)
                    .order_by(course_vectors.c.model)
                ).all()
        return [
            {"model": row.model, "dimension": int(row.dimension), "passages": int(row.passages)}
            for row in rows
        ]

    def has_course(self, course: str) -> bool:
        with self.store._errors(f"look up course {course!r}"):
            with self.store._transaction(write=False) as connection:
                found = connection.execute(
                    select(course_documents.c.document)
                    .where(
                        course_documents.c.tenant == self.store.tenant,
                        course_documents.c.course == course,
                    )
                    .limit(1)
                ).first()
        return found is not None

    def search(self, course: str, question: str, limit: int = 3) -> list[Passage]:
        """The course's best passages for ``question``, best first: BM25's top candidates —
        fused by reciprocal rank fusion with the nearest vectors when the index has an
        embedder and the course has vectors of its model — each with its coverage of the
        question; supporting passages (coverage at least :data:`SUPPORT_COVERAGE`) ahead of
        the rest, rank order kept within each group."""
        terms = content_terms(question)
        if not terms:
            return []
        query_vector = self._question_vector(course, question)
        with self.store._errors(f"search course {course!r}"):
            with self.store._transaction(write=False) as connection:
                if self._postgres:
                    rows = self._search_postgres(connection, course, terms)
                else:
                    rows = self._search_sqlite(connection, course, terms)
                found_by = dict.fromkeys((row.id for row in rows), "bm25")
                scores = {row.id: float(row.score) for row in rows}
                if query_vector is not None:
                    rows, scores, found_by = self._fuse(connection, course, rows, query_vector)
        question_stems = stems(terms)
        passages = [
            Passage(
                id=row.id,
                course=course,
                document=row.document,
                label=row.label,
                page=row.page,
                heading=row.heading,
                text=row.text,
                score=scores[row.id],
                coverage=coverage(question_stems, f"{row.heading} {row.text}"),
                found_by=found_by[row.id],
            )
            for row in rows
        ]
        passages.sort(key=lambda passage: not passage.supports)  # stable: rank kept
        return passages[:limit]

    def _question_vector(self, course: str, question: str) -> list[float] | None:
        """The question's vector when the course has vectors of the embedder's model; None
        (BM25 alone) without an embedder, without vectors, or when the endpoint fails."""
        if self.embedder is None:
            return None
        with self.store._errors(f"look up the vectors of course {course!r}"):
            with self.store._transaction(write=False) as connection:
                dimension = self._vectors.dimension(connection, course, self.embedder.model)
                problem = None if dimension is None else self._vectors.problem(connection)
        if dimension is None:
            return None
        if problem is not None:
            logger.warning("course %r: searching without vectors: %s", course, problem)
            return None
        try:
            [vector] = self.embedder.embed([question])
            return check_vector(vector, dimension)
        except (LLMError, CourseIndexError, ValueError) as error:
            logger.warning(
                "course %r: the question was not embedded (%s); BM25 only", course, error
            )
            return None

    def _fuse(
        self, connection: Connection, course: str, bm25: list[Any], query: list[float]
    ) -> tuple[list[Any], dict[int, float], dict[int, str]]:
        """BM25's rows and the nearest vectors' chunks, fused: rows, scores, provenance."""
        assert self.embedder is not None
        nearest = self._vectors.nearest(connection, course, self.embedder.model, query, CANDIDATES)
        lexical = [row.id for row in bm25]
        fused = reciprocal_rank_fusion([lexical, nearest], RRF_K)[:CANDIDATES]
        rows = {row.id: row for row in bm25}
        extra = [chunk_id for chunk_id, _ in fused if chunk_id not in rows]
        if extra:
            for row in connection.execute(
                select(
                    course_chunks.c.id,
                    course_chunks.c.document,
                    course_chunks.c.label,
                    course_chunks.c.page,
                    course_chunks.c.heading,
                    course_chunks.c.text,
                ).where(
                    course_chunks.c.tenant == self.store.tenant,
                    course_chunks.c.course == course,
                    course_chunks.c.id.in_(extra),
                )
            ):
                rows[row.id] = row
        in_vectors, in_lexical = set(nearest), set(lexical)
        found_by = {
            chunk_id: ("both" if chunk_id in in_lexical else "vector")
            if chunk_id in in_vectors
            else "bm25"
            for chunk_id, _ in fused
        }
        ordered = [rows[chunk_id] for chunk_id, _ in fused if chunk_id in rows]
        return ordered, dict(fused), found_by

    def _search_sqlite(self, connection: Connection, course: str, terms: list[str]) -> list[Any]:
        # Each term quoted: FTS5 reads a bare word such as AND, NOT or NEAR as an operator.
        # CROSS JOIN keeps the full-text query the outer loop: newer SQLite versions (3.51)
        # otherwise start from the course's chunks and run the MATCH once per chunk
        # (120 ms instead of 1 ms at 2,000 passages, benchmarks/retrieval.py).
        query = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
        return list(
            connection.execute(
                text(
                    "SELECT c.id, c.document, c.label, c.page, c.heading, c.text, "
                    "-bm25(pedrag_course_fts) AS score FROM pedrag_course_fts "
                    "CROSS JOIN pedrag_course_chunks c ON c.id = pedrag_course_fts.rowid "
                    "WHERE pedrag_course_fts MATCH :query AND c.tenant = :tenant "
                    "AND c.course = :course ORDER BY bm25(pedrag_course_fts) LIMIT :limit"
                ),
                {
                    "query": query,
                    "tenant": self.store.tenant,
                    "course": course,
                    "limit": CANDIDATES,
                },
            ).all()
        )

    def _search_postgres(self, connection: Connection, course: str, terms: list[str]) -> list[Any]:
        # Each term through plainto_tsquery (which stems it and cannot be given syntax), OR-ed.
        parts = " || ".join(f"plainto_tsquery('english', :t{i})" for i in range(len(terms)))
        parameters: dict[str, Any] = {f"t{i}": term for i, term in enumerate(terms)}
        parameters.update(tenant=self.store.tenant, course=course, limit=CANDIDATES)
        return list(
            connection.execute(
                text(
                    "SELECT id, document, label, page, heading, text, "
                    "ts_rank_cd(search, query) AS score FROM pedrag_course_chunks, "
                    f"({'SELECT ' + parts} AS query) AS q "
                    "WHERE search @@ query AND tenant = :tenant AND course = :course "
                    "ORDER BY score DESC, id LIMIT :limit"
                ),
                parameters,
            ).all()
        )
