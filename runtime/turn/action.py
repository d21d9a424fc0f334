"""Stage 5 over the turn context: the rule engine's action, this turn's teaching material and
the grounding the action asks for.

Takes the turn context after the contract (the prepared history, the contract); gives, in the
context, the rule engine's :class:`~pedrag.runtime.policy.rule_engine.Choice` and the theory's
action, the material the actor may use (diagnosed before probing, issue 27), what the tutor
had said before, the contract once the action is known (a ``grounded`` action grounds the turn)
and, on a grounded turn, the retrieved passages (seed 2, §3.4). An exam turn's templated reply
is set here too: no model writes to the learner while an exam is active.
"""

from __future__ import annotations

import random
from typing import Any

from pedrag.kernel.sources import GROUNDED_TAG, INTENT_METRIC
from pedrag.runtime.course.grounding import Grounding, retrieve
from pedrag.runtime.detect.detector import Detector, code_mode_for_ceiling
from pedrag.runtime.learning.grader import answer_words_signal
from pedrag.runtime.learning.material import SAID, turn_material
from pedrag.runtime.policy.policy_core import ground_for_action
from pedrag.runtime.store.errors import StoreError
from pedrag.runtime.turn.context import TurnContext, TurnHost, explains_now, goal_records
from pedrag.runtime.turn.contract import has_materials
from pedrag.runtime.turn.session import ExerciseInfo
from pedrag.runtime.turn.state import SessionState


def _an_answer(context: TurnContext) -> bool:
    """Whether the message's answer words are the learner's answer, as the grader reads it
    (`answer_words_signal`): a demand for the answer that says "have" was diagnosed as
    answering "have", and "oxygen? no" as answering oxygen."""
    intent = context.state.metrics.get(INTENT_METRIC)
    return answer_words_signal(context.assessment.grade, intent)


def choose_action(context: TurnContext) -> None:
    """Sets ``choice``, ``action``, ``material``, ``said``, ``grounding`` and ``exam_reply``;
    may ground ``contract``."""
    host, state, contract = context.host, context.state, context.contract
    rng = random.Random(f"{context.session.seed}:{state.turn}")
    engine = host.engine(state.theory_id)
    selector = None if host.is_offline else context.backend
    choice = engine.choose(context.prepared, contract, rng, plan=state.plan, selector=selector)
    if choice.failure:
        context.failures.append({"stage": "selector", "error": choice.failure})
    action = context.policy.actions[choice.action]
    said = dict(state.extra.get(SAID, {}))
    info = context.exercise
    context.choice, context.action, context.said = choice, action, said
    context.material = turn_material(
        info.material if info is not None else None,
        said,
        rung=choice.rung,
        explain=explains_now(contract, context.policy_input),
        solved=solved_elsewhere(host, state, info),
        ceiling=contract.ceiling,
        message="" if context.solved_now else context.text,  # diagnosed before probing
        answer=_an_answer(context),
    )
    materials = context.materials
    if not materials and GROUNDED_TAG in action.tags:
        materials = context.materials = has_materials(context)
    context.contract = ground_for_action(contract, frozenset(action.tags), materials=materials)
    context.grounding = _retrieve(context)
    exam = context.assessment.exam
    context.exam_reply = exam.reply if exam is not None else None


def _retrieve(context: TurnContext) -> Grounding | None:
    """Grounded retrieval before generation (seed 2, §3.4): on a concept question the
    learner's own question is the query; when the action asked for grounding, the
    exercise's topic. Passages the detector finds the hidden answer in are never shown."""
    host, contract, text = context.host, context.contract, context.text
    if not contract.grounding_required or host.course_index is None or host.course is None:
        return None
    info = context.exercise
    kind: Any = "question" if context.classification.concept_question else "action"
    query = text if kind == "question" else (info.topic if info else text)
    detector = Detector(
        code_mode=code_mode_for_ceiling(contract.ceiling), answer=info.key if info else None
    )
    try:
        return retrieve(
            host.course_index,
            host.course,
            kind,
            query,
            lambda passage: not detector.check(passage, student_message=text).flagged,
        )
    except StoreError as error:
        context.failures.append({"stage": "retrieval", "error": str(error)})
        return Grounding(host.course, kind)


def solved_elsewhere(host: TurnHost, state: SessionState, info: ExerciseInfo | None) -> str:
    """The prompt of another exercise on this topic that the learner's records say they
    solved ("" when none): the only ground for "you solved a similar problem earlier"."""
    if info is None or host.curriculum is None:
        return ""
    solved = {e for record in goal_records(state).values() for e in record.solved}
    curriculum = host.curriculum_map()
    goals = curriculum.goals
    for exercise in curriculum.exercises:
        goal = goals.get(exercise.goal)
        if (
            exercise.id in solved
            and exercise.id != info.id
            and goal is not None
            and goal.topic.replace("_", " ") == info.topic
        ):
            return str(exercise.prompt)
    return ""
