"""The tutor: one supervised turn through the eleven stages, sessions, streaming, persistence.

Runtime, the public entry (``Tutor(theory_set, backend).start(...)``, ``.turn(session, text)``,
``.stream(session, text)``, ``.resume(session_id)``). Takes a student message; gives a
:class:`TurnResult` — exactly what the student saw, plus the contract, the action, the
verdicts and the audit record — and commits the new state and the audit record to the store
in one transaction.

The order is DESIGN's "The runtime turn": budget, pre-classifier, context analyzer, policy
core, rule engine, generator, detector, judge, response monitor, behavioural monitor, audit.
Every model call goes through one backend (the offline backend by default) wrapped so that any
failure arrives as an ``LLMError``; each stage fails closed on it, so a failed turn still keeps
the contract, sends the action's template and says in the audit what happened. The new state is
built on the side and becomes the session's only after the store committed the turn, so a
failure — or a killed process — never leaves a half-written state.

``stream`` runs the same stages with the actor's reply given out as the model writes it, each
piece only once the detector has cleared it (``runtime/turn/streaming.py``); risky turns are judged
whole first. Both share stages 1-5 (``_prepare``) and 9-11 (``_commit``).
"""

from __future__ import annotations

import contextlib
import random
import re
import sys
import threading
import time
import uuid
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pedrag.kernel.ceiling import most_permissive, runtime_step
from pedrag.kernel.rungs import rung_name
from pedrag.kernel.sources import (
    CONCEPT_QUESTION_METRIC,
    EXPLAIN_MODE_METRIC,
    GROUNDED_TAG,
    INTENT_METRIC,
)
from pedrag.runtime.course.grounding import Grounding, pointer_reply, retrieve, unsupported_claim
from pedrag.runtime.detect.detector import (
    AnswerKey,
    Detector,
    DetectorVerdict,
    code_mode_for_ceiling,
)
from pedrag.runtime.learning.exam import EXAM, ExamRecord
from pedrag.runtime.learning.grader import GradingRules, grading_inputs
from pedrag.runtime.learning.loop import (
    WRONG_ANSWERS,
    Assessment,
    CurriculumMap,
    GoalRecord,
    assess,
)
from pedrag.runtime.learning.mastery import Tracing
from pedrag.runtime.learning.material import (
    SAID,
    Material,
    after_reply,
    exercise_start,
    fresh,
    placeholders,
    turn_material,
)
from pedrag.runtime.learning.material import fingerprint as fingerprint_of
from pedrag.runtime.llm.interface import (
    LLMBackend,
    LLMError,
    LLMRefusal,
    LLMRequest,
    LLMResponse,
    LLMStream,
    LLMUnavailable,
    open_stream,
)
from pedrag.runtime.llm.offline import AROUND, OfflineBackend
from pedrag.runtime.policy.policy_core import (
    Contract,
    PolicyInput,
    compute_contract,
    ground_for_action,
)
from pedrag.runtime.policy.rule_engine import Choice, RuleEngine
from pedrag.runtime.policy.theory_set import TheorySet
from pedrag.runtime.store.errors import StoreError
from pedrag.runtime.store.safe_text import clean_text, redact_credentials
from pedrag.runtime.turn import audit as audit_module
from pedrag.runtime.turn.analyzer import ContextAnalyzer, Inference, computed_metrics
from pedrag.runtime.turn.behaviour_monitor import adapt
from pedrag.runtime.turn.budget import (
    DEPLOYMENT_SCOPE,
    Budget,
    BudgetDecision,
    BudgetedBackend,
    check_budget,
)
from pedrag.runtime.turn.classifier import Classification, PreClassifier
from pedrag.runtime.turn.generator import (
    SAFE_LINE,
    GenerationInput,
    build_request,
    fill_template,
    generate,
    template_reply,
)
from pedrag.runtime.turn.judge import Judge, JudgeVerdict, must_consult
from pedrag.runtime.turn.reading import read_message
from pedrag.runtime.turn.response_monitor import fingerprint, observed_metrics
from pedrag.runtime.turn.state import (
    EXAM_LOCK,
    CommitTurn,
    MetricSchema,
    RecordSpend,
    SessionState,
    SetExercise,
    SetMetrics,
    StateWriter,
    SwitchTheory,
    new_state,
)
from pedrag.runtime.turn.streaming import MAX_STREAM_SECONDS, StreamGuard
from pedrag.runtime.turn.text import as_written
from pedrag.runtime.turn.trusted_writer import action_event, trusted_updates

if TYPE_CHECKING:  # SQLAlchemy loads only when a tutor opens a SQL store
    from pedrag.runtime.course.index import CourseIndex
    from pedrag.runtime.store.session_store import SessionStore

_EXAM_STEP = runtime_step("exam_lockdown")


_DEFAULT_TRACING = Tracing()
HISTORY = "history"  # state.extra key: the last exchanges, for the actor
HISTORY_TURNS = 6  # the actor's history by default: the last six exchanges (docs/runtime.md)
HISTORY_CHARS = 600  # per message: the history is context, not a transcript


def _bounded(text: str) -> str:
    return text if len(text) <= HISTORY_CHARS else text[: HISTORY_CHARS - 1] + "…"


GOAL_RECORDS = "goal_records"  # state.extra key: goal -> the session's view of its record


def _mastery_metrics(schema: MetricSchema) -> list[str]:
    return [
        name
        for name, field_ in schema.fields.items()
        if field_.source == "trusted"
        and field_.writer is not None
        and field_.writer.kind == "mastery"
    ]


def _over_ceiling(prepared: _Prepared) -> bool:
    return prepared.choice.rung > prepared.contract.ceiling


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


@dataclass(frozen=True)
class ExerciseInfo:
    id: str
    goal: str
    topic: str
    prompt: str
    key: AnswerKey | None
    exam: bool = False
    tests: tuple[tuple[str, str], ...] = ()  # programming exercises: (call, expected literal)
    material: Material | None = (
        None  # hints, worked example, ... (`pedrag.runtime.learning.material`)
    )
    practises: tuple[str, ...] = ()  # further goals in scope (the first is `goal`)
    rules: GradingRules = GradingRules()  # tolerance, units, public tests
    submissions: int = 1  # an exam's graded submissions

    @classmethod
    def from_model(cls, exercise: Any, goals: Mapping[str, Any]) -> ExerciseInfo:
        goal = goals.get(exercise.goal)
        topic = (goal.topic if goal is not None else exercise.goal).replace("_", " ")
        topic = getattr(goal, "topic_name", None) or topic  # as the learner reads it
        key, tests, rules = grading_inputs(exercise)
        return cls(
            exercise.id,
            exercise.goal,
            topic,
            exercise.prompt,
            key,
            bool(exercise.exam),
            tests,
            Material.from_exercise(exercise, goal),
            tuple(getattr(exercise, "practises", ()) or ()),
            rules,
            int(getattr(exercise, "submissions", 1) or 1),
        )


@dataclass
class Session:
    id: str
    state: SessionState
    seed: int
    exercise: ExerciseInfo | None
    meta: dict[str, Any] = field(default_factory=dict)
    results: list[TurnResult] = field(default_factory=list)
    learner: str | None = None  # a learner id: goal records persist across sessions
    # The stored version the state was read at (None: the store keeps none): the turn commits
    # only against it, so a toggle written meanwhile is never overwritten (docs/service.md).
    version: int | None = None


@dataclass(frozen=True)
class TurnResult:
    turn: int
    student: str
    tutor: str
    theory: str
    action: str
    rung: int
    contract: Contract
    detector: Mapping[str, Any]
    judge: Mapping[str, Any] | None
    fallback: bool
    revised: bool
    failures: tuple[Mapping[str, str], ...]
    audit: Mapping[str, Any]

    @property
    def ceiling(self) -> int:
        return self.contract.ceiling

    def to_dict(self) -> dict[str, Any]:
        """The ``pedrag chat --format json`` shape (more keys allowed): what a student-facing
        client may show, so no finding text and no judge reason."""
        return {
            "turn": self.turn,
            "student": self.student,
            "tutor": self.tutor,
            "action": self.action,
            "rung": rung_name(self.rung),
            "ceiling": rung_name(self.contract.ceiling),
            "theory": self.theory,
            # Verdicts and rule ids only: a finding's text or the judge's reason may quote the
            # hidden answer; they stay in the audit record, for the instructor.
            "detector": {key: self.detector.get(key) for key in ("flagged", "rule_ids")},
            "judge": (
                {key: self.judge.get(key) for key in ("verdict", "rule_id")}
                if self.judge is not None
                else None
            ),
            "fallback": self.fallback,
            "revised": self.revised,
            "failures": [dict(item) for item in self.failures],
        }


def _detector_dict(verdict: DetectorVerdict) -> dict[str, Any]:
    return {
        "flagged": verdict.flagged,
        "rule_ids": list(verdict.rule_ids),
        "reason": verdict.reason,
    }


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
        self._in_process = backend is None or isinstance(backend, OfflineBackend)
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
    ) -> Session:
        """A new session on ``theory`` (and ``exercise`` from the curriculum). ``trusted``
        sets system-owned metrics (e.g. an instructor's ``explain_mode``). ``learner`` names
        the learner: their per-goal mastery is read from the store and written back with each
        graded answer; ``exercise="next"`` picks their next open exercise. An exercise whose
        goal's prerequisites the learner has not mastered is refused (``ValueError``)."""
        loaded = self.theories[theory]
        records = self._learner_records(learner)
        if exercise == "next":
            following = self._map().next_exercise(records, None) if self.curriculum else None
            if following is None:
                raise ValueError(self._map().nothing_left(records))
            exercise = following.id
        info = self._exercise(exercise) if exercise else None
        if info is not None and learner is not None:
            missing = self._map().missing_prerequisites(records, info.goal)
            if missing:
                raise ValueError(
                    f"exercise {info.id!r} is locked for learner {learner!r}: goal {info.goal!r} "
                    f"requires {', '.join(missing)}, not yet mastered"
                )
        initial = dict(trusted or {})
        schema = self._schema(theory)
        if info is not None:
            for name in _mastery_metrics(schema):
                initial.setdefault(name, self._map().record(records, info.goal).mastery)
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
        self.store.create_session(session_id, session_meta, state.to_dict())
        return Session(session_id, state, seed, info, session_meta, learner=learner)

    def resume(self, session_id: str) -> Session:
        """A session from the store, as of its last committed turn, ready for its next turn.

        Raises ``SessionNotFound`` for an unknown id, and ``KeyError`` when this tutor has not
        loaded the session's current theory or its exercise's curriculum."""
        version = None
        if hasattr(self.store, "read_session"):
            stored = self.store.read_session(session_id)
            meta, state_dict, version = stored.meta, stored.state, stored.version
        else:
            meta, state_dict, _ = self.store.load_session(session_id)
        state = SessionState.from_dict(state_dict)
        if state.theory_id not in self.theories:
            raise KeyError(
                f"session {session_id!r} runs theory {state.theory_id!r}, which is not loaded "
                f"(loaded: {', '.join(self.theories.ids) or 'none'})"
            )
        info = self._exercise(state.exercise_id) if state.exercise_id else None
        learner = meta.get("learner") or meta.get("learner_id")
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

    def _map(self) -> CurriculumMap:
        if self.curriculum is None:
            raise KeyError("no curriculum loaded")
        if self._curriculum_map is None:
            self._curriculum_map = CurriculumMap(self.curriculum)
        return self._curriculum_map

    def _exercise(self, exercise_id: str) -> ExerciseInfo:
        if self.curriculum is None:
            raise KeyError(f"exercise {exercise_id!r}: no curriculum loaded")
        goals = {goal.id: goal for goal in self.curriculum.goals}
        for item in self.curriculum.exercises:
            if item.id == exercise_id:
                return ExerciseInfo.from_model(item, goals)
        known = ", ".join(item.id for item in self.curriculum.exercises)
        raise KeyError(f"unknown exercise {exercise_id!r} (known: {known})")

    def _schema(self, theory_id: str) -> MetricSchema:
        if theory_id not in self._schemas:
            self._schemas[theory_id] = MetricSchema.from_theory(self.theories[theory_id].policy)
        return self._schemas[theory_id]

    def _engine(self, theory_id: str) -> RuleEngine:
        engine = self._engines.get(theory_id)
        if engine is None:
            engine = RuleEngine(self.theories[theory_id].policy)
            self._engines[theory_id] = engine
        return engine

    # -- the turn ----------------------------------------------------------------------------

    def turn(self, session: Session, text: str) -> TurnResult:
        """One supervised turn; commits state and audit, then returns what the student sees.

        Raises :class:`~pedrag.runtime.store.session_store.TurnConflict` (a ``StoreError``) when another
        writer committed this session's turn first (two requests on one session at once): the
        session is left as it was; ``resume(session.id)`` gives the committed state."""
        text = _student_text(text)
        prepared = self._prepare(session, text)
        outcome = self._supervise(session, text, prepared)
        before, after = self._progress_lines(session, text, prepared)
        if before or after:
            framed = " ".join(part for part in (before, outcome.reply, after) if part)
            outcome = replace(
                outcome,
                reply=framed,
                final_verdict=_check(self._detector(session, prepared), framed, text),
            )
        return self._commit(session, text, prepared, outcome)

    def _progress_lines(self, session: Session, text: str, prepared: _Prepared) -> tuple[str, str]:
        """After a correct graded answer: the grader's confirmation before the reply, and the
        next exercise after it (seed 2, §3.5: correctness is the grader's fact, never the
        model's claim). Each is checked against the hidden answers it could touch."""
        if not prepared.solved_now or prepared.exam_reply is not None:
            return "", ""  # an exam's result is its own templated reply
        grade = prepared.assessment.grade
        if grade.run is not None:
            before = f"That's right: your code passes all {len(grade.run.outcomes)} tests."
        else:
            before = f"That's right: {as_written(grade.candidate or '', text)} is correct."
        detector = self._detector(session, prepared)
        if _check(detector, before, text).flagged:
            before = "That's right."
        following = prepared.following
        if following is None:
            after = "" if session.exercise is None else "That was the last open exercise for now."
        else:
            after = f"Next exercise: {following.prompt}"
            if (
                following.key is not None
                and _check(
                    Detector(
                        code_mode=code_mode_for_ceiling(prepared.contract.ceiling),
                        answer=following.key,
                    ),
                    after,
                    "",
                ).flagged
            ):
                after = "Let's move on to the next exercise."
        return before, after

    def stream(self, session: Session, text: str) -> Iterator[str]:
        """One supervised turn whose reply reaches the caller while the model writes it.

        Stages 1-5 run before the first piece, as in :meth:`turn`. On a risky turn (the contract
        requires the judge) the judge must see the whole draft first, so the reply is
        supervised whole, as in :meth:`turn`, and then given out sentence by sentence. On any
        other turn the actor's deltas go through a ``StreamGuard``: a unit (sentence, run of
        code lines, fence) is given out only once the detector has cleared it together with
        everything given out before it. A withheld unit is replaced by the guard's line and
        ends the model's part of the reply; a model error mid-stream keeps what was given out.
        Either way the action's template (itself checked) follows, and the audit says so.
        State and audit are committed once, after the last piece, and record exactly the
        pieces given out; a caller that stops early (``close()``) gets the turn committed with
        what it received, marked ``interrupted``. A generator never started runs no turn.
        The :class:`TurnResult` is ``session.results[-1]``; ``docs/runtime.md``, "Streaming"."""
        text = _student_text(text)
        prepared = self._prepare(session, text)
        progress = _StreamProgress(
            mode="buffered"
            if prepared.contract.judge_required
            or _over_ceiling(prepared)
            or prepared.exam_reply is not None
            else "streamed"
        )
        if progress.mode == "buffered":
            pieces = self._buffered_pieces(session, text, prepared, progress)
        else:
            pieces = self._streamed_pieces(session, text, prepared, progress)
        shown: list[str] = []
        before, after = self._progress_lines(session, text, prepared)
        pieces = _framed(pieces, before, after)
        try:
            for piece in pieces:
                shown.append(piece)  # appended before the yield: a piece yielded was seen
                yield piece
        except GeneratorExit:
            progress.interrupted = True
            pieces.close()  # stops the model's stream; its usage is counted now
        reply = "".join(shown)
        outcome = progress.outcome
        if outcome is None or outcome.reply != reply:
            # Interrupted, or streamed: the record says what the student actually saw.
            detector = self._detector(session, prepared)
            outcome = _Outcome(
                reply,
                _check(detector, reply, text),
                outcome.judge if outcome else None,
                progress.fallback or (outcome.fallback if outcome else False),
                outcome.revised if outcome else False,
                outcome.drafts if outcome else progress.drafts,
            )
        self._commit(session, text, prepared, outcome, progress.to_dict(len(shown)))

    def _buffered_pieces(
        self, session: Session, text: str, prepared: _Prepared, progress: _StreamProgress
    ) -> Generator[str, None, None]:
        """A risky turn: the whole reply through stages 6-8 first, then given out in pieces."""
        outcome = self._supervise(session, text, prepared)
        progress.outcome = outcome
        yield from _pieces(outcome.reply)

    def _streamed_pieces(
        self, session: Session, text: str, prepared: _Prepared, progress: _StreamProgress
    ) -> Generator[str, None, None]:
        """Stages 6-7 on the live stream (seed 2, §3.5: hold a fence until it closes, then
        release it if safe or replace it). No revision here: what is out cannot be redone."""
        detector = self._detector(session, prepared)
        given = self._generation_input(session, text, prepared)
        guard = StreamGuard(
            detector, student_message=text, whole_prefix=True, stop_after_withholding=True
        )
        draft: dict[str, Any] = {"n": 1, "flagged": False, "reason": "", "streamed": True}
        progress.drafts.append(draft)
        upstream = open_stream(prepared.backend, build_request(given))
        started = False  # leading whitespace is held back, as generate() strips it
        deadline = time.monotonic() + MAX_STREAM_SECONDS
        try:
            for delta in upstream:
                if time.monotonic() > deadline:
                    prepared.failures.append(
                        {"stage": "generator", "error": "the stream ran past its time budget"}
                    )
                    break
                delta = clean_text(delta)
                if not started:
                    delta = delta.lstrip()
                    started = bool(delta)
                piece = guard.feed(delta)
                if piece:
                    yield piece
                if guard.stopped:
                    break
            else:
                if not guard.text.strip():
                    raise LLMRefusal("the actor returned an empty reply", role="actor")
                piece = guard.finish()
                if piece:
                    yield piece
                progress.completed = True
        except LLMError as error:
            # Fail closed mid-stream: what is out was cleared and stays; what is held is dropped.
            prepared.failures.append(
                {"stage": "generator", "error": f"{type(error).__name__}: {error}"}
            )
        finally:
            upstream.close()  # a stop, an error or the caller's close(): the model stops too
            verdict = guard.verdict
            draft.update(flagged=verdict.flagged, reason=verdict.reason)
            progress.withheld = list(dict.fromkeys(f.rule_id for f in guard.withheld))
        if progress.completed and not guard.withheld:
            return
        # The model's part ended early (withheld unit or error): the action's template follows,
        # checked together with what is already out; a neutral line if that trips.
        released = guard.released
        separator = "" if not released or released[-1].isspace() else " "
        for fallback in _fallbacks(prepared, given.topic):
            if not _check(detector, released + separator + fallback, text).flagged:
                progress.fallback = True
                yield separator + fallback
                return
        if not released:
            progress.fallback = True
            yield SAFE_LINE

    # -- stages 1-5 and 9-11, shared by turn() and stream() ----------------------------------

    def _prepare(self, session: Session, text: str) -> _Prepared:
        """Stages 1-5: budget, pre-classifier, analyzer, policy core, rule engine."""
        started = time.perf_counter()
        state = session.state
        loaded = self.theories[state.theory_id]
        policy = loaded.policy
        schema = self._schema(state.theory_id)
        writer = StateWriter(schema)
        failures: list[dict[str, str]] = []
        before = dict(state.metrics)

        # 1. budget
        # The deployment's running spend is read only when a deployment cap asks for it: the read
        # is a transaction of its own on a shared store, and an uncapped deployment never uses it.
        deployment_usd = (
            self.store.spend(DEPLOYMENT_SCOPE)
            if self.budget.max_deployment_usd is not None and hasattr(self.store, "spend")
            else 0.0
        )
        decision = check_budget(
            self.budget, turns=state.turn, session_usd=state.cost_usd, deployment_usd=deployment_usd
        )
        if not decision.models_allowed:
            failures.append({"stage": "budget", "error": decision.reason})
        backend = BudgetedBackend(
            self.backend if decision.models_allowed else self.offline,
            self.budget,
            session_usd=state.cost_usd,
            deployment_usd=deployment_usd,
        )

        # 2-3. pre-classifier (enums only) and context analyzer: both read the message and
        # nothing of each other, so a model's two calls run at once (issue 30); their results
        # stay separately typed and are written in the stages' order below.
        fields = schema.fields
        classifier = PreClassifier(backend, {n: fields[n] for n in schema.names("classified")})
        analyzer = ContextAnalyzer(
            backend,
            {n: fields[n] for n in schema.names("inferred")},
            {n: policy.metrics[n].description for n in schema.names("inferred")},
        )
        classification, inference = read_message(
            classifier,
            analyzer,
            text,
            state.metrics,
            concurrently=decision.models_allowed and not self._in_process,
        )
        if classification.failure:
            failures.append({"stage": "classifier", "error": classification.failure})
        state = writer.apply(state, SetMetrics("classified", classification.values))

        # trusted bookkeeping (the system's own writes: attempts, grading, conduct)
        state, assessment = self._trusted_updates(state, writer, session, text)
        state, goal_in_scope = self._goal_in_scope(state, writer, schema, policy, session.exercise)
        solved_now = assessment.grade.verdict == "correct"
        following = None
        if solved_now and session.exercise is not None and not session.exercise.exam:
            found = self._map().next_exercise(_records(state), session.exercise)
            following = self._exercise(found.id) if found is not None else None

        # 3. the analyzer's inferred metrics + computed metrics
        if inference.failure:
            failures.append({"stage": "analyzer", "error": inference.failure})
        state = writer.apply(state, SetMetrics("inferred", inference.values))
        history = state.snapshot_history()
        state = writer.apply(
            state, SetMetrics("computed", computed_metrics(policy, history, fields))
        )
        history = state.snapshot_history()
        prepared = policy.prepare(history) if hasattr(policy, "prepare") else history

        # 4. policy core: trusted + classified values only
        trusted = {n: state.metrics[n] for n in schema.names("trusted")}
        classified = {n: state.metrics[n] for n in schema.names("classified")}
        # The pre-classifier's grounding signal, when the theory does not classify it itself.
        classified.setdefault(CONCEPT_QUESTION_METRIC, classification.concept_question)
        policy_input = PolicyInput.of(trusted, classified)
        # Whether the course has materials matters only on a turn grounding could apply to (a
        # concept question now, or a `grounded` action below); only then is the store asked.
        materials = bool(classified.get(CONCEPT_QUESTION_METRIC)) and self._has_materials(failures)
        contract = _risky_when_unread(
            compute_contract(policy_input, policy, materials=materials), classification, inference
        )

        # 5. rule engine
        rng = random.Random(f"{session.seed}:{state.turn}")
        engine = self._engine(state.theory_id)
        selector = None if self.is_offline else backend
        choice = engine.choose(prepared, contract, rng, plan=state.plan, selector=selector)
        if choice.failure:
            failures.append({"stage": "selector", "error": choice.failure})
        action = policy.actions[choice.action]
        said = dict(state.extra.get(SAID, {}))
        info = session.exercise
        material = turn_material(
            info.material if info is not None else None,
            said,
            rung=choice.rung,
            explain=explains_now(contract, policy_input),
            solved=self._solved_elsewhere(state, info),
            ceiling=contract.ceiling,
            message="" if solved_now else text,  # diagnosed before probing (issue 27)
        )
        if not materials and GROUNDED_TAG in action.tags:
            materials = self._has_materials(failures)
        contract = ground_for_action(contract, frozenset(action.tags), materials=materials)
        grounding = self._retrieve(session, text, contract, classification, failures)
        return _Prepared(
            started=started,
            loaded=loaded,
            schema=schema,
            writer=writer,
            failures=failures,
            before=before,
            decision=decision,
            backend=backend,
            classification=classification,
            inference=inference,
            state=state,
            solved_now=solved_now,
            assessment=assessment,
            following=following,
            policy_input=policy_input,
            contract=contract,
            choice=choice,
            action=action,
            material=material,
            said=said,
            goal_in_scope=goal_in_scope,
            grounding=grounding,
            exam_reply=assessment.exam.reply if assessment.exam is not None else None,
        )

    def _has_materials(self, failures: list[dict[str, str]]) -> bool:
        """Whether the session's course has indexed materials (read when asked, so materials
        indexed while a tutor runs are used); a store failure means none (fails closed)."""
        if self.course_index is None or self.course is None:
            return False
        try:
            return self.course_index.has_course(self.course)
        except StoreError as error:
            failures.append({"stage": "retrieval", "error": str(error)})
            return False

    def _retrieve(
        self,
        session: Session,
        text: str,
        contract: Contract,
        classification: Classification,
        failures: list[dict[str, str]],
    ) -> Grounding | None:
        """Grounded retrieval before generation (seed 2, §3.4): on a concept question the
        learner's own question is the query; when the action asked for grounding, the
        exercise's topic. Passages the detector finds the hidden answer in are never shown."""
        if not contract.grounding_required or self.course_index is None or self.course is None:
            return None
        info = session.exercise
        kind: Any = "question" if classification.concept_question else "action"
        query = text if kind == "question" else (info.topic if info else text)
        detector = Detector(
            code_mode=code_mode_for_ceiling(contract.ceiling), answer=info.key if info else None
        )
        try:
            return retrieve(
                self.course_index,
                self.course,
                kind,
                query,
                lambda passage: not _check(detector, passage, text).flagged,
            )
        except StoreError as error:
            failures.append({"stage": "retrieval", "error": str(error)})
            return Grounding(self.course, kind)

    def _goal_in_scope(
        self,
        state: SessionState,
        writer: StateWriter,
        schema: MetricSchema,
        policy: Any,
        info: ExerciseInfo | None,
    ) -> tuple[SessionState, str | None]:
        """With several goals in scope (the exercise's goal and those it `practises`), the
        mastery metric is the goal's whose band gives the most permissive ceiling (seed 2,
        §3.2; the kernel's `most_permissive`), so the rules, the contract and the compiler's
        proofs all see one consistent state: the learner is met at their weakest goal."""
        if info is None:
            return state, None
        names = _mastery_metrics(schema)
        if not info.practises or not names or self.curriculum is None:
            return state, info.goal
        goals = (info.goal, *info.practises)
        records = _records(state)
        masteries = [self._map().record(records, goal).mastery for goal in goals]
        trusted = {n: state.metrics[n] for n in schema.names("trusted")}
        classified = {n: state.metrics[n] for n in schema.names("classified")}
        ceilings = [
            compute_contract(
                PolicyInput.of({**trusted, **dict.fromkeys(names, mastery)}, classified), policy
            ).ceiling
            for mastery in masteries
        ]
        chosen = most_permissive(ceilings)
        state = writer.apply(state, SetMetrics("trusted", dict.fromkeys(names, masteries[chosen])))
        return state, goals[chosen]

    def _solved_elsewhere(self, state: SessionState, info: ExerciseInfo | None) -> str:
        """The prompt of another exercise on this topic that the learner's records say they
        solved ("" when none): the only ground for "you solved a similar problem earlier"."""
        if info is None or self.curriculum is None:
            return ""
        solved = {e for record in _records(state).values() for e in record.solved}
        goals = self._map().goals
        for exercise in self._map().exercises:
            goal = goals.get(exercise.goal)
            if (
                exercise.id in solved
                and exercise.id != info.id
                and goal is not None
                and goal.topic.replace("_", " ") == info.topic
            ):
                return str(exercise.prompt)
        return ""

    def _commit(
        self,
        session: Session,
        text: str,
        prepared: _Prepared,
        outcome: _Outcome,
        stream: Mapping[str, Any] | None = None,
    ) -> TurnResult:
        """Stages 9-11 on the reply the student saw; commits state and audit in one
        transaction, and only then does the session adopt the new state."""
        p = prepared
        p.failures[:] = [_safe_failure(item) for item in p.failures]
        state, writer, schema, backend = p.state, p.writer, p.schema, p.backend
        fields = schema.fields
        choice, contract, action = p.choice, p.contract, p.action
        policy = p.loaded.policy

        # 9. response monitor
        print_ = fingerprint(
            outcome.reply,
            rung=choice.rung,
            tags=frozenset(action.tags),
            revealed=outcome.final_verdict.flagged,
        )
        observed = observed_metrics(
            print_,
            action=choice.action,
            last_action=state.last_action,
            previous=state.metrics,
            fields={n: fields[n] for n in schema.names("observed")},
        )
        state = writer.apply(state, SetMetrics("observed", observed))

        # 10. behavioural monitor + adaptation
        adaptation = adapt(
            policy,
            state.snapshot_history(),
            action=choice.action,
            rung_of={name: info.rung for name, info in policy.actions.items()},
            ceiling=contract.ceiling,
            theory_ids=self.theories.ids,
            previous=state.plan,
        )

        # 11. audit, then commit state + record in one transaction
        new = writer.apply(state, CommitTurn(choice.action, choice.rung, adaptation.plan))
        new = writer.apply(new, RecordSpend(backend.calls, backend.tokens, backend.cost_usd))
        if self.history_turns > 0:
            # DESIGN, "Learners, grading and mastery": a bounded conversation history for the
            # actor (never for the policy core, whose input has no text field).
            exchanges = [*new.extra.get(HISTORY, ()), [_bounded(text), _bounded(outcome.reply)]]
            if len(exchanges) > self.history_turns:
                # Trimmed in steps, to the newer half: a window sliding by one exchange a turn
                # would change the actor prompt right after its stable text on every turn and
                # defeat a server's prefix cache (issue 30); in steps, the prompt only grows
                # between trims.
                exchanges = exchanges[-max(1, (self.history_turns + 1) // 2) :]
            new = replace(new, extra={**new.extra, HISTORY: exchanges})
        info_now = session.exercise
        said = after_reply(
            p.said,
            outcome.reply,
            p.material,
            info_now.material if info_now else None,
            keep_text=self.keep_transcript,
        )
        new = replace(new, extra={**new.extra, SAID: said})
        after_reply_events = ("turn", action_event(choice.action))
        updates, extra = trusted_updates(schema.fields, new.metrics, after_reply_events, new.extra)
        if updates:
            new = writer.apply(new, SetMetrics("trusted", updates))
        if extra != dict(new.extra):
            new = replace(new, extra=extra)
        if p.following is not None:
            # The next exercise starts now: counters and flags start again, and the mastery
            # metric is the new goal's (the theory's writers, `exercise_start`).
            new = writer.apply(new, SetExercise(p.following.id, p.following.goal))
            mastery = self._map().record(_records(new), p.following.goal).mastery
            updates, extra = trusted_updates(
                schema.fields, new.metrics, ("exercise_start",), new.extra, mastery
            )
            extra[WRONG_ANSWERS] = []
            extra[SAID] = exercise_start(extra.get(SAID, {}))
            new = replace(writer.apply(new, SetMetrics("trusted", updates)), extra=extra)
        if adaptation.switch_to and new.extra.get(EXAM_LOCK) is not True:
            new = StateWriter(schema).apply(
                new, SwitchTheory(adaptation.switch_to, self._schema(adaptation.switch_to))
            )
        elapsed_ms = (time.perf_counter() - p.started) * 1000
        record = {
            "version": audit_module.AUDIT_VERSION,
            "turn": new.turn,
            "theory": p.loaded.id,
            "budget": p.decision.to_dict(),
            "classified": dict(p.policy_input.classified),  # with the concept signal
            "inferred": {k: v for k, v in p.inference.values.items()},
            "trusted": dict(p.policy_input.trusted),
            "contract": contract.to_dict(),
            "choice": choice.to_dict(),
            "drafts": outcome.drafts,
            "detector": _detector_dict(outcome.final_verdict),
            "judge": outcome.judge.to_dict() if outcome.judge else None,
            "grounding": p.grounding.to_dict(outcome.reply) if p.grounding else None,
            "fallback": outcome.fallback,
            "revised": outcome.revised,
            "fingerprint": print_.to_dict(),
            "adaptation": adaptation.to_dict(),
            "solved": p.solved_now,
            "grade": {
                "verdict": p.assessment.grade.verdict,
                "events": list(p.assessment.events),
                **({"facts": list(p.assessment.grade.facts)} if self.keep_transcript else {}),
            },
            "exercise": info_id(session.exercise),
            "goal_in_scope": p.goal_in_scope,
            "next_exercise": info_id(p.following),
            "metric_deltas": audit_module.metric_deltas(p.before, state.metrics),
            "latency_ms": round(elapsed_ms, 3),
            "calls": backend.calls,
            "tokens": backend.tokens,
            "cost_usd": backend.cost_usd,
            "usage": backend.by_role,
            "failures": p.failures,
        }
        if stream is not None:
            record["stream"] = dict(stream)
        if self.keep_transcript:
            record["student"] = text
            record["tutor"] = outcome.reply
        record = audit_module.plain(record)
        learner = None
        info = session.exercise
        if session.learner is not None and info is not None and p.assessment.record is not None:
            goal_record = new.extra.get(GOAL_RECORDS, {}).get(info.goal)
            learner = (session.learner, {info.goal: goal_record}) if goal_record else None
        try:
            given: dict[str, Any] = {} if learner is None else {"learner": learner}
            if session.version is not None:
                given["version"] = session.version
            self.store.save_turn(session.id, new.turn, new.to_dict(), record, **given)
        except StoreError:
            # The model calls were made and paid for even though the turn is not committed
            # (another writer won the turn, the database failed): count them against the
            # deployment cap, or racing requests could spend past it. The turn's error wins.
            with contextlib.suppress(StoreError):
                self._add_deployment_spend(backend.cost_usd)
            raise
        self._add_deployment_spend(backend.cost_usd)
        session.state = new  # only now: the store has committed the turn
        if session.version is not None:
            session.version += 1
        if p.following is not None:
            session.exercise = p.following
        result = TurnResult(
            turn=new.turn,
            student=text,
            tutor=outcome.reply,
            theory=p.loaded.id,
            action=choice.action,
            rung=choice.rung,
            contract=contract,
            detector=record["detector"],  # type: ignore[arg-type]
            judge=record["judge"],  # type: ignore[arg-type]
            fallback=outcome.fallback,
            revised=outcome.revised,
            failures=tuple(p.failures),
            audit=record,
        )
        session.results.append(result)
        return result

    def _add_deployment_spend(self, usd: float) -> None:
        if usd and hasattr(self.store, "add_spend"):
            self.store.add_spend(DEPLOYMENT_SCOPE, usd)

    # -- stages 6-8 --------------------------------------------------------------------------

    def _supervise(self, session: Session, text: str, prepared: _Prepared) -> _Outcome:
        """Stages 6-8 for a prepared turn: generate, detect, judge; revise once, else fail
        closed to the action's template."""
        backend, contract = prepared.backend, prepared.contract
        failures = prepared.failures
        detector = self._detector(session, prepared)
        if prepared.exam_reply is not None:
            # seed 2, §3.5: an exam turn is answered from a template; no model writes to the
            # learner while an exam is active (`pedrag.runtime.learning.exam`).
            reply = prepared.exam_reply
            return _Outcome(reply, _check(detector, reply, text), None, False, False, [])
        if _over_ceiling(prepared):
            # The theory has no action at or below this ceiling (a coverage gap the compiler
            # reports): nothing is generated for an action the contract does not allow.
            failures.append(
                {"stage": "selector", "error": f"no action at or below H{contract.ceiling}"}
            )
            return _Outcome(SAFE_LINE, DetectorVerdict(), None, True, False, [])
        given = self._generation_input(session, text, prepared)
        topic = given.topic
        drafts: list[dict[str, Any]] = []
        revised = False
        judge_verdict: JudgeVerdict | None = None
        grounding = prepared.grounding
        rejected: list[str] = []  # every rule id that failed a draft this turn

        def attempt(note: str | None) -> tuple[str | None, DetectorVerdict | None]:
            try:
                draft, _ = generate(backend, _with_note(given, note))
                draft = clean_text(draft)
            except LLMError as error:
                failures.append({"stage": "generator", "error": f"{type(error).__name__}: {error}"})
                return None, None
            verdict = _check(detector, draft, text)
            drafts.append(
                {"n": len(drafts) + 1, "flagged": verdict.flagged, "reason": verdict.reason}
            )
            return draft, verdict

        def review(draft: str, verdict: DetectorVerdict) -> tuple[str, tuple[str, ...]]:
            """The same review for every draft: the detector's verdict, then the judge where
            the contract requires it. Gives the outcome and the rule ids that failed it."""
            nonlocal judge_verdict
            if verdict.flagged:
                rejected.extend(verdict.rule_ids)
                return "revise", verdict.rule_ids
            key = session.exercise.key if session.exercise else None
            if not must_consult(contract, draft, key):
                return "allow", ()
            sources = list(prepared.loaded.policy.sources)
            passages = grounding.for_prompt() if grounding is not None else []
            judge_verdict = Judge(backend).review(contract, draft, sources, passages, key)
            if judge_verdict.failure:
                failures.append({"stage": "judge", "error": judge_verdict.failure})
            # seed 2, §4.4: record the judge's reason per draft, not only the last verdict.
            drafts[-1].update(
                judge=judge_verdict.verdict,
                judge_rule_id=judge_verdict.rule_id,
                judge_reason=judge_verdict.reason,
            )
            if judge_verdict.verdict != "allow":
                rejected.append(judge_verdict.rule_id)
                return judge_verdict.verdict, (judge_verdict.rule_id,)
            # A grounded draft the judge let through still meets the support rule in code (a
            # citation no passage has, a quotation no passage holds, a cited sentence its
            # passage does not support): a model judge is told the rule, this enforces it.
            if grounding is not None:
                problem = unsupported_claim(draft, passages)
                if problem is not None:
                    drafts[-1].update(support=problem)
                    rejected.append("grounding")
                    return "revise", ("grounding",)
            return "allow", ()

        # docs/runtime.md, "Revision": a first draft that fails review is written once more
        # and reviewed exactly as the first was; anything but "allow" then is the template.
        draft, verdict = attempt(None)
        if draft is not None and verdict is not None:
            outcome, rule_ids = review(draft, verdict)
            if outcome == "revise":
                revised = True
                draft, verdict = attempt(revision_note(rule_ids))
                if draft is not None and verdict is not None:
                    outcome, _ = review(draft, verdict)
            if outcome == "allow" and draft is not None and verdict is not None:
                return _Outcome(draft, verdict, judge_verdict, False, revised, drafts)
        # Fail closed: the action's template, itself checked; a neutral line if even that trips.
        fallbacks = _fallbacks(prepared, topic)
        # A grounded turn rejected for support gets a pointer to its passages first.
        if grounding is not None and "grounding" in rejected:
            fallbacks.insert(0, pointer_reply(grounding))
        for fallback in fallbacks:
            final = _check(detector, fallback, text)
            if not final.flagged:
                return _Outcome(fallback, final, judge_verdict, True, revised, drafts)
        return _Outcome(SAFE_LINE, DetectorVerdict(), judge_verdict, True, revised, drafts)

    def _detector(self, session: Session, prepared: _Prepared) -> Detector:
        info = session.exercise
        contract = prepared.contract
        return Detector(
            code_mode=code_mode_for_ceiling(contract.ceiling),
            answer=None if _explains(prepared) else (info.key if info else None),
            # issue 26: an answer given one piece per turn is caught on the turn completing it.
            previous_replies=tuple(result.tutor for result in session.results[-3:]),
        )

    @staticmethod
    def _generation_input(session: Session, text: str, prepared: _Prepared) -> GenerationInput:
        state, policy, choice = prepared.state, prepared.loaded.policy, prepared.choice
        action, contract = prepared.action, prepared.contract
        info = session.exercise
        return GenerationInput(
            theory_name=policy.theory_name,
            theory_description=(policy.description or "").strip(),
            action=choice.action,
            action_description=action.description,
            guidance=action.guidance or "",
            template=action.template or "",
            rung=choice.rung,
            metrics=state.metrics,
            contract=contract,
            topic=info.topic if info else "",
            exercise_prompt=info.prompt if info else "",
            student_message=text,
            grader_facts=prepared.assessment.grade.facts,
            grounding=prepared.grounding,
            history=tuple(
                (str(student), str(tutor)) for student, tutor in state.extra.get(HISTORY, ())
            ),
            variants=tuple(getattr(action, "variants", ())),
            material=prepared.material if info is not None else None,
            said={
                "fresh": [
                    name
                    for name in prepared.material
                    if fresh(name, prepared.said, info.material if info else None)
                ],
                "recent": list(prepared.said.get("recent", ())),
                "last": str(prepared.said.get("last", "")),
                "last_fp": str(prepared.said.get("last_fp", "")),
                "count": int(prepared.said.get("count", 0)),
            },
        )

    # -- trusted bookkeeping -------------------------------------------------------------------

    def _trusted_updates(
        self, state: SessionState, writer: StateWriter, session: Session, text: str
    ) -> tuple[SessionState, Assessment]:
        """Stage 2's runtime events — the grader's verdict on this message (every message,
        not only those classified as attempts) and a hostile turn — written to trusted metrics
        through their declared writers (`pedrag.runtime.turn.trusted_writer`)."""
        metrics = state.metrics
        info = session.exercise
        record: GoalRecord | None = None
        tracing = _DEFAULT_TRACING
        if info is not None and self.curriculum is not None:
            record = self._map().record(_records(state), info.goal)
            tracing = self._map().tracing(info.goal)
        assessment = assess(
            text,
            key=info.key if info is not None else None,
            tests=info.tests if info is not None else (),
            exam=bool(info is not None and info.exam),
            intent=metrics.get(INTENT_METRIC),
            solved=state.solved,
            wrong_answers=tuple(state.extra.get(WRONG_ANSWERS, ())),
            record=record or GoalRecord(0.0),
            tracing=tracing,
            rules=info.rules if info is not None else None,
            exam_record=ExamRecord.from_dict(state.extra.get(EXAM)),
            submissions=info.submissions if info is not None else 1,
        )
        events = list(assessment.events)
        events.append("hostile_turn" if metrics.get(INTENT_METRIC) == "hostile" else "calm_turn")
        extra = dict(state.extra)
        extra[WRONG_ANSWERS] = list(assessment.wrong_answers)
        if assessment.exam is not None:
            extra[EXAM] = assessment.exam.record.to_dict()
        mastery = None
        if assessment.record is not None and info is not None and record is not None:
            solved = assessment.grade.verdict == "correct"
            new_record = replace(
                assessment.record,
                solved=(*record.solved, info.id)
                if solved and info.id not in record.solved
                else record.solved,
            )
            extra[GOAL_RECORDS] = {**extra.get(GOAL_RECORDS, {}), info.goal: new_record.to_dict()}
            mastery = new_record.mastery
        updates, extra = trusted_updates(writer.schema.fields, metrics, events, extra, mastery)
        if updates:
            state = writer.apply(state, SetMetrics("trusted", updates))
        if assessment.grade.verdict == "correct":
            state = writer.mark_solved(state)
        state = replace(state, extra=extra)
        return state, assessment


def info_id(info: ExerciseInfo | None) -> str | None:
    return info.id if info is not None else None


def _framed(
    pieces: Generator[str, None, None], before: str, after: str
) -> Generator[str, None, None]:
    try:
        if before:
            yield before + " "
        yield from pieces
        if after:
            yield " " + after
    finally:
        pieces.close()


def _records(state: SessionState) -> dict[str, GoalRecord]:
    return {g: GoalRecord.from_dict(r) for g, r in state.extra.get(GOAL_RECORDS, {}).items()}


@dataclass(frozen=True)
class _Prepared:
    """What stages 1-5 leave for the reply and the commit."""

    started: float
    loaded: Any
    schema: MetricSchema
    writer: StateWriter
    failures: list[dict[str, str]]
    before: dict[str, Any]
    decision: BudgetDecision
    backend: BudgetedBackend
    classification: Classification
    inference: Inference
    state: SessionState
    solved_now: bool
    assessment: Assessment
    following: ExerciseInfo | None  # after a correct answer: the exercise offered next
    policy_input: PolicyInput
    contract: Contract
    choice: Choice
    action: Any
    goal_in_scope: str | None = None  # the goal whose mastery band set the ceiling
    material: dict[str, str] = field(default_factory=dict)  # this turn's teaching material
    said: dict[str, Any] = field(default_factory=dict)  # what the tutor had said before it
    grounding: Grounding | None = None  # a grounded turn's retrieved passages
    exam_reply: str | None = None  # an exam turn's templated reply: the actor is not called


@dataclass
class _StreamProgress:
    """What the streaming path knows about its reply, read when the turn is committed."""

    mode: str  # "streamed" or "buffered"
    outcome: _Outcome | None = None  # the buffered path's supervised reply
    drafts: list[dict[str, Any]] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)  # rule ids of replaced units
    completed: bool = False  # the model's stream ran to its end
    fallback: bool = False  # the action's template (or the neutral line) was given out
    interrupted: bool = False  # the caller stopped reading before the end

    def to_dict(self, pieces: int) -> dict[str, Any]:
        completed = self.completed if self.mode == "streamed" else self.outcome is not None
        return {
            "mode": self.mode,
            "pieces": pieces,
            "completed": completed,
            "withheld": list(self.withheld),
            "interrupted": self.interrupted,
        }


@dataclass(frozen=True)
class _Outcome:
    reply: str
    final_verdict: DetectorVerdict
    judge: JudgeVerdict | None
    fallback: bool
    revised: bool
    drafts: list[dict[str, Any]]


def _student_text(text: object) -> str:
    if not isinstance(text, str):
        raise TypeError(f"a student message is a str, got {type(text).__name__}")
    return clean_text(text)


_QUOTED = re.compile(r"\"(?:[^\"\\\n]|\\.){0,400}\"|'(?:[^'\\\n]|\\.){0,400}'")


def _safe_failure(item: Mapping[str, str]) -> dict[str, str]:
    """A failure as it is stored and shown: quoted values (a model's output, which can echo
    the student's message or the answer) elided, credentials in URLs removed, control
    characters replaced."""
    return {
        key: clean_text(redact_credentials(_QUOTED.sub("'…'", str(value))))
        for key, value in item.items()
    }


def _fallbacks(prepared: _Prepared, topic: str) -> list[str]:
    """The fail-closed replies in order: the action's template, its wordings that need no
    teaching material, the neutral line; any said before in the session goes after the rest,
    and one identical to the previous reply last, so failing closed does not make the tutor
    repeat itself."""
    action = prepared.action
    plain = [
        fill_template(text, topic)
        for text in getattr(action, "variants", ())
        if not set(placeholders(text)) - {"topic"}
    ]
    base = [template_reply(action, topic), *plain, SAFE_LINE]
    # the same lines with a few content-free words around them, for a long session
    around = [frame.replace("{wording}", line) for frame in AROUND for line in base]
    lines = list(dict.fromkeys([*base, *around]))
    previous = str(prepared.said.get("last_fp", ""))
    said = set(prepared.said.get("recent", ()))  # issue 27: no reply twice in a session
    return sorted(
        lines, key=lambda line: (fingerprint_of(line) == previous, fingerprint_of(line) in said)
    )


def _explains(prepared: _Prepared) -> bool:
    return explains_now(prepared.contract, prepared.policy_input)


def explains_now(contract: Contract, policy_input: PolicyInput) -> bool:
    """The one case in which the answer may be stated: the trusted ``explain_mode`` (an
    instructor's toggle, never student text) lifted this turn to H7 (the full solution) and no
    exam is locked down. An H7 ceiling alone — a theory's start, a step — does not do it."""
    explain = dict(policy_input.trusted).get(EXPLAIN_MODE_METRIC) is True
    return explain and contract.ceiling == 7 and not contract.exam_lockdown


def _risky_when_unread(
    contract: Contract, classification: Classification, inference: Inference
) -> Contract:
    """Fail safer, not softer: a turn whose message the classifier or the analyzer could not
    read is risky — its defaults (``intent=other``) would otherwise lower scrutiny exactly when
    the model path is unhealthy — so the judge must pass the draft, and a judge that fails
    too sends the template. The ceiling is the policy core's and stays as computed."""
    unread = [
        f"{stage}_failed"
        for stage, failure in (
            ("classifier", classification.failure),
            ("analyzer", inference.failure),
        )
        if failure
    ]
    if not unread:
        return contract
    return replace(contract, judge_required=True, risks=(*contract.risks, *unread))


def _with_note(given: GenerationInput, note: str | None) -> GenerationInput:
    if note is None:
        return given
    return replace(given, revision_note=note)


_RULE_MEANING = {
    "code-fence": "it showed a code block",
    "indented-code": "it showed indented code",
    "inline-code": "it showed code inline",
    "complete-function": "it showed a complete function, which only the full solution may",
    "encoded-payload": "it hid code or the answer in an encoding",
    "answer-reveal": "it gave away the answer, in some spelling",
    "step-reveal": "it gave away the current step's value",
    "solution-reveal": "it reproduced the worked solution",
    "above-ceiling": "it gave more help than the ceiling allows",
    "code-over-ceiling": "it showed code although the ceiling allows none",
    "exam-content": "it gave help during an exam",
    "unsupported-citation": "it cited a source that is not among the sources",
    "grounding": "it claimed, quoted or cited something the course passages do not support; "
    "state course facts only from the passages, each cited by its label",
    "reply-too-long": "it was far too long; keep to a few sentences",
}


def revision_note(rule_ids: tuple[str, ...]) -> str:
    """What the actor is told about a draft that failed review: the rule ids and what each
    means, never the finding's text or the judge's reason (either may quote the hidden
    answer, which the actor otherwise never sees)."""
    known = [rule for rule in dict.fromkeys(rule_ids) if rule in _RULE_MEANING]
    if not known:
        return "it broke the contract (rule within-contract was not met)."
    return "; ".join(f"rule {rule}: {_RULE_MEANING[rule]}" for rule in known) + "."


def _check(detector: Detector, reply: str, student_message: str) -> DetectorVerdict:
    return detector.check(reply, student_message=student_message)


_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_SENTENCE = re.compile(r".+?(?:[.!?]\s+|\Z)", re.DOTALL)


def _pieces(reply: str) -> Iterator[str]:
    position = 0
    for match in _FENCE.finditer(reply):
        yield from _sentences(reply[position : match.start()])
        yield match.group(0)
        position = match.end()
    yield from _sentences(reply[position:])


def _sentences(text: str) -> Iterator[str]:
    for match in _SENTENCE.finditer(text):
        if match.group(0):
            yield match.group(0)


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
