"""Instructor toggles: exam lockdown, explain mode, lifting a conduct restriction.

Runtime, between turns. Takes a session id, the toggles an instructor asked for (through the
HTTP service's instructor endpoint or the Python API, never from student text), and the tutor
that runs the session; gives the session with its new state, committed to the store.

Which metrics an instructor may set is read from the theory, not hard-coded: the trusted bools
whose declared writer is ``instructor`` (by default ``exam_active``, the exam lockdown's metric,
and ``explain_mode``; `pedrag.kernel.sources`). Lifting a conduct restriction clears the metric
of the kernel's ``conduct_restriction`` runtime step and resets the hostile-turn count its
writer keeps, so the restriction returns only after new hostile turns. Every write goes through
the single :class:`~pedrag.runtime.turn.state.StateWriter` as a ``trusted`` write, and the store
commits it with a compare-and-set on the turn count: a toggle racing a turn never overwrites
the turn (:class:`~pedrag.runtime.store.session_store.TurnConflict`).

An exam session (its exercise is an exam) keeps its lockdown: switching it off is refused, as
the exam fails closed (seed 2, §3.2). An instructor may end the exam instead (``end_exam``):
the learner's next message gets the one result line, the latest submission as the score
(`pedrag.runtime.learning.exam`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pedrag.kernel.ceiling import runtime_step
from pedrag.kernel.errors import PedragError
from pedrag.runtime.learning.exam import EXAM, ExamRecord
from pedrag.runtime.store.errors import TurnConflict
from pedrag.runtime.turn.state import EXAM_LOCK, MetricSchema, SetMetrics, StateWriter
from pedrag.runtime.turn.trusted_writer import CALM_TURNS, HOSTILE_TURNS

_CONDUCT_STEP = runtime_step("conduct_restriction")
_EXAM_STEP = runtime_step("exam_lockdown")

EXAM_LOCKDOWN_METRIC = _EXAM_STEP.metric
EXPLAIN_MODE_METRIC = "explain_mode"
"""The conventional explain-mode toggle (written by ``instructor`` by default; the kernel's
``DEFAULT_WRITERS``), which the service offers as a shorthand."""


class InstructorError(PedragError, ValueError):
    """A toggle the session's theory does not offer, or one refused (an exam's lockdown)."""


@dataclass(frozen=True)
class InstructorChange:
    """What an instructor asked for: trusted bools to set, and whether to lift a restriction."""

    metrics: Mapping[str, bool]
    lift_conduct_restriction: bool = False
    end_exam: bool = False  # the exam ends at the learner's next message, as "I'm done" ends it


def instructor_metrics(schema: MetricSchema) -> tuple[str, ...]:
    """The metrics an instructor may set in a theory: trusted bools written by ``instructor``."""
    return tuple(
        name
        for name, item in schema.fields.items()
        if item.source == "trusted"
        and item.type == "bool"
        and item.writer is not None
        and item.writer.kind == "instructor"
    )


TOGGLE_ATTEMPTS = 8
"""How often a toggle is re-applied when a turn commits between its read and its write."""


def apply_change(tutor: Any, session_id: str, change: InstructorChange) -> Any:
    """Apply ``change`` to the stored session and commit it; returns the resumed session.

    A turn committed between the read and the write makes the write match nothing; the change
    is then applied again to the new state (a toggle sets values, so applying it again is
    the same change), up to :data:`TOGGLE_ATTEMPTS` times.

    Raises :class:`InstructorError` for a metric the theory does not let an instructor set or
    a refused change, and the store's errors (``SessionNotFound``, ``TurnConflict`` after the
    last attempt)."""
    for attempt in range(1, TOGGLE_ATTEMPTS + 1):
        try:
            return _apply_once(tutor, session_id, change)
        except TurnConflict:
            if attempt == TOGGLE_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _apply_once(tutor: Any, session_id: str, change: InstructorChange) -> Any:
    session = tutor.resume(session_id)
    state = session.state
    schema = MetricSchema.from_theory(tutor.theories[state.theory_id].policy)
    allowed = instructor_metrics(schema)
    updates: dict[str, Any] = {}
    for name, value in change.metrics.items():
        if name not in allowed:
            offered = ", ".join(allowed) or "none"
            raise InstructorError(
                f"theory {state.theory_id!r} has no instructor toggle {name!r} "
                f"(instructor toggles: {offered})"
            )
        if not isinstance(value, bool):
            raise InstructorError(f"{name!r} is a bool toggle, got {value!r}")
        if name == _EXAM_STEP.metric and value is False and state.extra.get(EXAM_LOCK) is True:
            raise InstructorError(
                "this session's exercise is an exam: its lockdown cannot be switched off"
            )
        updates[name] = value
    extra = dict(state.extra)
    if change.lift_conduct_restriction:
        if _CONDUCT_STEP.metric not in schema.fields:
            raise InstructorError(
                f"theory {state.theory_id!r} has no conduct restriction "
                f"(`{_CONDUCT_STEP.metric}`) to lift"
            )
        updates[_CONDUCT_STEP.metric] = False
        extra[HOSTILE_TURNS] = 0
        extra[CALM_TURNS] = 0
    if change.end_exam:
        if state.extra.get(EXAM_LOCK) is not True:
            raise InstructorError("this session's exercise is not an exam: no exam to end")
        record = ExamRecord.from_dict(extra.get(EXAM))
        if not record.over:
            extra[EXAM] = replace(record, ending=True).to_dict()
    writer = StateWriter(schema)
    new = writer.apply(state, SetMetrics("trusted", updates)) if updates else state
    if extra != dict(new.extra):
        new = replace(new, extra=extra)
    if session.version is None:
        tutor.store.set_state(session_id, state.turn, new.to_dict())
    else:
        tutor.store.set_state(session_id, state.turn, new.to_dict(), version=session.version)
        session.version += 1
    session.state = new
    return session
