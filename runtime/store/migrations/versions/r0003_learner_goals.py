"""Learner goals: a learner's knowledge-tracing evidence per goal, kept across sessions.

One row per (tenant, learner, goal): the BKT mastery estimate, how many graded answers it rests
on, and the exercises solved. Written in the same transaction as the turn that graded them.

Revision ID: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "pedrag_learner_goals",
        sa.Column("tenant", sa.String(64), primary_key=True),
        sa.Column("learner_id", sa.String(128), primary_key=True),
        sa.Column("goal_id", sa.String(128), primary_key=True),
        sa.Column("mastery", sa.Float, nullable=False),
        sa.Column("evidence", sa.Integer, nullable=False),
        sa.Column("solved", _JSON, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("pedrag_learner_goals")
