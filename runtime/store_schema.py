"""The persistence schema: the tables behind :class:`pedrag.runtime.store.SessionStore`.

Runtime stage: persistence. Takes nothing; gives SQLAlchemy Core ``Table`` objects bound to one
``MetaData``.

Why a module of its own: the tables are the contract between the store, any future migration,
and anyone who inspects a deployment's database by hand (``sqlite3 .pedrag/sessions.db``). They
are plain SQLAlchemy Core, portable types only, so the same definitions create the schema on
SQLite (the default) and on PostgreSQL (multi-worker deployments); JSON becomes JSONB there.

Why these columns:

- ``pedrag_sessions.turns`` is the number of committed turns. ``save_turn`` advances it with a
  compare-and-set (``WHERE turns = n - 1``), which is what stops two writers interleaving.
- ``pedrag_audit_records`` is keyed by ``(session_id, turn_index)``, so even a writer that
  bypassed the compare-and-set could not record the same turn twice.
- ``pedrag_spend`` is one running total per scope (a deployment, a tenant, ...), updated with a
  single atomic upsert.

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
    Integer,
    MetaData,
    String,
    Table,
)
from sqlalchemy.dialects.postgresql import JSONB

# JSONB on PostgreSQL: binary storage, and the server validates the document on insert.
JSONDocument = JSON().with_variant(JSONB(), "postgresql")

metadata = MetaData()

sessions = Table(
    "pedrag_sessions",
    metadata,
    Column("id", String(128), primary_key=True),
    Column("meta", JSONDocument, nullable=False),
    Column("state", JSONDocument, nullable=False),
    Column("turns", Integer, nullable=False, default=0),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False, index=True),
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
)

# A learner's evidence per goal, kept across sessions (DESIGN, "Learners, grading and mastery"):
# the BKT mastery estimate, how many graded answers it rests on, and the exercises solved.
learner_goals = Table(
    "pedrag_learner_goals",
    metadata,
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
    Column("scope", String(200), primary_key=True),
    Column("usd", Float, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)
