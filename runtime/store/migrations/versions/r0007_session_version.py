"""A session version that toggles and turns share.

``pedrag_sessions.version`` goes up by one with every write of a session's state: a committed
turn and an instructor's toggle alike. A turn commits only against the version it read, so a
toggle that landed while the turn ran makes the turn lose (it is re-run on the new state, or
answers 409) instead of overwriting the toggle with the state it read before it. The turn
count alone could not say this: a toggle does not change it.

Revision ID: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "pedrag_sessions",
        sa.Column("version", sa.Integer, nullable=False, server_default="0"),
    )


def downgrade() -> None:
    raise NotImplementedError("pedrag migrations go forward only; restore a backup instead")
