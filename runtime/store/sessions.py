"""Sessions and their audit records: a turn committed as one transaction, a compare-and-set.

Runtime stage: persistence. Takes a session's state and one audit record per turn (opaque,
JSON-able dicts owned by the turn loop) and gives them back after a restart, a crash or on
another worker. ``save_turn`` replaces the state and inserts the audit record together, or
writes nothing; it commits only if exactly ``n - 1`` turns are committed (and, when given, the
state's version is the one read), so two writers on one session cannot interleave.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError

from pedrag.runtime.store.documents import (
    CheckedAudit,
    _as_utc,
    _audit_text,
    _document_text,
    _require_document,
    _require_session_id,
    _utcnow,
)
from pedrag.runtime.store.errors import (
    AlreadyExists,
    LearnerNotFound,
    SessionNotFound,
    StoreError,
    TurnConflict,
)
from pedrag.runtime.store.exams import ExamRecords
from pedrag.runtime.store.learners import LearnerRecords, delete_sessions
from pedrag.runtime.store.schema import audit_records, sessions
from pedrag.runtime.store.statements import Statements, core_statements
from pedrag.runtime.store.stored import StoredSession


class SessionRecords(LearnerRecords, ExamRecords):
    """Sessions of this store's tenant with their audit records (a session may belong to a
    learner and sit an exam, hence the bases)."""

    def create_session(
        self,
        session_id: str,
        meta: dict[str, Any],
        state: dict[str, Any],
        *,
        exam_sitting: tuple[str, str] | None = None,
    ) -> None:
        """Start a session with zero turns. ``meta`` is fixed at creation (theory, learner,
        exercise, ...); ``state`` is replaced by every :meth:`save_turn`.

        ``meta["learner_id"]``, when set, names a learner of this tenant (:meth:`create_learner`;
        :class:`LearnerNotFound` otherwise): the session is theirs and goes with
        :meth:`delete_learner`. ``exam_sitting`` — ``(learner id, exam id)`` — records the
        session as the learner's sitting of the exam in the same transaction
        (:class:`ExamAlreadySat`, and no session, when it is not theirs to sit)."""
        _require_session_id(session_id)
        _require_document(meta, "meta")
        _require_document(state, "state")
        learner_id = meta.get("learner_id")
        if learner_id is not None:
            _require_session_id(learner_id, "learner id")
        now = _utcnow()
        with self._errors(f"create session {session_id!r}"):
            try:
                with self._transaction(write=True) as connection:
                    if learner_id is not None and not self._learner_exists(connection, learner_id):
                        raise LearnerNotFound(learner_id)
                    connection.execute(
                        insert(sessions).values(
                            id=session_id,
                            meta=meta,
                            state=state,
                            turns=0,
                            created_at=now,
                            updated_at=now,
                            tenant=self._tenant,
                            learner_id=learner_id,
                        )
                    )
                    if exam_sitting is not None:
                        self._sit_exam(connection, *exam_sitting, session_id)
            except IntegrityError as error:
                raise AlreadyExists(f"a session with id {session_id!r} already exists") from error

    def save_turn(
        self,
        session_id: str,
        turn_index: int,
        state: dict[str, Any],
        audit: dict[str, Any] | CheckedAudit,
        learner: tuple[str, Mapping[str, Mapping[str, Any]]] | None = None,
        *,
        version: int | None = None,
    ) -> None:
        """Commit turn ``turn_index`` (1-based): insert its audit record and replace the session
        state, in one transaction; ``learner`` — ``(learner id, {goal: {"mastery", "evidence",
        "solved"}})`` — writes the learner's goals the turn changed in the same transaction.
        ``audit`` may be a :class:`CheckedAudit` (checked and written once, by the turn).

        Raises :class:`TurnConflict` unless exactly ``turn_index - 1`` turns are committed and,
        when ``version`` is given (the one :meth:`read_session` gave), the state was not written
        since (``state_changed``: an instructor's toggle landed while the turn ran); and
        :class:`SessionNotFound` for an unknown id. In all these cases, and on any other error,
        nothing is written.
        """
        _require_session_id(session_id)
        if isinstance(turn_index, bool) or not isinstance(turn_index, int) or turn_index < 1:
            raise StoreError(f"turn_index must be an int >= 1, got {turn_index!r}")
        # Checked and written once: the columns are given the text (`WrittenDocument`).
        state_text = _document_text(state, "state")
        audit_text = _audit_text(audit)  # text from models and endpoints: cleaned, not refused
        now = _utcnow()
        with self._errors(f"save turn {turn_index} of session {session_id!r}"):
            with self._write_statements() as statements:
                # The compare-and-set: only the writer that saw turns == n - 1 advances it. On
                # PostgreSQL a concurrent writer blocks on the row lock, then re-checks the
                # condition against the committed row and matches nothing.
                values = {
                    "b_id": session_id,
                    "b_tenant": self._tenant,
                    "b_before": turn_index - 1,
                    "b_state": state_text,
                    "b_turns": turn_index,
                    "b_now": now,
                }
                if version is None:
                    advanced = statements.rowcount(_ADVANCE, values)
                else:
                    advanced = statements.rowcount(_ADVANCE_AT, {**values, "b_version": version})
                if advanced != 1:
                    self._raise_conflict(statements, session_id, turn_index)
                # A record already stored for this turn (only possible if the tables were
                # edited behind the store's back) fails on the primary key: StoreError, and
                # the update above is rolled back with it.
                statements.rowcount(
                    _RECORD,
                    {
                        "session_id": session_id,
                        "turn_index": turn_index,
                        "record": audit_text,
                        "created_at": now,
                        "tenant": self._tenant,
                    },
                )
                if learner is not None:
                    self._write_learner(statements, learner[0], learner[1], now)

    def _raise_conflict(self, statements: Statements, session_id: str, turn_index: int) -> None:
        """A compare-and-set on the turn count matched nothing: say why (no such session of
        this tenant, or another writer committed first)."""
        committed = statements.scalar(_TURNS, {"b_id": session_id, "b_tenant": self._tenant})
        if committed is None:
            raise SessionNotFound(session_id)
        raise TurnConflict(
            session_id, turn_index, committed, state_changed=committed == turn_index - 1
        )

    def set_state(
        self, session_id: str, turns: int, state: dict[str, Any], *, version: int | None = None
    ) -> None:
        """Replace the state of a session between turns (an instructor's toggle), without a
        turn: a compare-and-set on ``turns`` (and on ``version`` when given) as
        :meth:`save_turn`'s, which bumps the version, so neither a turn committed meanwhile is
        overwritten (:class:`TurnConflict`; nothing written) nor can a turn that read the state
        before this write commit over it."""
        _require_session_id(session_id)
        _require_document(state, "state")
        scope = [
            sessions.c.id == session_id,
            sessions.c.tenant == self._tenant,
            sessions.c.turns == turns,
        ]
        if version is not None:
            scope.append(sessions.c.version == version)
        with self._errors(f"update the state of session {session_id!r}"):
            with self._transaction(write=True) as connection:
                changed = connection.execute(
                    update(sessions)
                    .where(*scope)
                    .values(state=state, updated_at=_utcnow(), version=sessions.c.version + 1)
                )
                if changed.rowcount != 1:
                    self._raise_conflict(core_statements(connection), session_id, turns + 1)

    def load_session(self, session_id: str) -> tuple[dict[str, Any], dict[str, Any], int]:
        """``(meta, state, turns)`` as of the last committed turn; resume with turn
        ``turns + 1``."""
        stored = self.read_session(session_id)
        return stored.meta, stored.state, stored.turns

    def read_session(self, session_id: str) -> StoredSession:
        """The session as last written, with the version a turn or a toggle commits against."""
        with self._errors(f"load session {session_id!r}"):
            with self._transaction(write=False) as connection:
                row = connection.execute(
                    select(
                        sessions.c.meta, sessions.c.state, sessions.c.turns, sessions.c.version
                    ).where(sessions.c.id == session_id, sessions.c.tenant == self._tenant)
                ).one_or_none()
        if row is None:
            raise SessionNotFound(session_id)
        return StoredSession.from_row(row)

    def audit_records(self, session_id: str) -> list[dict[str, Any]]:
        """The session's audit records as saved, ordered by turn (the record of turn ``n`` is
        at index ``n - 1``)."""
        with self._errors(f"read the audit records of session {session_id!r}"):
            with self._transaction(write=False) as connection:
                exists = connection.execute(
                    select(sessions.c.id).where(
                        sessions.c.id == session_id, sessions.c.tenant == self._tenant
                    )
                ).first()
                records = connection.execute(
                    select(audit_records.c.record)
                    .where(
                        audit_records.c.session_id == session_id,
                        audit_records.c.tenant == self._tenant,
                    )
                    .order_by(audit_records.c.turn_index)
                ).scalars()
                result = [dict(record) for record in records]
        if exists is None:
            raise SessionNotFound(session_id)
        return result

    def list_sessions(
        self, limit: int = 50, *, learner_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The most recently updated sessions first (of one learner, if given), each ``{"id",
        "created_at", "updated_at", "turns", "meta"}``; the timestamps are timezone-aware UTC
        datetimes."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise StoreError(f"limit must be an int >= 0, got {limit!r}")
        scope = [sessions.c.tenant == self._tenant]
        if learner_id is not None:
            scope.append(sessions.c.learner_id == learner_id)
        with self._errors("list sessions"):
            with self._transaction(write=False) as connection:
                rows = connection.execute(
                    select(
                        sessions.c.id,
                        sessions.c.created_at,
                        sessions.c.updated_at,
                        sessions.c.turns,
                        sessions.c.meta,
                    )
                    .where(*scope)
                    .order_by(sessions.c.updated_at.desc(), sessions.c.id)
                    .limit(limit)
                ).all()
        return [
            {
                "id": row.id,
                "created_at": _as_utc(row.created_at),
                "updated_at": _as_utc(row.updated_at),
                "turns": int(row.turns),
                "meta": dict(row.meta),
            }
            for row in rows
        ]

    def purge_expired(self, retention_days: int, now: datetime | None = None) -> int:
        """Delete this tenant's sessions (and their audit records) whose last turn is older
        than ``retention_days``; returns how many. Learners stay (they may come back)."""
        if isinstance(retention_days, bool) or not isinstance(retention_days, int):
            raise StoreError(f"retention_days must be an int, got {retention_days!r}")
        if retention_days < 0:
            raise StoreError(f"retention_days must be >= 0, got {retention_days}")
        cutoff = (now or _utcnow()) - timedelta(days=retention_days)
        with self._errors("purge expired sessions"):
            with self._transaction(write=True) as connection:
                deleted = delete_sessions(connection, self._tenant, sessions.c.updated_at < cutoff)
        return deleted


# A turn's two statements, built once: building them per turn (and their cache keys) was a
# sixth of the SQLite store's share of a turn. Bound by name, so one compiled form serves all.
_ADVANCE = (
    update(sessions)
    .where(
        sessions.c.id == bindparam("b_id"),
        sessions.c.tenant == bindparam("b_tenant"),
        sessions.c.turns == bindparam("b_before"),
    )
    .values(
        state=bindparam("b_state", type_=sessions.c.state.type),
        turns=bindparam("b_turns"),
        updated_at=bindparam("b_now", type_=sessions.c.updated_at.type),
        version=sessions.c.version + 1,
    )
)
# The same, also against the version the turn read (a toggle since makes it match nothing).
_ADVANCE_AT = _ADVANCE.where(sessions.c.version == bindparam("b_version"))
_RECORD = insert(audit_records).values(
    session_id=bindparam("session_id", type_=audit_records.c.session_id.type),
    turn_index=bindparam("turn_index", type_=audit_records.c.turn_index.type),
    record=bindparam("record", type_=audit_records.c.record.type),
    created_at=bindparam("created_at", type_=audit_records.c.created_at.type),
    tenant=bindparam("tenant", type_=audit_records.c.tenant.type),
)
# The committed turn count of a session, when a compare-and-set matched nothing.
_TURNS = select(sessions.c.turns).where(
    sessions.c.id == bindparam("b_id"), sessions.c.tenant == bindparam("b_tenant")
)
