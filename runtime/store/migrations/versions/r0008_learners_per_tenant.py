"""Learner ids per tenant: ``pedrag_learners`` is keyed by ``(tenant, id)``.

Before, the learner id alone was the key, so a tenant creating ``bob`` after another tenant had
got ``409 already exists``: an oracle telling one school which ids another school uses. Now
every tenant has its own id space, and another tenant's id answers exactly as an unknown one.
The table is rebuilt (copied, dropped, renamed) because SQLite's ALTER TABLE cannot change a
primary key; the rows keep their ids.

Revision ID: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "pedrag_learners_by_tenant",
        sa.Column("tenant", sa.String(64), primary_key=True),
        sa.Column("id", sa.String(128), primary_key=True),
        sa.Column("meta", _JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.execute(
        "INSERT INTO pedrag_learners_by_tenant (tenant, id, meta, created_at) "
        "SELECT tenant, id, meta, created_at FROM pedrag_learners"
    )
    op.drop_index("ix_pedrag_learners_tenant", table_name="pedrag_learners")
    op.drop_table("pedrag_learners")
    op.rename_table("pedrag_learners_by_tenant", "pedrag_learners")


def downgrade() -> None:
    raise NotImplementedError("pedrag migrations go forward only; restore a backup instead")
