"""The tutor: sessions, curriculum navigation, and the supervised turn it runs as a pipeline.

Runtime, the public entry (``Tutor(theory_set, backend).start(...)``, ``.turn(session, text)``,
``.stream(session, text)``, ``.resume(session_id)``). Takes a student message; gives a
:class:`TurnResult` — exactly what the student saw, plus the contract, the action, the
verdicts and the audit record — and commits the new state and the audit record to the store
in one transaction.

The turn itself is ``pedrag.runtime.turn.pipeline``: DESIGN's stages (budget, pre-classifier,
context analyzer, policy core, rule engine, generator, detector, judge, response monitor,
behavioural monitor, audit), each a module over one turn context
(``pedrag.runtime.turn.context``); ``stream`` runs the same stages with the actor's reply given
out as the model writes it (``pedrag.runtime.turn.streamed_turn``). The tutor keeps what outlives
a turn: sessions (start, resume, learners' records), the curriculum and its navigation, the
compiled theories' schemas and rule engines, the store and the backends. Every model call goes
through one backend (the offline backend by default) wrapped so that any failure arrives as an
``LLMError``; each stage fails closed on it.
"""

from __future__ import annotations

import random
import sys
import threading
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pedrag.kernel.ceiling import runtime_step
from pedrag.runtime.learning.loop import CurriculumMap, GoalRecord
from pedrag.runtime.llm.interface import (
    LLMBackend,
    LLMError,
    LLMRequest,
    LLMResponse,
    LLMStream,
    LLMUnavailable,
    open_stream,
)
from pedrag.runtime.llm.offline import OfflineBackend
from pedrag.runtime.policy.rule_engine import RuleEngine
from pedrag.runtime.policy.theory_set import TheorySet
from pedrag.runtime.store.errors import ExamAlreadySat
from pedrag.runtime.store.stored import session_learner
from pedrag.runtime.turn.budget import Budget
from pedrag.runtime.turn.context import (
    GOAL_RECORDS,
    HISTORY,
    HISTORY_CHARS,
    HISTORY_TURNS,
    explains_now,
    mastery_metrics,
)
from pedrag.runtime.turn.pipeline import run_turn
from pedrag.runtime.turn.session import ExerciseInfo, Session, TurnResult, info_id
from pedrag.runtime.turn.state import EXAM_LOCK, MetricSchema, SessionState, new_state
from pedrag.runtime.turn.streamed_turn import stream_turn
from pedrag.runtime.turn.supervision import revision_note

if TYPE_CHECKING:  # SQLAlchemy loads only when a tutor opens a SQL store
    from pedrag.runtime.course.index import CourseIndex
    from pedrag.runtime.store.session_store import SessionStore
    from pedrag.runtime.store.stored import StoredSession

__all__ = [
    "GOAL_RECORDS",
    "HISTORY",
    "HISTORY_CHARS",
    "HISTORY_TURNS",
    "ExerciseInfo",
    "SafeBackend",
    "Session",
    "Tutor",
    "TurnResult",
    "default_store",
    "explains_now",
    "info_id",
    "revision_note",
]

_EXAM_STEP = runtime_step("exam_lockdown")


def _lockdown_metric(policy: Any) -> str | None:
    """The metric of the policy's exam-lockdown runtime step, if it has one."""
    for spec in getattr(policy, "ceiling_specs", ()):
        if spec.runtime == _EXAM_STEP.id:
            return _EXAM_STEP.metric
    return None


_DEFAULT_STORES: dict[str, SessionStore] = {}
_DEFAULT_STORES_LOCK = threading.Lock()


def default_store() -> SessionStore:
    """The store of a :class:`Tutor` given none: ``SessionStore()`` — ``$PEDRAG_DB``, else
    ``./.pedrag/sessions.db``, as for the CLI — opened once per database per process, so that
    tutors created per session (an evaluation, a web worker) share one connection pool.
    SQLAlchemy loads here, not with this module: a tutor given a MemoryStore never needs it."""
    from pedrag.runtime.store.session_store import SessionStore, resolve_db_url

    url = resolve_db_url().render_as_string(hide_password=False)
    with _DEFAULT_STORES_LOCK:
        store = _DEFAULT_STORES.get(url)
        if store is None:
            store = _DEFAULT_STORES[url] = SessionStore(url)
        return store


def _course_index(store: Any, backend: Any = None) -> CourseIndex | None:
    """The course index of a SQL store (materials live in its database); a store without one
    (the in-memory store) has no materials. SQLAlchemy is loaded only for a SQL store. With
    an endpoint that has embeddings, searches fuse BM25 with the course's vectors."""
    module = sys.modules.get("pedrag.runtime.store.session_store")
    if module is None or not isinstance(store, module.SessionStore):
        return None  # not loaded yet means no SessionStore exists in this process
    from pedrag.runtime.course.index import CourseIndex
    from pedrag.runtime.course.vectors import endpoint_embeddings

    return CourseIndex(store, endpoint_embeddings(backend))


class SafeBackend:
    """Wraps a backend so that any exception it raises arrives as an ``LLMError``."""

    def __init__(self, inner: LLMBackend) -> None:
        self.inner = inner

    def max_cost_usd(self, request: LLMRequest) -> float | None:
        """The inner backend's worst-case cost of ``request`` (None: unknown), which the
        spending caps reserve before the call; a backend without the bound has no price."""
        bound = getattr(self.inner, "max_cost_usd", None)
        if bound is None:
            return None
        try:
            return bound(request)
        except Exception:  # a third-party backend's bug must not break the turn
            return None

    def complete(self, request: LLMRequest) -> LLMResponse:
        try:
            return self.inner.complete(request)
        except LLMError:
            raise
        except Exception as error:  # a third-party backend's bug must not break the turn
            raise LLMUnavailable(
                f"backend raised {type(error).__name__}", role=request.role
            ) from error

    def stream(self, request: LLMRequest) -> LLMStream:
        """The inner backend's stream (or its ``complete``, yielded once), with the same
        promise: opening it or any step of it raises only ``LLMError``."""

        def deltas(handle: LLMStream) -> Iterator[str]:
            inner: LLMStream | None = None
            try:
                inner = open_stream(self.inner, request)
                yield from inner
            except LLMError:
                raise
            except Exception as error:  # a third-party backend's bug must not break the turn
                raise LLMUnavailable(
                    f"backend raised {type(error).__name__}", role=request.role
                ) from error
            finally:
                if inner is not None:
                    inner.close()
                    handle.response = inner.response

        return LLMStream(deltas)


class Tutor:
    """The supervised tutor over a theory set. ``backend=None`` runs offline."""

    def __init__(
        self,
        theory_set: TheorySet | None = None,
        backend: LLMBackend | None = None,
        curriculum: Any = None,
        store: Any = None,
        *,
        budget: Budget | None = None,
        keep_transcript: bool = True,
        history_turns: int = HISTORY_TURNS,
    ) -> None:
        self.theories = theory_set if theory_set is not None else TheorySet.shipped()
        self.offline = OfflineBackend()
        self.backend: LLMBackend = SafeBackend(backend) if backend is not None else self.offline
        self.is_offline = backend is None
        # An in-process backend answers in microseconds: running its calls on a second thread
        # would only add CPU, so only a backend that waits on a model runs them concurrently.
        self.in_process = backend is None or isinstance(backend, OfflineBackend)
        self.curriculum = _curriculum_model(curriculum, self.theories)
        # DESIGN: sessions and audit records persist in SQLite by default ($PEDRAG_DB), the
        # same database the CLI and `pedrag audit` use; pass MemoryStore() for throwaway runs.
        self.store = store if store is not None else default_store()
        self.budget = budget or Budget()
        self.keep_transcript = keep_transcript
        # With transcripts off, nothing the student wrote is kept in the session either.
        self.history_turns = max(0, int(history_turns)) if keep_transcript else 0
        self._schemas: dict[str, MetricSchema] = {}
        self._engines: dict[str, RuleEngine] = {}
        self._curriculum_map: CurriculumMap | None = None
        self._exercise_infos: tuple[Any, dict[str, ExerciseInfo]] = (None, {})
        # DESIGN, "Grounding": the curriculum's `course:` names the materials (`pedrag index`)
        # that ground concept questions; they live in the session database.
        self.course: str | None = getattr(self.curriculum, "course", None)
        self.course_index = _course_index(self.store, backend) if self.course is not None else None

    # -- sessions ----------------------------------------------------------------------------

    def start(
        self,
        theory: str = "socratic",
        exercise: str | None = None,
        seed: int | None = None,
        *,
        session_id: str | None = None,
        trusted: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        learner: str | None = None,
        exam_needs_learner: bool = False,
    ) -> Session:
        """A new session on ``theory`` (and ``exercise`` from the curriculum). ``trusted``
        sets system-owned metrics (e.g. an instructor's ``explain_mode``). ``learner`` names
        the learner: their per-goal mastery is read from the store and written back with each
        graded answer; ``exercise="next"`` picks their next open exercise. An exercise whose
        goal's prerequisites the learner has not mastered is refused (``ValueError``).

        A named learner sits an exam once (and once more per retake an instructor grants):
        the sitting is recorded with the session, atomically (``runtime/store/exams.py``), and
        a sitting that is not theirs is refused (``ValueError``), however many sessions race.
        ``exam_needs_learner`` refuses an exam to an anonymous session (the service: any
        number of those could be opened); the Python API and the CLI allow one by default,
        for a designer trying an exam out, whose caller holds the curriculum and its answers
        anyway."""
        loaded = self.theories[theory]
        records = self._learner_records(learner)
        if exercise == "next":
            following = (
                self.curriculum_map().next_exercise(records, None) if self.curriculum else None
            )
            if following is None:
                raise ValueError(self.curriculum_map().nothing_left(records))
            exercise = following.id
        info = self.exercise_info(exercise) if exercise else None
        if info is not None and learner is not None:
            missing = self.curriculum_map().missing_prerequisites(records, info.goal)
            if missing:
                raise ValueError(
                    f"exercise {info.id!r} is locked for learner {learner!r}: goal {info.goal!r} "
                    f"requires {', '.join(missing)}, not yet mastered"
                )
        if info is not None and info.exam and learner is None and exam_needs_learner:
            # A sitting is recorded per learner; one nobody is named for could be sat again
            # and again, guessing across sittings until one said "You passed".
            raise ValueError(
                f"exercise {info.id!r} is an exam, sat once by a named learner: this session "
                "names none"
            )
        initial = dict(trusted or {})
        schema = self.schema(theory)
        if info is not None:
            for name in mastery_metrics(schema):
                initial.setdefault(name, self.curriculum_map().record(records, info.goal).mastery)
        exam = info is not None and info.exam
        if info is not None and info.exam:
            lockdown = _lockdown_metric(loaded.policy)
            if lockdown is None:
                # The lockdown is a declared ceiling step the compiler proves over; a theory
                # without it cannot run an exam the checks vouch for (seed 2, §3.2).
                raise ValueError(
                    f"exercise {info.id!r} is an exam, and theory {loaded.id!r} declares no "
                    f"`{_EXAM_STEP.metric}` trusted bool, so it has no exam lockdown"
                )
            initial.setdefault(lockdown, True)
        state = new_state(
            schema,
            loaded.id,
            trusted=initial,
            exercise_id=info.id if info else None,
            goal_id=info.goal if info else None,
        )
        extra = {**state.extra, GOAL_RECORDS: {g: r.to_dict() for g, r in records.items()}}
        if exam:
            # An exam session never leaves its theory (see the switch in _commit).
            extra[EXAM_LOCK] = True
        state = replace(state, extra=extra)
        seed = seed if seed is not None else random.SystemRandom().randrange(2**31)
        session_id = session_id or uuid.uuid4().hex[:12]
        session_meta = {
            "theory": loaded.id,
            "exercise": info.id if info else None,
            "seed": seed,
            "backend": "offline" if self.is_offline else "openai",
            "policy_hash": getattr(loaded.policy, "content_hash", ""),
            "learner": learner,
            **dict(meta or {}),
        }
        if exam and learner is not None:
            assert info is not None
            try:
                self.store.create_session(
                    session_id, session_meta, state.to_dict(), exam_sitting=(learner, info.id)
                )
            except ExamAlreadySat as error:
                # Each sitting gave its own submissions, so a learner could guess across
                # sittings until one said "You passed" (70, 71, 72 in three sessions).
                raise ValueError(str(error)) from error
        else:
            self.store.create_session(session_id, session_meta, state.to_dict())
        return Session(session_id, state, seed, info, session_meta, learner=learner)

    def resume(self, session_id: str, stored: StoredSession | None = None) -> Session:
        """A session from the store, as of its last committed turn, ready for its next turn;
        from ``stored`` when the caller has read it already (the service reads it with the
        API key's check).

        Raises ``SessionNotFound`` for an unknown id, and ``KeyError`` when this tutor has not
        loaded the session's current theory or its exercise's curriculum."""
        version = None
        if stored is not None or hasattr(self.store, "read_session"):
            stored = stored or self.store.read_session(session_id)
            meta, state_dict, version = stored.meta, stored.state, stored.version
        else:
            meta, state_dict, _ = self.store.load_session(session_id)
        state = SessionState.from_dict(state_dict)
        if state.theory_id not in self.theories:
            raise KeyError(
                f"session {session_id!r} runs theory {state.theory_id!r}, which is not loaded "
                f"(loaded: {', '.join(self.theories.ids) or 'none'})"
            )
        info = self.exercise_info(state.exercise_id) if state.exercise_id else None
        learner = session_learner(meta)
        return Session(
            session_id,
            state,
            int(meta.get("seed", 0)),
            info,
            meta,
            learner=learner,
            version=version,
        )

    def _learner_records(self, learner: str | None) -> dict[str, GoalRecord]:
        if learner is None:
            return {}
        if not isinstance(learner, str) or not learner.strip() or len(learner) > 128:
            raise ValueError("a learner id is a non-empty string of at most 128 characters")
        load = getattr(self.store, "load_learner_goals", None)
        stored = load(learner) if load is not None else {}
        return {goal: GoalRecord.from_dict(data) for goal, data in stored.items()}

    def learner_mastery(self, learner: str) -> dict[str, float]:
        """The learner's mastery per goal, as last committed."""
        return {goal: r.mastery for goal, r in self._learner_records(learner).items()}

    def curriculum_map(self) -> CurriculumMap:
        if self.curriculum is None:
            raise KeyError("no curriculum loaded")
        if self._curriculum_map is None:
            self._curriculum_map = CurriculumMap(self.curriculum)
        return self._curriculum_map

    def exercise_info(self, exercise_id: str) -> ExerciseInfo:
        """The exercise's info, built once per exercise of this tutor's curriculum and kept (it
        is immutable): ``resume`` asks for it on every service turn, and building it (the
        material, the grading inputs) cost 25-54 us a turn (issue 30)."""
        curriculum = self.curriculum
        if curriculum is None:
            raise KeyError(f"exercise {exercise_id!r}: no curriculum loaded")
        kept_for, infos = self._exercise_infos
        if kept_for is not curriculum:  # the curriculum was replaced: nothing kept is its
            infos = {}
            self._exercise_infos = (curriculum, infos)
        info = infos.get(exercise_id)
        if info is not None:
            return info
        goals = {goal.id: goal for goal in curriculum.goals}
        for item in curriculum.exercises:
            if item.id == exercise_id:
                info = infos[exercise_id] = ExerciseInfo.from_model(item, goals)
                return info
        known = ", ".join(item.id for item in self.curriculum.exercises)
        raise KeyError(f"unknown exercise {exercise_id!r} (known: {known})")

    def schema(self, theory_id: str) -> MetricSchema:
        if theory_id not in self._schemas:
            self._schemas[theory_id] = MetricSchema.from_theory(self.theories[theory_id].policy)
        return self._schemas[theory_id]

    def engine(self, theory_id: str) -> RuleEngine:
        engine = self._engines.get(theory_id)
        if engine is None:
            engine = RuleEngine(self.theories[theory_id].policy)
            self._engines[theory_id] = engine
        return engine

    # -- the turn ----------------------------------------------------------------------------

    def turn(self, session: Session, text: str) -> TurnResult:
        """One supervised turn; commits state and audit, then returns what the student sees
        (``pedrag.runtime.turn.pipeline``).

        Raises :class:`~pedrag.runtime.store.session_store.TurnConflict` (a ``StoreError``) when another
        writer committed this session's turn first (two requests on one session at once): the
        session is left as it was; ``resume(session.id)`` gives the committed state."""
        return run_turn(self, session, text)

    def stream(self, session: Session, text: str) -> Iterator[str]:
        """One supervised turn whose reply reaches the caller while the model writes it.

        Stages 1-5 run before the first piece, as in :meth:`turn`. On a risky turn (the contract
        requires the judge) the judge must see the whole draft first, so the reply is
        supervised whole, as in :meth:`turn`, and then given out sentence by sentence. On any
        other turn the actor's deltas go through a ``StreamGuard``: a unit (sentence, run of
        code lines, fence) is given out only once the detector has cleared it together with
        everything given out before it, and only while the judge is not due under
        :meth:`turn`'s rule. From a withheld unit or one that makes the judge due, the whole
        draft is reviewed as :meth:`turn` reviews it (judge, one revision, template) and what
        agrees with what is out follows; a model error mid-stream keeps what was given out
        and the action's template (itself checked) follows, and the audit says so.
        State and audit are committed once, after the last piece, and record exactly the
        pieces given out; a caller that stops early (``close()``) gets the turn committed with
        what it received, marked ``interrupted``. A generator never started runs no turn.
        The :class:`TurnResult` is ``session.results[-1]``; ``docs/runtime.md``, "Streaming"."""
        return stream_turn(self, session, text)


def _curriculum_model(curriculum: Any, theories: TheorySet) -> Any:
    """The curriculum's pydantic model from a path, a loaded file, a resolved curriculum or
    a model; ``None`` falls back to the theory set's only curriculum, if any."""
    if curriculum is None:
        if len(theories.curricula) >= 1:
            return next(iter(theories.curricula.values())).model
        return None
    if isinstance(curriculum, str | Path):
        return theories.add_curriculum(curriculum).model
    if getattr(curriculum, "curriculum", None) is not None:  # a LoadedFile
        return curriculum.curriculum.model
    if hasattr(curriculum, "model") and hasattr(curriculum.model, "exercises"):
        return curriculum.model
    return curriculum
