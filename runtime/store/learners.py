"""Learners and their goals: who a session belongs to, and their mastery across sessions.

Runtime stage: persistence. Takes a learner id (and the goals a turn changed) and gives the
learner's record and goals as last committed; deleting a learner deletes every session, audit
record and goal record of theirs in one transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from pedrag.runtime.store.connection import StoreConnection
from pedrag.runtime.store.documents import (
    _as_utc,
    _require_document,
    _require_json,
    _require_session_id,
    _utcnow,
)
from pedrag.runtime.store.errors import AlreadyExists, LearnerNotFound
from pedrag.runtime.store.schema import (
    api_keys,
    audit_records,
    exam_retakes,
    exam_sittings,
    learner_goals,
    learners,
    sessions,
)
from pedrag.runtime.store.statements import Statements


def delete_sessions(connection: Connection, tenant: str, condition: Any) -> int:
    """Delete ``tenant``'s sessions that match ``condition`` (a clause over ``sessions``), their
    audit records first, in the caller's transaction; returns how many sessions went. One
    place for the rule that no audit record outlives its session (deleting a learner, expiry)."""
    matching = select(sessions.c.id).where(sessions.c.tenant == tenant, condition)
    connection.execute(
        delete(audit_records).where(
            audit_records.c.tenant == tenant, audit_records.c.session_id.in_(matching)
        )
    )
    return int(
        connection.execute(delete(sessions).where(sessions.c.tenant == tenant, condition)).rowcount
    )


class LearnerRecords(StoreConnection):
    """Learners of this store's tenant and their goals."""

    def _write_learner(
        self,
        statements: Statements,
        learner_id: str,
        goals: Mapping[str, Mapping[str, Any]],
        now: datetime,
    ) -> None:
        upsert = _GOAL_UPSERTS[self._engine.dialect.name]
        checked = []
        for goal_id, goal in goals.items():
            # Refused before any row is written (the caller's transaction then writes
            # nothing): NaN would be stored as null in ``solved`` and as NULL in ``mastery``.
            mastery, solved = float(goal["mastery"]), list(goal["solved"])
            _require_json(mastery, f"learner goal {goal_id!r} mastery")
            _require_json(solved, f"learner goal {goal_id!r} solved")
            checked.append((goal_id, mastery, int(goal["evidence"]), solved))
        for goal_id, mastery, evidence, solved in checked:
            statements.rowcount(
                upsert,
                {
                    "g_tenant": self._tenant,
                    "g_learner": learner_id,
                    "g_goal": goal_id,
                    "g_mastery": mastery,
                    "g_evidence": evidence,
                    "g_solved": solved,
                    "g_now": now,
                },
            )

    def load_learner_goals(self, learner_id: str) -> dict[str, dict[str, Any]]:
        """The learner's goals as last committed: ``{goal: {"mastery", "evidence", "solved"}}``;
        empty for a learner never seen."""
        with self._errors(f"load learner {learner_id!r}"):
            with self._transaction(write=False) as connection:
                rows = connection.execute(
                    select(learner_goals).where(
                        learner_goals.c.tenant == self._tenant,
                        learner_goals.c.learner_id == learner_id,
                    )
                ).all()
        return {
            row.goal_id: {
                "mastery": float(row.mastery),
                "evidence": int(row.evidence),
                "solved": list(row.solved),
            }
            for row in rows
        }

    def create_learner(self, learner_id: str, meta: dict[str, Any] | None = None) -> None:
        """A learner of this tenant; ``meta`` is the application's (display name, cohort...)."""
        _require_session_id(learner_id, "learner id")
        meta = dict(meta or {})
        _require_document(meta, "meta")
        with self._errors(f"create learner {learner_id!r}"):
            try:
                with self._transaction(write=True) as connection:
                    connection.execute(
                        insert(learners).values(
                            id=learner_id, tenant=self._tenant, meta=meta, created_at=_utcnow()
                        )
                    )
            except IntegrityError as error:
                raise AlreadyExists(f"a learner with id {learner_id!r} already exists") from error

    def load_learner(self, learner_id: str) -> dict[str, Any]:
        """``{"id", "meta", "created_at", "sessions"}`` (the number of sessions)."""
        with self._errors(f"load learner {learner_id!r}"):
            with self._transaction(write=False) as connection:
                row = connection.execute(
                    select(learners.c.meta, learners.c.created_at).where(
                        learners.c.id == learner_id, learners.c.tenant == self._tenant
                    )
                ).one_or_none()
                count = connection.execute(
                    select(func.count())
                    .select_from(sessions)
                    .where(sessions.c.tenant == self._tenant, sessions.c.learner_id == learner_id)
                ).scalar_one()
        if row is None:
            raise LearnerNotFound(learner_id)
        return {
            "id": learner_id,
            "meta": dict(row.meta),
            "created_at": _as_utc(row.created_at),
            "sessions": int(count),
        }

    def delete_learner(self, learner_id: str) -> int:
        """Delete a learner with every session, audit record, goal record and exam sitting of
        theirs, and revoke the API keys bound to them, in one transaction (a key outliving its
        learner would act as any learner later created with the same id); returns the number
        of sessions deleted. :class:`LearnerNotFound` if there is none."""
        with self._errors(f"delete learner {learner_id!r}"):
            with self._transaction(write=True) as connection:
                if not self._learner_exists(connection, learner_id):
                    raise LearnerNotFound(learner_id)
                deleted = delete_sessions(
                    connection, self._tenant, sessions.c.learner_id == learner_id
                )
                connection.execute(
                    delete(learner_goals).where(
                        learner_goals.c.tenant == self._tenant,
                        learner_goals.c.learner_id == learner_id,
                    )
                )
                for table in (exam_sittings, exam_retakes):
                    connection.execute(
                        delete(table).where(
                            table.c.tenant == self._tenant, table.c.learner_id == learner_id
                        )
                    )
                connection.execute(
                    update(api_keys)
                    .where(
                        api_keys.c.tenant == self._tenant,
                        api_keys.c.learner_id == learner_id,
                        api_keys.c.revoked_at.is_(None),
                    )
                    .values(revoked_at=_utcnow())
                )
                connection.execute(
                    delete(learners).where(
                        learners.c.tenant == self._tenant, learners.c.id == learner_id
                    )
                )
        return int(deleted)

    def _learner_exists(self, connection: Connection, learner_id: str) -> bool:
        return (
            connection.execute(
                select(learners.c.id).where(
                    learners.c.id == learner_id, learners.c.tenant == self._tenant
                )
            ).first()
            is not None
        )


def _goal_upsert(dialect_insert: Any) -> Any:
    """A learner's goal written or replaced, values bound by name (built once per dialect:
    a turn's commit runs it through ``Statements``, which keeps its compiled form)."""
    columns = learner_goals.c
    row = dialect_insert(learner_goals).values(
        tenant=bindparam("g_tenant", type_=columns.tenant.type),
        learner_id=bindparam("g_learner", type_=columns.learner_id.type),
        goal_id=bindparam("g_goal", type_=columns.goal_id.type),
        mastery=bindparam("g_mastery", type_=columns.mastery.type),
        evidence=bindparam("g_evidence", type_=columns.evidence.type),
        solved=bindparam("g_solved", type_=columns.solved.type),
        updated_at=bindparam("g_now", type_=columns.updated_at.type),
    )
    return row.on_conflict_do_update(
        index_elements=[columns.tenant, columns.learner_id, columns.goal_id],
        set_={
            "mastery": row.excluded.mastery,
            "evidence": row.excluded.evidence,
            "solved": row.excluded.solved,
            "updated_at": row.excluded.updated_at,
        },
    )


_GOAL_UPSERTS = {
    "sqlite": _goal_upsert(sqlite.insert),
    "postgresql": _goal_upsert(postgresql.insert),
}
