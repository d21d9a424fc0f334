"""The persistence schema: the tables behind :class:`pedrag.runtime.store.session_store.SessionStore`.

Runtime stage: persistence. Takes nothing; gives SQLAlchemy Core ``Table`` objects bound to one
``MetaData``.

Why a module of its own: the tables are the contract between the store, any future migration,
and anyone who inspects a deployment's database by hand (``sqlite3 .pedrag/sessions.db``). They
are plain SQLAlchemy Core, portable types only, so the same definitions create the schema on
SQLite (the default) and on PostgreSQL (multi-worker deployments); JSON becomes JSONB there.

Why these columns:

- ``pedrag_sessions.turns`` is the number of committed turns. ``save_turn`` advances it with a
  compare-and-set (``WHERE turns = n - 1``), which is what stops two writers interleaving.
- ``pedrag_sessions.version`` goes up with every write of the state, a turn's or an
  instructor's toggle: a turn commits only against the version it read, so a toggle that
  landed meanwhile is never overwritten by a turn that started before it.
- ``pedrag_audit_records`` is keyed by ``(session_id, turn_index)``, so even a writer that
  bypassed the compare-and-set could not record the same turn twice.
- ``pedrag_spend`` is one running total per ``(tenant, scope)``, updated with a single atomic
  upsert.
- **Every row carries its tenant** (``tenant``; ``default`` for a single-deployment database),
  and the store adds ``tenant = ?`` to every statement it runs (see the store's docstring).
  ``pedrag_tenants`` and ``pedrag_api_keys`` are the directory the HTTP service authenticates
  against: an API key is stored only as its SHA-256 digest, with its role (``learner``,
  ``instructor``, ``admin``) and, once revoked, when (``revoked_at``).
- ``pedrag_learners`` are the people sessions belong to, keyed by ``(tenant, id)`` so each
  tenant has its own ids; deleting a learner deletes their sessions and audit records (the
  service's deletion endpoint).
- ``pedrag_exam_sittings`` holds one row per sitting of an exam by a learner, keyed by
  ``(tenant, learner_id, exam_id, sitting)`` and written in the transaction that creates the
  exam's session, so two racing creations cannot both sit; ``pedrag_exam_retakes`` holds an
  instructor's grant of one more sitting (who granted it, when). A learner key names its
  learner in ``pedrag_api_keys.learner_id``.
- ``pedrag_rate_windows`` counts requests per tenant per minute, one atomic upsert per request,
  so a rate limit holds across every worker of a deployment.
- ``pedrag_course_documents`` and ``pedrag_course_chunks`` are a course's indexed materials
  (``pedrag index``; DESIGN, "Grounding"): one row per file with its content hash, so
  re-indexing a changed file replaces only its chunks, and one row per chunk with its position
  (page, heading) and citation label. The full-text index over the chunks is dialect-specific
  and not a Core table: an FTS5 virtual table ``pedrag_course_fts`` (BM25) on SQLite, a
  generated ``tsvector`` column with a GIN index on PostgreSQL (``pedrag.runtime.course.index``).
- ``pedrag_course_vectors`` records one embedding per chunk and embedding model (``pedrag index``
  with an endpoint). The vector itself is the vector extension's: on PostgreSQL a pgvector
  ``embedding vector`` column of this table (added by the migration where the server has
  pgvector); on SQLite a sqlite-vec ``vec0`` virtual table per dimension,
  ``pedrag_course_vec_<N>``, keyed by this table's ``id`` (``pedrag.runtime.course.vectors``).

The tables are created and changed only by the Alembic migrations in
``pedrag.runtime.store.migrations`` (applied by ``pedrag.runtime.store.migrate`` when a store opens); these
definitions describe the head revision and the store's queries are written against them.

Table names carry a ``pedrag_`` prefix so they can share a PostgreSQL database with other
applications. Timestamps are UTC; SQLite stores them without an offset, the store reattaches it.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB

from pedrag.runtime.store.documents import TENANT_ID_LENGTH

# JSONB on PostgreSQL: binary storage, and the server validates the document on insert.
JSONDocument = JSON().with_variant(JSONB(), "postgresql")

metadata = MetaData()

DEFAULT_TENANT = "default"
"""The tenant of every row written without one: the CLI, the Python API, a single deployment."""


sessions = Table(
    "pedrag_sessions",
    metadata,
    Column("id", String(128), primary_key=True),
    Column("meta", JSONDocument, nullable=False),
    Column("state", JSONDocument, nullable=False),
    Column("turns", Integer, nullable=False, default=0),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False, index=True),
    Column("tenant", String(TENANT_ID_LENGTH), nullable=False, server_default=DEFAULT_TENANT),
    Column("learner_id", String(128), nullable=True),
    # Up by one with every state write (a turn, a toggle): the compare-and-set they share.
    Column("version", Integer, nullable=False, server_default="0"),
    Index("ix_pedrag_sessions_tenant_updated", "tenant", "updated_at"),
    Index("ix_pedrag_sessions_tenant_learner", "tenant", "learner_id"),
)

audit_records = Table(
    "pedrag_audit_records",
    metadata,
    Column(
        "session_id",
        String(128),
        ForeignKey("pedrag_sessions.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("turn_index", Integer, primary_key=True),
    Column("record", JSONDocument, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("tenant", String(TENANT_ID_LENGTH), nullable=False, server_default=DEFAULT_TENANT),
)

# A learner's evidence per goal, kept across sessions (DESIGN, "Learners, grading and mastery"):
# the BKT mastery estimate, how many graded answers it rests on, and the exercises solved.
learner_goals = Table(
    "pedrag_learner_goals",
    metadata,
    Column("tenant", String(TENANT_ID_LENGTH), primary_key=True),
    Column("learner_id", String(128), primary_key=True),
    Column("goal_id", String(128), primary_key=True),
    Column("mastery", Float, nullable=False),
    Column("evidence", Integer, nullable=False),
    Column("solved", JSONDocument, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

spend = Table(
    "pedrag_spend",
    metadata,
    Column("tenant", String(TENANT_ID_LENGTH), primary_key=True),
    Column("scope", String(200), primary_key=True),
    Column("usd", Float, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

tenants = Table(
    "pedrag_tenants",
    metadata,
    Column("id", String(TENANT_ID_LENGTH), primary_key=True),
    Column("name", String(200), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    # None: no limit. Retention counts days since a session's last turn.
    Column("retention_days", Integer, nullable=True),
    Column("max_usd", Float, nullable=True),
    Column("requests_per_minute", Integer, nullable=True),
)

api_keys = Table(
    "pedrag_api_keys",
    metadata,
    Column("key_hash", String(64), primary_key=True),  # hex SHA-256 of the key
    Column(
        "tenant",
        String(TENANT_ID_LENGTH),
        ForeignKey("pedrag_tenants.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    Column("label", String(200), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    # learner, instructor or admin (the service's roles); keys from before roles are admin.
    Column("role", String(16), nullable=False, server_default="admin"),
    Column("revoked_at", DateTime(timezone=True), nullable=True),  # None: in force
    # A learner key's learner (pedrag_learners, same tenant): its sessions are that learner's.
    # None: an instructor or admin key, or a learner key for anonymous practice only.
    Column("learner_id", String(128), nullable=True),
)

learners = Table(
    "pedrag_learners",
    metadata,
    # Keyed per tenant: one school's ids say nothing about another's (no 409 oracle).
    Column("tenant", String(TENANT_ID_LENGTH), primary_key=True),
    Column("id", String(128), primary_key=True),
    Column("meta", JSONDocument, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

# One row per sitting of an exam, written in the transaction that creates the exam's session:
# the primary key is what stops two racing creations from both sitting (docs/service.md).
exam_sittings = Table(
    "pedrag_exam_sittings",
    metadata,
    Column("tenant", String(TENANT_ID_LENGTH), primary_key=True),
    Column("learner_id", String(128), primary_key=True),
    Column("exam_id", String(128), primary_key=True),
    Column("sitting", Integer, primary_key=True),  # 1 for the first, 2 after a retake...
    Column("session_id", String(128), nullable=False),
    Column("sat_at", DateTime(timezone=True), nullable=False),
)

# An instructor's grant of one more sitting: sitting ``sitting`` may be sat (and only it).
exam_retakes = Table(
    "pedrag_exam_retakes",
    metadata,
    Column("tenant", String(TENANT_ID_LENGTH), primary_key=True),
    Column("learner_id", String(128), primary_key=True),
    Column("exam_id", String(128), primary_key=True),
    Column("sitting", Integer, primary_key=True),
    Column("granted_by", String(200), nullable=False),  # the granting key's id (or "cli")
    Column("granted_at", DateTime(timezone=True), nullable=False),
)

rate_windows = Table(
    "pedrag_rate_windows",
    metadata,
    Column("tenant", String(TENANT_ID_LENGTH), primary_key=True),
    Column("minute", Integer, primary_key=True),  # minutes since the epoch
    Column("requests", Integer, nullable=False),
)

course_documents = Table(
    "pedrag_course_documents",
    metadata,
    Column("tenant", String(TENANT_ID_LENGTH), primary_key=True),
    Column("course", String(128), primary_key=True),
    Column("document", String(500), primary_key=True),  # the file, relative to what was indexed
    Column("content_hash", String(64), nullable=False),  # hex SHA-256 of the file's bytes
    Column("chunks", Integer, nullable=False),
    Column("indexed_at", DateTime(timezone=True), nullable=False),
)

course_chunks = Table(
    "pedrag_course_chunks",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),  # the FTS5 rowid on SQLite
    Column("tenant", String(TENANT_ID_LENGTH), nullable=False),
    Column("course", String(128), nullable=False),
    Column("document", String(500), nullable=False),
    Column("ordinal", Integer, nullable=False),  # position within the document, from 0
    Column("label", String(200), nullable=False),  # how a citation names the document
    Column("page", Integer, nullable=True),  # 1-based; None for a document without pages
    Column("heading", String(500), nullable=False),
    Column("text", Text, nullable=False),
    Index("ix_pedrag_course_chunks_document", "tenant", "course", "document"),
)

course_vectors = Table(
    "pedrag_course_vectors",
    metadata,
    # AUTOINCREMENT on SQLite: an id is the vec0 rowid and is never reused.
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("chunk_id", Integer, nullable=False),  # pedrag_course_chunks.id
    Column("model", String(200), nullable=False),  # the embedding model that made it
    Column("tenant", String(TENANT_ID_LENGTH), nullable=False),
    Column("course", String(128), nullable=False),
    Column("dimension", Integer, nullable=False),
    UniqueConstraint("chunk_id", "model", name="uq_pedrag_course_vectors_chunk_model"),
    Index("ix_pedrag_course_vectors_course", "tenant", "course", "model"),
    sqlite_autoincrement=True,
)
