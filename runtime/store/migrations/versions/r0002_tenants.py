"""Tenants: a tenant on every row, the tenant and API-key directory, learners, rate windows.

Rows written before this revision belong to the ``default`` tenant. ``pedrag_spend`` gains the
tenant in its primary key, so it is rebuilt (copied, dropped, renamed), which works the same on
SQLite, whose ALTER TABLE cannot change a primary key.

Revision ID: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(JSONB(), "postgresql")
_TENANT = sa.String(64)


def upgrade() -> None:
    op.add_column(
        "pedrag_sessions",
        sa.Column("tenant", _TENANT, nullable=False, server_default="default"),
    )
    op.add_column("pedrag_sessions", sa.Column("learner_id", sa.String(128), nullable=True))
    op.create_index(
        "ix_pedrag_sessions_tenant_updated", "pedrag_sessions", ["tenant", "updated_at"]
    )
    op.create_index(
        "ix_pedrag_sessions_tenant_learner", "pedrag_sessions", ["tenant", "learner_id"]
    )
    op.add_column(
        "pedrag_audit_records",
        sa.Column("tenant", _TENANT, nullable=False, server_default="default"),
    )

    op.create_table(
        "pedrag_spend_by_tenant",
        sa.Column("tenant", _TENANT, primary_key=True),
        sa.Column("scope", sa.String(200), primary_key=True),
        sa.Column("usd", sa.Float, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.execute(
        "INSERT INTO pedrag_spend_by_tenant (tenant, scope, usd, updated_at) "
        "SELECT 'default', scope, usd, updated_at FROM pedrag_spend"
    )
    op.drop_table("pedrag_spend")
    op.rename_table("pedrag_spend_by_tenant", "pedrag_spend")

    op.create_table(
        "pedrag_tenants",
        sa.Column("id", _TENANT, primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("retention_days", sa.Integer, nullable=True),
        sa.Column("max_usd", sa.Float, nullable=True),
        sa.Column("requests_per_minute", sa.Integer, nullable=True),
    )
    op.create_table(
        "pedrag_api_keys",
        sa.Column("key_hash", sa.String(64), primary_key=True),
        sa.Column(
            "tenant",
            _TENANT,
            sa.ForeignKey("pedrag_tenants.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("label", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_pedrag_api_keys_tenant", "pedrag_api_keys", ["tenant"])
    op.create_table(
        "pedrag_learners",
        sa.Column("id", sa.String(128), primary_key=True),
        sa.Column("tenant", _TENANT, nullable=False),
        sa.Column("meta", _JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_pedrag_learners_tenant", "pedrag_learners", ["tenant"])
    op.create_table(
        "pedrag_rate_windows",
        sa.Column("tenant", _TENANT, primary_key=True),
        sa.Column("minute", sa.Integer, primary_key=True),
        sa.Column("requests", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    raise NotImplementedError("pedrag migrations go forward only; restore a backup instead")
