"""Exam sittings as records, retakes, and learner keys bound to a learner.

- ``pedrag_exam_sittings``: one row per sitting of an exam, keyed by (tenant, learner, exam,
  sitting), written with the exam's session so two racing creations cannot both sit.
- ``pedrag_exam_retakes``: an instructor's grant of one more sitting, with who and when.
- ``pedrag_api_keys.learner_id``: the learner a learner key acts as. Keys issued before keep
  ``NULL``: a learner key without a learner still starts and continues anonymous sessions,
  but can no longer name a learner (it used to name any learner of its tenant).

Sittings from before this revision were found by scanning sessions; they are copied here
once, so they still count: every session whose state carries the exam lock
(``state.extra.exam_lock``, set on every exam session) and whose meta names a learner
(``learner`` or ``learner_id``) is a sitting of its exercise, numbered by creation time.
An anonymous exam session was never a sitting and is not made one.

Revision ID: 0009
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("pedrag_api_keys", sa.Column("learner_id", sa.String(128), nullable=True))
    sittings = op.create_table(
        "pedrag_exam_sittings",
        sa.Column("tenant", sa.String(64), primary_key=True),
        sa.Column("learner_id", sa.String(128), primary_key=True),
        sa.Column("exam_id", sa.String(128), primary_key=True),
        sa.Column("sitting", sa.Integer, primary_key=True),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("sat_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "pedrag_exam_retakes",
        sa.Column("tenant", sa.String(64), primary_key=True),
        sa.Column("learner_id", sa.String(128), primary_key=True),
        sa.Column("exam_id", sa.String(128), primary_key=True),
        sa.Column("sitting", sa.Integer, primary_key=True),
        sa.Column("granted_by", sa.String(200), nullable=False),
        sa.Column("granted_at", sa.DateTime(timezone=True), nullable=False),
    )
    rows = old_sittings(op.get_bind())
    if rows:
        op.bulk_insert(sittings, rows)


def old_sittings(connection: sa.Connection) -> list[dict[str, Any]]:
    """The sittings the sessions already stored record, numbered per (tenant, learner, exam)
    by creation time (ties by session id)."""
    found = sa.text(
        "SELECT id, tenant, meta, state, created_at FROM pedrag_sessions ORDER BY created_at, id"
    ).columns(created_at=sa.DateTime(timezone=True), meta=sa.JSON(), state=sa.JSON())
    counts: dict[tuple[str, str, str], int] = {}
    rows = []
    for row in connection.execute(found):
        meta, state = _document(row.meta), _document(row.state)
        extra = _document(state.get("extra"))
        learner = meta.get("learner") or meta.get("learner_id")
        exam = meta.get("exercise") or state.get("exercise_id")
        if extra.get("exam_lock") is not True or not isinstance(learner, str):
            continue
        if not isinstance(exam, str) or len(learner) > 128 or len(exam) > 128:
            continue
        key = (row.tenant, learner, exam)
        counts[key] = counts.get(key, 0) + 1
        rows.append(
            {
                "tenant": row.tenant,
                "learner_id": learner,
                "exam_id": exam,
                "sitting": counts[key],
                "session_id": row.id,
                "sat_at": row.created_at,
            }
        )
    return rows


def _document(value: Any) -> dict[str, Any]:
    """A JSON column's document (text, should a driver hand it over unparsed)."""
    if isinstance(value, str | bytes):
        value = json.loads(value)
    return value if isinstance(value, dict) else {}


def downgrade() -> None:
    raise NotImplementedError("pedrag migrations go forward only; restore a backup instead")
