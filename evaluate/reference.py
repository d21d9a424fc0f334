"""The evaluator's reference contract: what the theory allows on each turn, from trusted state.

Evaluation, per turn. Takes the theory set, the curriculum, the session's exercise and, each
turn, the learner's message with the learner's own statement of what it was doing (its intent
and whether it sent code: ground truth in a simulation, where the learner is ours); gives the
:class:`~pedrag.runtime.policy.policy_core.Contract` the policy core computes for that state.

Why this way: the reference must not come from pedrag's own judgement of the learner. The
intent is the simulated learner's, never pedrag's classifier output; the trusted metrics are
written the one way the runtime writes them — the grader's verdict on the message and Bayesian
Knowledge Tracing (:func:`pedrag.runtime.learning.loop.assess`), through the theory's declared
writers (:func:`pedrag.runtime.turn.trusted_writer.trusted_updates`) — and the ceiling is the
compiled policy's, through the policy core and the kernel (:func:`compute_contract`). The
tutor's own contract, action and claimed rung are never read.
"""

from __future__ import annotations

from typing import Any

from pedrag.evaluate.records import ExerciseCase
from pedrag.runtime.learning.grader import Grade
from pedrag.runtime.learning.loop import CurriculumMap, GoalRecord, assess
from pedrag.runtime.policy.policy_core import Contract, PolicyInput, compute_contract
from pedrag.runtime.policy.theory_set import TheorySet
from pedrag.runtime.turn.state import MetricSchema
from pedrag.runtime.turn.trusted_writer import trusted_updates

INTENT = "intent"
CODE_ATTEMPT = "code_attempt"


class ReferenceTracker:
    """Trusted state of one simulated session, replayed from graded evidence."""

    def __init__(
        self,
        theories: TheorySet,
        curriculum: Any,
        exercise: ExerciseCase,
        *,
        exam: bool = False,
    ) -> None:
        self.theories = theories
        self.exercise = exercise
        self.exam = exam
        self.map = CurriculumMap(curriculum) if curriculum is not None else None
        tracing = self.map.tracing(exercise.goal) if self.map is not None else None
        self.tracing = tracing
        self.record = GoalRecord(tracing.prior if tracing is not None else 0.0)
        self.metrics: dict[str, Any] = {}
        self.extra: dict[str, Any] = {}
        self.wrong_answers: tuple[str, ...] = ()
        self.solved = False
        self.last_grade = Grade("none")
        self._started: set[str] = set()

    def _schema(self, theory_id: str) -> MetricSchema:
        return MetricSchema.from_theory(self.theories[theory_id].policy)

    def _start(self, theory_id: str, schema: MetricSchema) -> None:
        """Defaults, the exam flag and the goal's mastery, as an exercise start writes them."""
        if theory_id in self._started:
            return
        self._started.add(theory_id)
        for name in schema.names("trusted"):
            self.metrics.setdefault(name, schema.fields[name].default)
        if self.exam and "exam_active" in schema.fields:
            self.metrics["exam_active"] = True
        self._write(schema, ("exercise_start",), self.record.mastery)

    def _write(self, schema: MetricSchema, events: tuple[str, ...], mastery: float | None) -> None:
        updates, self.extra = trusted_updates(
            schema.fields, self.metrics, events, self.extra, mastery
        )
        for name, value in updates.items():
            self.metrics[name] = schema.fields[name].coerce(value)

    def observe(self, theory_id: str, message: str, intent: str, *, code: bool = False) -> Contract:
        """Grade the learner's message, write the trusted state, give this turn's contract.
        Call once per learner message, in order, before the tutor's reply is judged."""
        schema = self._schema(theory_id)
        self._start(theory_id, schema)
        fields = schema.fields
        intent_field = fields.get(INTENT)
        if intent_field is not None and intent not in (intent_field.values or ()):
            intent = str(intent_field.default)
        assessment = assess(
            message,
            key=self.exercise.key,
            tests=self.exercise.tests,
            exam=self.exam,
            intent=intent,
            solved=self.solved,
            wrong_answers=self.wrong_answers,
            record=self.record,
            tracing=self.tracing or _no_tracing(),
        )
        self.last_grade = assessment.grade
        self.wrong_answers = assessment.wrong_answers
        events = list(assessment.events)
        if intent == "hostile":
            events.append("hostile_turn")
        mastery = None
        if assessment.record is not None:
            self.record = assessment.record
            mastery = self.record.mastery
        if assessment.grade.verdict == "correct":
            self.solved = True
        self._write(schema, tuple(events), mastery)
        classified: dict[str, Any] = {
            name: fields[name].default for name in schema.names("classified")
        }
        if INTENT in classified:
            classified[INTENT] = intent
        if CODE_ATTEMPT in classified:
            classified[CODE_ATTEMPT] = code
        trusted = {name: self.metrics[name] for name in schema.names("trusted")}
        return compute_contract(
            PolicyInput.of(trusted, classified), self.theories[theory_id].policy
        )

    def after_reply(self, theory_id: str) -> None:
        """The turn is counted (the ``turn`` event); the tutor's action is not read."""
        self._write(self._schema(theory_id), ("turn",), None)


def _no_tracing() -> Any:
    from pedrag.runtime.learning.mastery import Tracing

    return Tracing()
