"""Course materials: indexed documents, their chunks, and a full-text index over the chunks.

``pedrag index`` (DESIGN, "Grounding") stores one row per file (with its content hash, so a
changed file's chunks are replaced and an unchanged file is skipped) and one row per chunk.
The full-text index is the dialect's own: an FTS5 virtual table on SQLite, ranked with BM25
(stemmed with FTS5's porter tokenizer), and on PostgreSQL a generated ``tsvector`` column over
heading and text with a GIN index, ranked with ``ts_rank_cd``.

Revision ID: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pedrag_course_documents",
        sa.Column("tenant", sa.String(64), primary_key=True),
        sa.Column("course", sa.String(128), primary_key=True),
        sa.Column("document", sa.String(500), primary_key=True),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("chunks", sa.Integer, nullable=False),
        sa.Column("indexed_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "pedrag_course_chunks",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("tenant", sa.String(64), nullable=False),
        sa.Column("course", sa.String(128), nullable=False),
        sa.Column("document", sa.String(500), nullable=False),
        sa.Column("ordinal", sa.Integer, nullable=False),
        sa.Column("label", sa.String(200), nullable=False),
        sa.Column("page", sa.Integer, nullable=True),
        sa.Column("heading", sa.String(500), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
    )
    op.create_index(
        "ix_pedrag_course_chunks_document",
        "pedrag_course_chunks",
        ["tenant", "course", "document"],
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "ALTER TABLE pedrag_course_chunks ADD COLUMN search tsvector GENERATED ALWAYS AS "
            "(to_tsvector('english', heading || ' ' || text)) STORED"
        )
        op.execute(
            "CREATE INDEX ix_pedrag_course_chunks_search ON pedrag_course_chunks USING GIN (search)"
        )
    else:
        # External-content-free FTS5 table keyed by the chunk's id (its rowid); the store
        # writes both in one transaction.
        op.execute(
            "CREATE VIRTUAL TABLE pedrag_course_fts USING fts5("
            "heading, text, tokenize = 'porter unicode61')"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        op.execute("DROP TABLE pedrag_course_fts")
    op.drop_index("ix_pedrag_course_chunks_document", "pedrag_course_chunks")
    op.drop_table("pedrag_course_chunks")
    op.drop_table("pedrag_course_documents")
