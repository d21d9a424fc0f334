"""What a store gives back for a session: its documents, turn count and version.

Runtime stage: persistence, stdlib only (the in-memory store and the tutor use it without
loading SQLAlchemy). Takes nothing; gives :class:`StoredSession`.

Why the version is here: a turn and an instructor's toggle both write a session's state, and
each commits only against the version it read (``pedrag_sessions.version``), so a turn that
started before a toggle can never write the old state back over it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StoredSession:
    """A session as last written (``SessionStore.read_session``)."""

    meta: dict[str, Any]
    state: dict[str, Any]
    turns: int  # committed turns; the next turn is turns + 1
    version: int  # up by one with every state write: a turn or a toggle

    @classmethod
    def from_row(cls, row: Any) -> StoredSession:
        """From a row with the session's ``meta``, ``state``, ``turns`` and ``version``."""
        return cls(dict(row.meta), dict(row.state), int(row.turns), int(row.version))


def session_learner(meta: Mapping[str, Any]) -> str | None:
    """The learner a session belongs to, from its meta: ``learner_id`` (the service's, the
    store's column) or ``learner`` (``Tutor.start(learner=...)``); None for an anonymous one."""
    learner = meta.get("learner_id") or meta.get("learner")
    return learner if isinstance(learner, str) else None


__all__ = ["StoredSession", "session_learner"]
