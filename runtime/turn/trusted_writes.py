"""The turn's trusted writes: the system's own facts about this message, before the contract.

Runtime, the stage after reading the message. Takes the turn context (its classified intent,
the session's exercise and curriculum records); gives, in the context, the grader's
:class:`~pedrag.runtime.learning.loop.Assessment` of the message (every message, not only those
classified as attempts), whether it solved the exercise and the exercise offered next, and the
goal in scope; writes attempts, grading, conduct and mastery to trusted metrics through their
declared writers (``pedrag.runtime.turn.trusted_writer``).

Why here: correctness is the grader's fact, never the model's claim (seed 2, §3.5), and the
contract must see this turn's facts (a hostile turn, a first wrong attempt) when it is computed.
"""

from __future__ import annotations

from dataclasses import replace

from pedrag.kernel.ceiling import most_permissive
from pedrag.kernel.sources import ADVERSARIAL_INTENTS, ATTEMPT_INTENT, INTENT_METRIC
from pedrag.runtime.learning.exam import EXAM, ExamRecord
from pedrag.runtime.learning.loop import WRONG_ANSWERS, GoalRecord, assess
from pedrag.runtime.learning.mastery import Tracing
from pedrag.runtime.learning.material import SAID, asked_steps
from pedrag.runtime.policy.policy_core import PolicyInput, compute_contract
from pedrag.runtime.turn.context import (
    GOAL_RECORDS,
    TurnContext,
    goal_records,
    mastery_metrics,
)
from pedrag.runtime.turn.state import SetMetrics
from pedrag.runtime.turn.trusted_writer import trusted_updates

_DEFAULT_TRACING = Tracing()


def write_trusted(context: TurnContext) -> None:
    """Sets ``assessment``, ``solved_now``, ``following`` and ``goal_in_scope``."""
    _grade(context)
    _read_graded_answer_as_attempt(context)
    _choose_goal_in_scope(context)
    host, info = context.host, context.exercise
    context.solved_now = context.assessment.grade.verdict == "correct"
    context.following = None
    if context.solved_now and info is not None and not info.exam:
        found = host.curriculum_map().next_exercise(goal_records(context.state), info)
        context.following = host.exercise_info(found.id) if found is not None else None


def _grade(context: TurnContext) -> None:
    """The grader's verdict on this message and a hostile turn, written to trusted metrics."""
    state, writer, host = context.state, context.writer, context.host
    metrics = state.metrics
    info = context.exercise
    record: GoalRecord | None = None
    tracing = _DEFAULT_TRACING
    if info is not None and host.curriculum is not None:
        record = host.curriculum_map().record(goal_records(state), info.goal)
        tracing = host.curriculum_map().tracing(info.goal)
    assessment = assess(
        context.text,
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
        exercise=info.id if info is not None else None,
        asked=asked_steps(state.extra.get(SAID, {})),  # the hint's step: trusted, not text
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
    updates, extra = trusted_updates(writer.schema, metrics, events, extra, mastery)
    if updates:
        state = writer.apply(state, SetMetrics("trusted", updates))
    if assessment.grade.verdict == "correct":
        state = writer.mark_solved(state)
    context.state = state.but(extra=extra)
    context.assessment = assessment


def read_as_attempt(intent: object, graded: bool, labels: tuple[str, ...]) -> bool:
    """Whether a message the pre-classifier labelled ``intent`` counts as an attempt because
    the grader ``graded`` it (`Grade.graded`): graded right or wrong, it was an answer to the exercise
    ("Each of the players has a number.", "I think it is carbon dioxide and water"), so the
    theories' attempt rules must see what the grader saw. Only the grader's verdict opens it, so
    no phrasing inflates attempts beyond what the grader itself grades (a question with the
    answer in it, "not 56", a list of candidates are left ungraded); an adversarial label is
    kept, since it is what the policy core's risks read and an answer inside an injection is
    still an injection."""
    return (
        graded
        and ATTEMPT_INTENT in labels
        and intent != ATTEMPT_INTENT
        and intent not in ADVERSARIAL_INTENTS
    )


def _read_graded_answer_as_attempt(context: TurnContext) -> None:
    """Writes ``intent = attempt`` for a graded answer the classifier labelled otherwise
    (:func:`read_as_attempt`); the classifier's own label stays in ``context.classification``
    (the audit's ``grade.classifier_intent``)."""
    field = context.schema.fields.get(INTENT_METRIC)
    if field is None or field.source != "classified":
        return
    intent = context.state.metrics.get(INTENT_METRIC)
    if read_as_attempt(intent, context.assessment.grade.graded, tuple(field.values)):
        context.state = context.writer.apply(
            context.state, SetMetrics("classified", {INTENT_METRIC: ATTEMPT_INTENT})
        )


def _choose_goal_in_scope(context: TurnContext) -> None:
    """With several goals in scope (the exercise's goal and those it `practises`), the
    mastery metric is the goal's whose band gives the most permissive ceiling (seed 2,
    §3.2; the kernel's `most_permissive`), so the rules, the contract and the compiler's
    proofs all see one consistent state: the learner is met at their weakest goal."""
    info, schema, state = context.exercise, context.schema, context.state
    if info is None:
        context.goal_in_scope = None
        return
    names = mastery_metrics(schema)
    if not info.practises or not names or context.host.curriculum is None:
        context.goal_in_scope = info.goal
        return
    goals = (info.goal, *info.practises)
    records = goal_records(state)
    curriculum = context.host.curriculum_map()
    masteries = [curriculum.record(records, goal).mastery for goal in goals]
    trusted = {n: state.metrics[n] for n in schema.names("trusted")}
    classified = {n: state.metrics[n] for n in schema.names("classified")}
    ceilings = [
        compute_contract(
            PolicyInput.of({**trusted, **dict.fromkeys(names, mastery)}, classified),
            context.policy,
        ).ceiling
        for mastery in masteries
    ]
    chosen = most_permissive(ceilings)
    context.state = context.writer.apply(
        state, SetMetrics("trusted", dict.fromkeys(names, masteries[chosen]))
    )
    context.goal_in_scope = goals[chosen]
