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
- **Support, not just rank.** BM25 ranks any passage sharing a word with the question; a
  passage *supports* an answer only when it covers enough of the question's content words
  (:data:`SUPPORT_COVERAGE`, stemmed with the Snowball English stemmer). With none that does,
  the tutor says the materials do not cover it instead of inventing an answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, delete, insert, select, text

from pedrag.runtime.passages import (
    CANDIDATES,
    SUPPORT_COVERAGE,
    ChunkInput,
    CourseIndexError,
    Passage,
    content_hash,
    content_terms,
    coverage,
    document_label,
    require_course_id,
    stems,
)
from pedrag.runtime.store import SessionStore, _utcnow
from pedrag.runtime.store_schema import course_chunks, course_documents

# The plain values and the support measure live in `pedrag.runtime.passages` (no database);
# they are re-exported here for the callers that index and search.
__all__ = [
    "CANDIDATES",
    "SUPPORT_COVERAGE",
    "ChunkInput",
    "CourseIndex",
    "CourseIndexError",
    "Passage",
    "content_hash",
    "content_terms",
    "coverage",
    "document_label",
    "require_course_id",
    "stems",
]


class CourseIndex:
    """A tenant's course materials in a :class:`SessionStore`'s database."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    @property
    def _postgres(self) -> bool:
        return self.store._engine.dialect.name == "postgresql"

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
        """The course's best passages for ``question``, best first: BM25's top candidates,
        each with its coverage of the question; supporting passages (coverage at least
        :data:`SUPPORT_COVERAGE`) ahead of the rest, rank order kept within each group."""
        terms = content_terms(question)
        if not terms:
            return []
        with self.store._errors(f"search course {course!r}"):
            with self.store._transaction(write=False) as connection:
                if self._postgres:
                    rows = self._search_postgres(connection, course, terms)
                else:
                    rows = self._search_sqlite(connection, course, terms)
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
                score=float(row.score),
                coverage=coverage(question_stems, f"{row.heading} {row.text}"),
            )
            for row in rows
        ]
        passages.sort(key=lambda passage: not passage.supports)  # stable: rank kept
        return passages[:limit]

    def _search_sqlite(self, connection: Connection, course: str, terms: list[str]) -> list[Any]:
        # Each term quoted: FTS5 reads a bare word such as AND, NOT or NEAR as an operator.
        query = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
        return list(
            connection.execute(
                text(
                    "SELECT c.id, c.document, c.label, c.page, c.heading, c.text, "
                    "-bm25(pedrag_course_fts) AS score FROM pedrag_course_fts "
                    "JOIN pedrag_course_chunks c ON c.id = pedrag_course_fts.rowid "
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
