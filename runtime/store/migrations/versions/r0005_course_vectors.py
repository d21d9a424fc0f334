"""Course passage vectors: one embedding per chunk and embedding model, for fused retrieval.

``pedrag index`` with an endpoint (DESIGN, "Grounding") embeds each chunk through
``/v1/embeddings``; search fuses the nearest vectors with BM25. This table records which chunk
has a vector of which model (so an unchanged file is not embedded again). The vector lives in
the dialect's vector extension: on PostgreSQL a pgvector ``embedding vector`` column, added here
when the server has pgvector (without it the table has no such column and ``pedrag index``
says what to install); on SQLite sqlite-vec ``vec0`` tables, created when vectors are first
stored (their size is the model's dimension).

Revision ID: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pedrag_course_vectors",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("chunk_id", sa.Integer, nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("tenant", sa.String(64), nullable=False),
        sa.Column("course", sa.String(128), nullable=False),
        sa.Column("dimension", sa.Integer, nullable=False),
        sa.UniqueConstraint("chunk_id", "model", name="uq_pedrag_course_vectors_chunk_model"),
        sqlite_autoincrement=True,
    )
    op.create_index(
        "ix_pedrag_course_vectors_course", "pedrag_course_vectors", ["tenant", "course", "model"]
    )
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    available = bind.execute(
        sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
    ).first()
    if available is None:
        return
    # In a savepoint: a role that may not create the extension leaves the table without
    # vectors rather than failing the whole upgrade.
    try:
        with bind.begin_nested():
            bind.execute(sa.text("CREATE EXTENSION IF NOT EXISTS vector"))
            bind.execute(sa.text("ALTER TABLE pedrag_course_vectors ADD COLUMN embedding vector"))
    except sa.exc.DBAPIError:
        return


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        for (name,) in (
            op.get_bind()
            .execute(
                sa.text(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name LIKE 'pedrag_course_vec%' AND sql LIKE 'CREATE VIRTUAL TABLE%'"
                )
            )
            .all()
        ):
            op.execute(f'DROP TABLE "{name}"')
    op.drop_index("ix_pedrag_course_vectors_course", "pedrag_course_vectors")
    op.drop_table("pedrag_course_vectors")
