"""Course passage vectors: one embedding per chunk and model, stored and searched with the
database's vector extension — sqlite-vec on SQLite, pgvector on PostgreSQL.

Runtime, retrieval (DESIGN, "Grounding"). Takes chunk ids with their vectors (from
``/v1/embeddings``, :class:`EndpointEmbeddings`) and a question's vector; gives the chunk ids
nearest to it by cosine distance. :class:`~pedrag.runtime.course.index.CourseIndex` fuses that
ranking with BM25's; this module only stores and ranks.

Why it looks like this:

- **The extension does the search.** SQLite: a ``vec0`` virtual table per dimension
  (``pedrag_course_vec_<N>``, created the first time vectors of that size are stored), its
  partition key the tenant, course and model, queried with ``MATCH`` and ``k``. PostgreSQL: the
  ``embedding vector`` column of ``pedrag_course_vectors`` ordered by pgvector's ``<=>``
  (exact search: one course holds thousands of chunks, not millions, and an approximate index
  would need one fixed dimension for every model).
- **Keyed by chunk and model.** ``pedrag_course_vectors`` says which chunk has a vector of
  which model, so re-indexing embeds exactly the chunks that have none: a changed file's new
  chunks (its old ones and their vectors are deleted with it), never an unchanged file's.
- Vectors are written inside the caller's transaction, with the chunk rows they belong to.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, Protocol

from sqlalchemy import Connection, delete, func, select, text

from pedrag.runtime.course.passages import CourseIndexError
from pedrag.runtime.store.schema import course_chunks, course_vectors
from pedrag.runtime.store.sqlite_driver import serialize_vector, vectors_unavailable

#: What a PostgreSQL administrator runs when the server got pgvector after the migration.
PGVECTOR_SETUP = (
    "CREATE EXTENSION vector; ALTER TABLE pedrag_course_vectors ADD COLUMN embedding vector"
)


class Embedder(Protocol):
    """Texts to vectors with one named model (the model keys the stored vectors)."""

    model: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class EndpointEmbeddings:
    """``/v1/embeddings`` of an OpenAI-compatible backend (its ``PEDRAG_EMBEDDING_MODEL``):
    batched, retried and reported like every call of that backend; its errors are
    :class:`~pedrag.runtime.llm.interface.LLMError`."""

    def __init__(self, backend: Any, role: str = "extractor") -> None:
        self.backend = backend
        self.role = role
        self.model = str(backend.settings.embedding_model)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.backend.embed(list(texts), role=self.role)  # type: ignore[no-any-return]


def endpoint_embeddings(backend: Any, role: str = "actor") -> EndpointEmbeddings | None:
    """The embeddings of ``backend`` when it is an endpoint that has them, else None."""
    settings = getattr(backend, "settings", None)
    if callable(getattr(backend, "embed", None)) and hasattr(settings, "embedding_model"):
        return EndpointEmbeddings(backend, role)
    return None


def passage_text(heading: str, body: str) -> str:
    """What a chunk's vector embeds: its heading (when it has one) and its text."""
    return f"{heading}\n{body}" if heading else body


def check_vector(vector: Sequence[float], dimension: int | None = None) -> list[float]:
    """``vector`` as floats, refusing an empty one, a non-finite value or a wrong size."""
    values = [float(value) for value in vector]
    if not values or not all(math.isfinite(value) for value in values):
        raise CourseIndexError("the embedding endpoint returned an empty or non-finite vector")
    if dimension is not None and len(values) != dimension:
        raise CourseIndexError(
            f"the embedding endpoint returned {len(values)} numbers where this course's "
            f"vectors have {dimension}: one embedding model must serve one course"
        )
    return values


class VectorTables:
    """The vector rows of one tenant, on one dialect; every method runs in the caller's
    connection (its transaction)."""

    def __init__(self, tenant: str, postgres: bool) -> None:
        self.tenant = tenant
        self.postgres = postgres
        self._column_seen = False  # once there, the vector column stays: not asked per search

    def problem(self, connection: Connection) -> str | None:
        """Why this database cannot hold vectors (with what to install), or None."""
        if not self.postgres:
            return vectors_unavailable()
        if self._column_seen:
            return None
        has_column = connection.execute(
            text(
                "SELECT 1 FROM information_schema.columns WHERE table_name = "
                "'pedrag_course_vectors' AND column_name = 'embedding' "
                "AND table_schema = current_schema()"
            )
        ).first()
        if has_column is None:
            return (
                "this PostgreSQL server had no pgvector extension when pedrag's tables were "
                "created; install pgvector (https://github.com/pgvector/pgvector) and run: "
                + PGVECTOR_SETUP
            )
        self._column_seen = True
        return None

    def dimension(self, connection: Connection, course: str, model: str) -> int | None:
        """The size of the course's vectors of ``model``; None when it has none."""
        found = connection.execute(
            select(course_vectors.c.dimension)
            .where(
                course_vectors.c.tenant == self.tenant,
                course_vectors.c.course == course,
                course_vectors.c.model == model,
            )
            .limit(1)
        ).scalar_one_or_none()
        return int(found) if found is not None else None

    def missing(self, connection: Connection, course: str, model: str, limit: int) -> list[Any]:
        """Up to ``limit`` of the course's chunks without a vector of ``model`` (id order)."""
        query = select(course_chunks.c.id, course_chunks.c.heading, course_chunks.c.text)
        return list(
            connection.execute(
                self._without_vector(query, course, model).order_by(course_chunks.c.id).limit(limit)
            ).all()
        )

    def count_missing(self, connection: Connection, course: str, model: str) -> int:
        """How many of the course's chunks have no vector of ``model``."""
        query = select(func.count()).select_from(course_chunks)
        return int(connection.execute(self._without_vector(query, course, model)).scalar_one())

    def _without_vector(self, query: Any, course: str, model: str) -> Any:
        has_vector = (
            select(course_vectors.c.id)
            .where(course_vectors.c.chunk_id == course_chunks.c.id)
            .where(course_vectors.c.model == model)
            .exists()
        )
        return query.where(
            course_chunks.c.tenant == self.tenant, course_chunks.c.course == course, ~has_vector
        )

    def add(
        self,
        connection: Connection,
        course: str,
        model: str,
        items: Sequence[tuple[int, list[float]]],
    ) -> int:
        """Store one vector per chunk id (chunks deleted meanwhile are skipped); the count."""
        if not items:
            return 0
        dimension = len(items[0][1])
        existing = set(
            connection.execute(
                select(course_chunks.c.id).where(
                    course_chunks.c.tenant == self.tenant,
                    course_chunks.c.course == course,
                    course_chunks.c.id.in_([chunk_id for chunk_id, _ in items]),
                )
            ).scalars()
        )
        table = _vec_table(dimension)
        if not self.postgres:
            connection.execute(
                text(
                    f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0(scope text "
                    f"partition key, embedding float[{dimension}] distance_metric=cosine)"
                )
            )
        stored = 0
        for chunk_id, vector in items:
            if chunk_id not in existing:
                continue
            values = {
                "chunk_id": chunk_id,
                "model": model,
                "tenant": self.tenant,
                "course": course,
                "dimension": dimension,
            }
            if self.postgres:
                connection.execute(
                    text(
                        "INSERT INTO pedrag_course_vectors (chunk_id, model, tenant, course, "
                        "dimension, embedding) VALUES (:chunk_id, :model, :tenant, :course, "
                        ":dimension, CAST(:embedding AS vector))"
                    ),
                    values | {"embedding": _pg_literal(vector)},
                )
            else:
                row_id = connection.execute(
                    course_vectors.insert().values(**values).returning(course_vectors.c.id)
                ).scalar_one()
                connection.execute(
                    text(f"INSERT INTO {table} (rowid, scope, embedding) VALUES (:id, :scope, :v)"),
                    {
                        "id": row_id,
                        "scope": self._scope(course, model),
                        "v": serialize_vector(vector),
                    },
                )
            stored += 1
        return stored

    def nearest(
        self, connection: Connection, course: str, model: str, vector: list[float], k: int
    ) -> list[int]:
        """The ids of the ``k`` chunks nearest to ``vector`` by cosine distance, nearest first."""
        if self.postgres:
            rows = connection.execute(
                text(
                    "SELECT chunk_id FROM pedrag_course_vectors WHERE tenant = :tenant AND "
                    "course = :course AND model = :model AND dimension = :dimension "
                    "ORDER BY embedding <=> CAST(:query AS vector), chunk_id LIMIT :k"
                ),
                {
                    "tenant": self.tenant,
                    "course": course,
                    "model": model,
                    "dimension": len(vector),
                    "query": _pg_literal(vector),
                    "k": k,
                },
            )
        else:
            rows = connection.execute(
                text(
                    # Materialised: the KNN runs once, never once per joined row.
                    "WITH knn AS MATERIALIZED (SELECT rowid, distance FROM "
                    f"{_vec_table(len(vector))} WHERE embedding MATCH :query AND k = :k "
                    "AND scope = :scope) SELECT v.chunk_id FROM knn JOIN pedrag_course_vectors "
                    "v ON v.id = knn.rowid ORDER BY knn.distance, v.chunk_id"
                ),
                {
                    "query": serialize_vector(vector),
                    "k": k,
                    "scope": self._scope(course, model),
                },
            )
        return [int(row.chunk_id) for row in rows]

    def delete_document(self, connection: Connection, course: str, document: str) -> None:
        """Delete the vectors of one document's chunks (before the chunks themselves)."""
        chunk_ids = select(course_chunks.c.id).where(
            course_chunks.c.tenant == self.tenant,
            course_chunks.c.course == course,
            course_chunks.c.document == document,
        )
        owned = course_vectors.c.chunk_id.in_(chunk_ids)
        if not self.postgres:
            dimensions = connection.execute(
                select(course_vectors.c.dimension).where(owned).distinct()
            ).scalars()
            for dimension in list(dimensions):
                problem = vectors_unavailable()
                if problem is not None:
                    raise CourseIndexError(
                        f"course {course!r} has passage vectors stored with sqlite-vec, which "
                        f"cannot be loaded here ({problem}), so {document!r} cannot be changed"
                    )
                connection.execute(
                    text(
                        f"DELETE FROM {_vec_table(dimension)} WHERE rowid IN "
                        "(SELECT id FROM pedrag_course_vectors WHERE dimension = :dimension "
                        "AND chunk_id IN (SELECT id FROM pedrag_course_chunks WHERE tenant = "
                        ":tenant AND course = :course AND document = :document))"
                    ),
                    {
                        "dimension": dimension,
                        "tenant": self.tenant,
                        "course": course,
                        "document": document,
                    },
                )
        connection.execute(delete(course_vectors).where(owned))

    def _scope(self, course: str, model: str) -> str:
        # The vec0 partition key: unambiguous for any tenant, course and model strings.
        return json.dumps([self.tenant, course, model])


def _vec_table(dimension: int) -> str:
    return f"pedrag_course_vec_{int(dimension)}"


def _pg_literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(value)) for value in vector) + "]"
