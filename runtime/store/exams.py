"""Exam sittings and retakes: a learner sits an exam once, and once more per instructor's grant.

Runtime stage: persistence (trusted state). Takes a learner, an exam (its exercise id) and the
session that sits it; gives the sitting's record, or :class:`ExamAlreadySat` with nothing
written. An instructor's grant (:meth:`ExamRecords.grant_retake`) records who allowed one more
sitting and when.

Why it looks like this:

- **A record, not a search.** Sittings were found by scanning the tenant's latest 10,000
  sessions, twice, on every exam start; past that many the first sitting was not seen at all.
  Now each sitting is one row of ``pedrag_exam_sittings``, found by its key.
- **The key decides a race.** Sitting ``n`` of (tenant, learner, exam) is the row's primary
  key, inserted in the transaction that creates the exam's session. Two creations that both
  read "no sitting yet" both try to insert sitting 1: the database lets one commit and the
  other fails on the key, so its session is not created either (PostgreSQL makes the second
  insert wait for the first's commit; SQLite's writers queue at ``BEGIN IMMEDIATE``).
- **A retake is a grant of one numbered sitting.** ``pedrag_exam_retakes`` row ``n`` allows
  sitting ``n`` and nothing else: a grant cannot be used twice, and two grants in a row give
  one retake until it is sat (:class:`NoRetakeDue`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select
from sqlalchemy.exc import IntegrityError

from pedrag.runtime.store.connection import StoreConnection
from pedrag.runtime.store.documents import _as_utc, _require_session_id, _utcnow
from pedrag.runtime.store.errors import ExamAlreadySat, NoRetakeDue
from pedrag.runtime.store.schema import exam_retakes, exam_sittings


@dataclass(frozen=True)
class ExamSitting:
    """One sitting of an exam by a learner: the session that sat it, and when it started."""

    learner_id: str
    exam_id: str
    sitting: int  # 1 for the first; n > 1 only under a retake granted for n
    session_id: str
    sat_at: datetime


@dataclass(frozen=True)
class ExamRetake:
    """An instructor's grant of sitting ``sitting`` (who granted it, when)."""

    learner_id: str
    exam_id: str
    sitting: int
    granted_by: str
    granted_at: datetime


class ExamRecords(StoreConnection):
    """Exam sittings and retakes of this store's tenant."""

    def _sit_exam(
        self, connection: Connection, learner_id: str, exam_id: str, session_id: str
    ) -> None:
        """Record ``session_id`` as the learner's next sitting of ``exam_id``, in the caller's
        (write) transaction, or raise :class:`ExamAlreadySat` (the caller's transaction then
        writes nothing). The next sitting is 1 for a learner who never sat the exam; after
        that, only one granted by a retake."""
        _require_session_id(learner_id, "learner id")
        _require_session_id(exam_id, "exam id")
        scope = self._exam_scope(exam_sittings, learner_id, exam_id)
        latest = connection.execute(
            select(exam_sittings.c.sitting, exam_sittings.c.session_id)
            .where(*scope)
            .order_by(exam_sittings.c.sitting.desc())
            .limit(1)
        ).first()
        following = 1 if latest is None else int(latest.sitting) + 1
        if latest is not None and not self._granted(connection, learner_id, exam_id, following):
            raise ExamAlreadySat(learner_id, exam_id, str(latest.session_id))
        try:
            connection.execute(
                insert(exam_sittings).values(
                    tenant=self._tenant,
                    learner_id=learner_id,
                    exam_id=exam_id,
                    sitting=following,
                    session_id=session_id,
                    sat_at=_utcnow(),
                )
            )
        except IntegrityError as error:
            # A creation racing this one recorded the same sitting first (and committed).
            raise ExamAlreadySat(learner_id, exam_id, "") from error

    def exam_sittings(self, learner_id: str) -> tuple[list[ExamSitting], list[ExamRetake]]:
        """The learner's sittings and retakes, by exam and then sitting."""
        with self._errors(f"read the exam sittings of learner {learner_id!r}"):
            with self._transaction(write=False) as connection:
                sat = connection.execute(
                    select(exam_sittings)
                    .where(
                        exam_sittings.c.tenant == self._tenant,
                        exam_sittings.c.learner_id == learner_id,
                    )
                    .order_by(exam_sittings.c.exam_id, exam_sittings.c.sitting)
                ).all()
                granted = connection.execute(
                    select(exam_retakes)
                    .where(
                        exam_retakes.c.tenant == self._tenant,
                        exam_retakes.c.learner_id == learner_id,
                    )
                    .order_by(exam_retakes.c.exam_id, exam_retakes.c.sitting)
                ).all()
        return (
            [
                ExamSitting(
                    row.learner_id,
                    row.exam_id,
                    int(row.sitting),
                    row.session_id,
                    _as_utc(row.sat_at),
                )
                for row in sat
            ],
            [_retake(row) for row in granted],
        )

    def grant_retake(self, learner_id: str, exam_id: str, granted_by: str) -> ExamRetake:
        """Allow the learner one more sitting of ``exam_id``, recording who (``granted_by``: a
        key id, or ``cli``) and when. :class:`NoRetakeDue` when the learner has not sat the
        exam (nothing to retake) or holds a grant not used yet; nothing is written then."""
        _require_session_id(learner_id, "learner id")
        _require_session_id(exam_id, "exam id")
        with self._errors(f"grant learner {learner_id!r} a retake of exam {exam_id!r}"):
            with self._transaction(write=True) as connection:
                latest = connection.execute(
                    select(exam_sittings.c.sitting)
                    .where(*self._exam_scope(exam_sittings, learner_id, exam_id))
                    .order_by(exam_sittings.c.sitting.desc())
                    .limit(1)
                ).scalar()
                if latest is None:
                    raise NoRetakeDue(
                        f"learner {learner_id!r} has not sat exam {exam_id!r}: nothing to retake"
                    )
                following = int(latest) + 1
                if self._granted(connection, learner_id, exam_id, following):
                    raise NoRetakeDue(
                        f"learner {learner_id!r} holds a retake of exam {exam_id!r} not used yet"
                    )
                retake = ExamRetake(learner_id, exam_id, following, granted_by[:200], _utcnow())
                try:
                    connection.execute(
                        insert(exam_retakes).values(
                            tenant=self._tenant,
                            learner_id=learner_id,
                            exam_id=exam_id,
                            sitting=following,
                            granted_by=retake.granted_by,
                            granted_at=retake.granted_at,
                        )
                    )
                except IntegrityError as error:  # a grant racing this one got there first
                    raise NoRetakeDue(
                        f"learner {learner_id!r} holds a retake of exam {exam_id!r} not used yet"
                    ) from error
        return retake

    def _granted(self, connection: Connection, learner_id: str, exam_id: str, sitting: int) -> bool:
        return (
            connection.execute(
                select(exam_retakes.c.sitting).where(
                    *self._exam_scope(exam_retakes, learner_id, exam_id),
                    exam_retakes.c.sitting == sitting,
                )
            ).first()
            is not None
        )

    def _exam_scope(self, table: Any, learner_id: str, exam_id: str) -> list[Any]:
        return [
            table.c.tenant == self._tenant,
            table.c.learner_id == learner_id,
            table.c.exam_id == exam_id,
        ]


def _retake(row: Any) -> ExamRetake:
    return ExamRetake(
        row.learner_id, row.exam_id, int(row.sitting), row.granted_by, _as_utc(row.granted_at)
    )


__all__ = ["ExamRecords", "ExamRetake", "ExamSitting"]
