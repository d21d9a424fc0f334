"""The learning loop: grade, count, trace mastery, and move on (DESIGN, "Learners, grading and
mastery").

Runtime stage 2 (with the grader) and the end of a turn (advancing). Takes the student's
message, the current exercise and the learner's per-goal record; gives the turn's runtime
events (``answer_graded``, ``correct_answer``, ``wrong_answer``, ``new_wrong_answer``,
``worked_wrong_answer``), the goal
record updated by Bayesian Knowledge Tracing, and, after a correct answer, the next exercise:
the next unsolved one of the goal, else the first goal whose prerequisites are mastered.

The policy core never sees any of this text: only the trusted metrics the declared writers
derive from the events (`pedrag.runtime.turn.trusted_writer`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pedrag.kernel.sources import ADVERSARIAL_INTENTS
from pedrag.runtime.learning.exam import ExamRecord, ExamStep, asks_to_end, end_exam, exam_step
from pedrag.runtime.learning.grader import Grade, GradingRules, grade, shows_work
from pedrag.runtime.learning.mastery import Tracing, update

WRONG_ANSWERS = "wrong_answers"  # state.extra key: distinct wrong candidates on this exercise
MAX_REMEMBERED_WRONG = 50


@dataclass(frozen=True)
class GoalRecord:
    """A learner's evidence on one goal: P(mastered), graded answers seen, exercises solved."""

    mastery: float
    evidence: int = 0
    solved: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"mastery": self.mastery, "evidence": self.evidence, "solved": list(self.solved)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GoalRecord:
        return cls(float(data["mastery"]), int(data["evidence"]), tuple(data.get("solved", ())))


class CurriculumMap:
    """Goals, prerequisites and exercise order of one curriculum (its pydantic model)."""

    def __init__(self, curriculum: Any) -> None:
        self.goals = {goal.id: goal for goal in curriculum.goals}
        self.exercises = list(curriculum.exercises)

    def tracing(self, goal_id: str) -> Tracing:
        goal = self.goals.get(goal_id)
        return Tracing.of(getattr(goal, "knowledge_tracing", None))

    def threshold(self, goal_id: str) -> float:
        goal = self.goals.get(goal_id)
        return float(goal.mastery_threshold) if goal is not None else 0.8

    def record(self, records: Mapping[str, GoalRecord], goal_id: str) -> GoalRecord:
        return records.get(goal_id) or GoalRecord(self.tracing(goal_id).prior)

    def mastered(self, records: Mapping[str, GoalRecord], goal_id: str) -> bool:
        return self.record(records, goal_id).mastery >= self.threshold(goal_id)

    def missing_prerequisites(self, records: Mapping[str, GoalRecord], goal_id: str) -> list[str]:
        goal = self.goals.get(goal_id)
        requires = list(goal.requires) if goal is not None else []
        return [g for g in requires if not self.mastered(records, g)]

    def next_exercise(self, records: Mapping[str, GoalRecord], after: Any | None) -> Any | None:
        """The next practice exercise: an unsolved one of the same goal, else the first unsolved
        exercise of the first goal (in curriculum order) that is open and not yet mastered,
        the goals of ``after``'s domain first: a learner who has just mastered the inputs of
        photosynthesis goes on to its equation, not back to the first arithmetic exercise."""
        solved = {e for record in records.values() for e in record.solved}
        candidates = [e for e in self.exercises if not e.exam and e.id not in solved]
        goals = list(self.goals)
        if after is not None:
            candidates = [e for e in candidates if e.id != after.id]
            same_goal = [e for e in candidates if e.goal == after.goal]
            if same_goal and not self.mastered(records, after.goal):
                return same_goal[0]
            domain = self._domain(after.goal)
            if domain is not None:
                goals.sort(key=lambda goal_id: self._domain(goal_id) != domain)  # stable
        for goal_id in goals:
            if self.mastered(records, goal_id) or self.missing_prerequisites(records, goal_id):
                continue
            for exercise in candidates:
                if exercise.goal == goal_id:
                    return exercise
        return None

    def _domain(self, goal_id: str) -> str | None:
        return getattr(self.goals.get(goal_id), "domain", None)

    def nothing_left(self, records: Mapping[str, GoalRecord]) -> str:
        """Why `next_exercise` found nothing: every goal mastered, or the goals that are not
        and cannot be (no exercise left, or locked behind one: `unreachable-goal`)."""
        left = [g for g in self.goals if not self.mastered(records, g)]
        if not left:
            return "no open exercise left: every goal is mastered"
        return (
            f"no open exercise left, and {len(left)} goal(s) not mastered: {', '.join(left)} "
            "(out of exercises, or locked behind such a goal; `pedrag check` reports them as "
            "unreachable-goal)"
        )


@dataclass(frozen=True)
class Assessment:
    grade: Grade
    events: tuple[str, ...]
    record: GoalRecord | None  # the goal's record after this answer (None: no graded answer)
    wrong_answers: tuple[str, ...]
    exam: ExamStep | None = None  # an exam's turn: its record and its templated reply


def assess(
    message: str,
    *,
    key: Any | None,
    tests: Sequence[tuple[str, str]],
    exam: bool,
    intent: Any,
    solved: bool,
    wrong_answers: Sequence[str],
    record: GoalRecord,
    tracing: Tracing,
    rules: GradingRules | None = None,
    exam_record: ExamRecord | None = None,
    submissions: int = 1,
    exercise: str | None = None,
    asked: Sequence[str] = (),
) -> Assessment:
    """Grade one message and derive the turn's events and the goal's new record. On an exam
    (`pedrag.runtime.learning.exam`), only the last of its ``submissions`` is scored: earlier
    ones are recorded with no verdict, so nothing can tell the learner whether they were
    right. ``exercise`` (its id) is credited to the goal's mastery once (:func:`_scored`).
    ``asked``: what the last hint shown asked the learner to work out (`material.asked_steps`,
    trusted state); an exam shows no hints, so it is not passed there."""
    if exam:
        return _assess_exam(
            message,
            key=key,
            tests=tests,
            intent=intent,
            wrong_answers=wrong_answers,
            record=record,
            tracing=tracing,
            rules=rules,
            exam_record=exam_record or ExamRecord(),
            submissions=submissions,
            exercise=exercise,
        )
    if key is None or solved:
        return Assessment(Grade("none"), (), None, tuple(wrong_answers))
    result = grade(
        message,
        key,
        tests=tests,
        intent=intent if isinstance(intent, str) else None,
        rules=rules,
        asked=asked,
    )
    return _scored(message, result, wrong_answers, record, tracing, exercise)


def _assess_exam(
    message: str,
    *,
    key: Any | None,
    tests: Sequence[tuple[str, str]],
    intent: Any,
    wrong_answers: Sequence[str],
    record: GoalRecord,
    tracing: Tracing,
    rules: GradingRules | None,
    exam_record: ExamRecord,
    submissions: int,
    exercise: str | None,
) -> Assessment:
    if exam_record.over or key is None:
        step = exam_step(exam_record, "none", submissions)
        return Assessment(Grade("none", reason="the exam is over"), (), None, (), step)
    if asks_to_end(message) or exam_record.ending:
        # The learner (or an instructor, between turns) ended the exam before the submissions
        # ran out: the latest one is the score (kept unsaid until now), and the reply is the
        # one result line.
        step = end_exam(exam_record)
        if not exam_record.used:
            ended = Grade("none", reason="the exam was ended with no submission")
            return Assessment(ended, (), None, tuple(wrong_answers), step)
        latest = Grade(
            "correct" if exam_record.last == "correct" else "wrong",
            reason="the latest submission, scored when the exam was ended",
        )
        scored = _scored(message, latest, wrong_answers, record, tracing, exercise)
        return replace(scored, exam=step)
    if intent in ADVERSARIAL_INTENTS:
        # seed 2, G4: an exam is never passed through an injection or a demand; not graded.
        step = exam_step(exam_record, "none", submissions)
        return Assessment(
            Grade("none", facts=("not graded: not an answer",), reason="not an answer"),
            (),
            None,
            tuple(wrong_answers),
            step,
        )
    result = grade(
        message, key, tests=tests, intent=intent if isinstance(intent, str) else None, rules=rules
    )
    step = exam_step(exam_record, result.verdict, submissions)
    if not step.submitted:
        return Assessment(result, (), None, tuple(wrong_answers), step)
    if not step.final:
        recorded = Grade(
            "none",
            result.candidate,
            reason=f"exam submission {step.record.used} of {submissions} recorded, scored at "
            "the end",
        )
        return Assessment(recorded, ("exam_submission",), None, tuple(wrong_answers), step)
    return replace(_scored(message, result, wrong_answers, record, tracing, exercise), exam=step)


def _scored(
    message: str,
    result: Grade,
    wrong_answers: Sequence[str],
    record: GoalRecord,
    tracing: Tracing,
    exercise: str | None = None,
) -> Assessment:
    """The events and goal record of a graded message. A correct answer to an exercise the
    goal's record has solved already (in an earlier session: a session's own exercise is graded
    once) is confirmed but gives no new evidence: the same answer in session after session
    raised mastery from 0.60 to 0.996 and unlocked the next goals on one exercise. A wrong one
    still counts: it is news about the learner."""
    if result.verdict == "error":
        # Fails closed: code that could not run is neither right nor a new wrong answer.
        return Assessment(result, ("answer_graded", "grader_error"), None, tuple(wrong_answers))
    if not result.graded:
        return Assessment(result, (), None, tuple(wrong_answers))
    correct = result.verdict == "correct"
    events = ["answer_graded", "correct_answer" if correct else "wrong_answer"]
    remembered = tuple(wrong_answers)
    identity = result.answer_identity
    if not correct and identity is not None and identity not in remembered:
        events.append("new_wrong_answer")
        if shows_work(message, result):
            events.append("worked_wrong_answer")
        remembered = (*remembered, identity)[-MAX_REMEMBERED_WRONG:]
    if correct and exercise is not None and exercise in record.solved:
        return Assessment(result, tuple(events), record, remembered)
    new = replace(
        record,
        mastery=update(record.mastery, correct, tracing),
        evidence=record.evidence + 1,
    )
    return Assessment(result, tuple(events), new, remembered)
