"""The schema as the store created it before migrations: sessions, audit records, spend.

Revision ID: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "pedrag_sessions",
        sa.Column("id", sa.String(128), primary_key=True),
        sa.Column("meta", _JSON, nullable=False),
        sa.Column("state", _JSON, nullable=False),
        sa.Column("turns", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_pedrag_sessions_updated_at", "pedrag_sessions", ["updated_at"])
    op.create_table(
        "pedrag_audit_records",
        sa.Column(
            "session_id",
            sa.String(128),
            sa.ForeignKey("pedrag_sessions.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("turn_index", sa.Integer, primary_key=True),
        sa.Column("record", _JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "pedrag_spend",
        sa.Column("scope", sa.String(200), primary_key=True),
        sa.Column("usd", sa.Float, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("pedrag_spend")
    op.drop_table("pedrag_audit_records")
    op.drop_index("ix_pedrag_sessions_updated_at", "pedrag_sessions")
    op.drop_table("pedrag_sessions")
