"""An in-memory session store with :class:`~pedrag.runtime.store.session_store.SessionStore`'s interface.

Runtime, persistence for tests and throwaway runs (``Tutor(..., store=MemoryStore())``; a tutor
given no store persists to ``$PEDRAG_DB``).
Takes and gives the same JSON documents as the SQL store: ``create_session``, ``save_turn``
(a turn is all-or-nothing and a compare-and-set on the turn index), ``load_session``,
``audit_records``, ``list_sessions``, ``add_spend``/``spend``/``reserve_spend``/``settle_spend``.
States and audit records are kept as the JSON text the SQL stores would write and read back
from it on every load, so what you save is exactly what you load, as with SQL, and no caller can
change what was saved or what another caller loaded; they are checked, cleaned and written by
the SQL stores' own document check (``runtime/store/documents.py``: once, for a turn's
:class:`~pedrag.runtime.store.documents.CheckedAudit`), so a value PostgreSQL would refuse
(U+0000) is refused here too.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pedrag.runtime.store.documents import (
    CheckedAudit,
    _audit_text,
    _document_text,
    _require_document,
    _require_json,
    _require_session_id,
    json_value,
)
from pedrag.runtime.store.errors import (
    ExamAlreadySat,
    NoRetakeDue,
    SessionNotFound,
    StoreError,
    TurnConflict,
)
from pedrag.runtime.store.stored import StoredSession

__all__ = ["MemoryStore", "SessionNotFound", "StoreError", "TurnConflict"]


def _copy(document: Any, what: str) -> Any:
    try:
        text = json.dumps(document, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise StoreError(f"{what} is not a plain JSON document: {error}") from error
    copied = json.loads(text)
    if copied != document:
        raise StoreError(f"{what} does not survive JSON unchanged (tuples, int keys?)")
    return copied


class MemoryStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, dict[str, Any]] = {}
        self._spend: dict[str, float] = {}
        self._learners: dict[str, dict[str, dict[str, Any]]] = {}
        # (learner, exam) -> the sittings' session ids in order, and the granted sittings:
        # the SQL stores' pedrag_exam_sittings and pedrag_exam_retakes (runtime/store/exams.py).
        self._sittings: dict[tuple[str, str], list[str]] = {}
        self._retakes: dict[tuple[str, str], set[int]] = {}

    @property
    def url(self) -> str:
        return "memory://"

    def create_session(
        self,
        session_id: str,
        meta: dict[str, Any],
        state: dict[str, Any],
        *,
        exam_sitting: tuple[str, str] | None = None,
    ) -> None:
        _require_session_id(session_id)  # the ids the SQL stores take, no others
        _require_document(meta, "meta")  # refused as the SQL stores refuse it (U+0000, ...)
        state_text = _document_text(state, "state").text
        meta = _copy(meta, "meta")
        now = datetime.now(UTC)
        with self._lock:
            if session_id in self._sessions:
                raise StoreError(f"a session with id {session_id!r} already exists")
            if exam_sitting is not None:
                sat = self._sittings.setdefault(exam_sitting, [])
                if sat and len(sat) + 1 not in self._retakes.get(exam_sitting, set()):
                    raise ExamAlreadySat(*exam_sitting, sat[-1])
                sat.append(session_id)
            self._sessions[session_id] = {
                "meta": meta,
                "state": state_text,
                "turns": 0,
                "version": 0,
                "audit": [],
                "created_at": now,
                "updated_at": now,
            }

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
        state_text = _document_text(state, "state").text
        # Cleaned as the SQL stores clean it (U+0000 -> U+FFFD); a CheckedAudit is already.
        audit_text = _audit_text(audit).text
        if learner is not None:
            _require_json(dict(learner[1]), "learner")
        goals = _copy(dict(learner[1]), "learner") if learner is not None else None
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                raise SessionNotFound(session_id)
            if session["turns"] != turn_index - 1:
                raise TurnConflict(session_id, turn_index, session["turns"])
            if version is not None and session["version"] != version:
                raise TurnConflict(session_id, turn_index, session["turns"], state_changed=True)
            session.update(
                state=state_text,
                turns=turn_index,
                version=session["version"] + 1,
                updated_at=datetime.now(UTC),
            )
            session["audit"].append(audit_text)
            if learner is not None and goals is not None:
                self._learners.setdefault(learner[0], {}).update(goals)

    def grant_retake(self, learner_id: str, exam_id: str, granted_by: str) -> int:
        """The SQL stores' ``grant_retake``: the sitting granted (:class:`NoRetakeDue` when the
        learner has not sat the exam or holds a grant not used yet)."""
        with self._lock:
            sat = len(self._sittings.get((learner_id, exam_id), ()))
            granted = self._retakes.setdefault((learner_id, exam_id), set())
            if sat == 0 or sat + 1 in granted:
                raise NoRetakeDue(f"no retake of exam {exam_id!r} is due to {learner_id!r}")
            granted.add(sat + 1)
            return sat + 1

    def load_learner_goals(self, learner_id: str) -> dict[str, dict[str, Any]]:
        with self._lock:
            return _copy(self._learners.get(learner_id, {}), "learner")  # type: ignore[no-any-return]

    def load_session(self, session_id: str) -> tuple[dict[str, Any], dict[str, Any], int]:
        stored = self.read_session(session_id)
        return stored.meta, stored.state, stored.turns

    def read_session(self, session_id: str) -> StoredSession:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                raise SessionNotFound(session_id)
            return StoredSession(
                _copy(session["meta"], "meta"),
                json_value(session["state"]),
                session["turns"],
                session["version"],
            )

    def set_state(
        self, session_id: str, turns: int, state: dict[str, Any], *, version: int | None = None
    ) -> None:
        state_text = _document_text(state, "state").text
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                raise SessionNotFound(session_id)
            if session["turns"] != turns or (version is not None and session["version"] != version):
                raise TurnConflict(
                    session_id, turns + 1, session["turns"], state_changed=session["turns"] == turns
                )
            session.update(
                state=state_text, version=session["version"] + 1, updated_at=datetime.now(UTC)
            )

    def audit_records(self, session_id: str) -> list[dict[str, Any]]:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                raise SessionNotFound(session_id)
            texts = list(session["audit"])
        return [json_value(text) for text in texts]

    def list_sessions(
        self, limit: int = 50, *, learner_id: str | None = None
    ) -> list[dict[str, Any]]:
        with self._lock:
            items = sorted(self._sessions.items(), key=lambda kv: kv[1]["updated_at"], reverse=True)
            if learner_id is not None:
                items = [kv for kv in items if kv[1]["meta"].get("learner_id") == learner_id]
            return [
                {
                    "id": key,
                    "created_at": value["created_at"],
                    "updated_at": value["updated_at"],
                    "turns": value["turns"],
                    # A copy all the way down, as `read_session`'s: a caller changing a listed
                    # session's nested meta must not change the store (the SQL stores read text).
                    "meta": _copy(value["meta"], "meta"),
                }
                for key, value in items[:limit]
            ]

    def add_spend(self, scope: str, usd: float) -> float:
        with self._lock:
            self._spend[scope] = self._spend.get(scope, 0.0) + float(usd)
            return self._spend[scope]

    def spend(self, scope: str) -> float:
        with self._lock:
            return self._spend.get(scope, 0.0)

    def reserve_spend(self, scope: str, usd: float, cap: float | None) -> bool:
        """As ``SessionStore.reserve_spend``: add ``usd`` only within ``cap``."""
        with self._lock:
            total = self._spend.get(scope, 0.0)
            if cap is not None and (total + usd > cap if usd > 0 else total >= cap):
                return False
            self._spend[scope] = total + float(usd)
            return True

    def settle_spend(self, scope: str, reserved: float, usd: float) -> float:
        """As ``SessionStore.settle_spend``: the reservation replaced by the real cost."""
        with self._lock:
            self._spend[scope] = self._spend.get(scope, 0.0) + float(usd) - float(reserved)
            return self._spend[scope]

    def close(self) -> None:
        pass

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
