"""Key roles and revocation: every API key has a role (learner, instructor, admin) and may be
revoked.

Keys issued before this revision could do everything, so they become ``admin`` keys: nothing a
deployment relies on stops working, and its operator replaces them with keys of narrower roles
(``pedrag serve --issue-key TENANT --role learner``, then ``--revoke-key ID``). A revoked key
keeps its row (``revoked_at``), so ``--list-keys`` shows when it stopped working.

Revision ID: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "pedrag_api_keys",
        sa.Column("role", sa.String(16), nullable=False, server_default="admin"),
    )
    op.add_column(
        "pedrag_api_keys", sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True)
    )


def downgrade() -> None:
    raise NotImplementedError("pedrag migrations go forward only; restore a backup instead")
