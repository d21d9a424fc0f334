"""What persistence can raise, apart from the store itself.

Runtime stage, stdlib only: the tutor and the in-memory store catch and raise these without
loading SQLAlchemy (`pedrag.runtime.store.session_store` re-exports them for its callers).
"""

from __future__ import annotations

from pedrag.kernel.errors import PedragError


class StoreError(PedragError):
    """Persistence failed: database unreachable or locked too long, or a value that cannot be
    stored. The base of every error this module raises."""


class StoreUnavailable(StoreError):
    """The database could not be reached, or the connection was lost mid-statement (a restart,
    a network cut). Nothing of the failed call was committed unless the connection broke
    during its commit; retrying later may succeed."""


class SessionNotFound(StoreError):
    """No session with this id exists."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session with id {session_id!r}")
        self.session_id = session_id


class AlreadyExists(StoreError):
    """An id given to ``create_*`` is taken (a session, a learner or a tenant)."""


class ExamAlreadySat(AlreadyExists):
    """A learner's sitting of an exam is recorded already and no retake is granted: nothing
    was written. ``session_id`` names the earlier sitting's session ("" when the sitting that
    won was committed by a racing creation while this one ran)."""

    def __init__(self, learner_id: str, exam_id: str, session_id: str) -> None:
        where = f" (session {session_id})" if session_id else ""
        super().__init__(
            f"learner {learner_id!r} has sat exam {exam_id!r} already{where}: an exam is sat "
            "once, unless an instructor grants a retake"
        )
        self.learner_id, self.exam_id, self.session_id = learner_id, exam_id, session_id


class NoRetakeDue(AlreadyExists):
    """A retake cannot be granted: the learner has not sat the exam, or holds a retake
    not used yet. Nothing was written."""


class LearnerNotFound(StoreError):
    """No learner with this id exists (for this store's tenant)."""

    def __init__(self, learner_id: str) -> None:
        super().__init__(f"no learner with id {learner_id!r}")
        self.learner_id = learner_id


class TurnConflict(StoreError):
    """``save_turn`` was given a turn index other than committed turns + 1; nothing was written.

    Usually another writer committed this turn first: reload the session and decide again.
    ``state_changed``: no turn was committed meanwhile, but the state was written (an
    instructor's toggle) after this writer read it; re-reading and re-running is safe.
    """

    def __init__(
        self,
        session_id: str,
        turn_index: int,
        committed_turns: int,
        *,
        state_changed: bool = False,
    ) -> None:
        if state_changed:
            message = (
                f"session {session_id!r}: cannot save turn {turn_index}, the session changed "
                "(an instructor's toggle) after the turn read it"
            )
        else:
            message = (
                f"session {session_id!r}: cannot save turn {turn_index}, "
                f"{committed_turns} turn(s) are committed (expected turn {committed_turns + 1})"
            )
        super().__init__(message)
        self.session_id = session_id
        self.turn_index = turn_index
        self.committed_turns = committed_turns
        self.state_changed = state_changed


__all__ = [
    "AlreadyExists",
    "ExamAlreadySat",
    "LearnerNotFound",
    "NoRetakeDue",
    "SessionNotFound",
    "StoreError",
    "StoreUnavailable",
    "TurnConflict",
]
