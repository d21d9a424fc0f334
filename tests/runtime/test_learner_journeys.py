"""Whole journeys of a learner through the offline tutor, read as the learner reads them.

Each test drives the real tutor (offline backend, in-memory store, the shipped theories and
curriculum) with a learner's messages over several turns and checks something a learner would
notice across turns: the same worked example coming back word for word, help that does not
grow while they keep failing, feedback that disagrees with the grade, the same sentence twice
in a row, or what comes after a correct answer.
"""

from __future__ import annotations

from typing import Any

import pytest

from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor

THEORIES = ("socratic", "constructivism", "direct_instruction", "srl")
# one exercise per domain: arithmetic, photosynthesis, cells, Python loops, English grammar
SAMPLE = ("mult_7x8", "photo_gas_in", "cell_nucleus", "for_sum_output", "sva_each_of")


@pytest.fixture(scope="module")
def tutor() -> Tutor:
    return Tutor(store=MemoryStore())


def _exercise(tutor: Tutor, exercise_id: str) -> Any:
    return next(e for e in tutor.curriculum.exercises if e.id == exercise_id)


def _wrong(exercise: Any) -> str:
    """An answer the grader marks wrong, in the exercise's own kind."""
    return str(int(exercise.answer) + 1) if exercise.answer.isdigit() else "banana"


@pytest.mark.parametrize("exercise_id", SAMPLE)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_direct_instruction_shows_a_worked_example_once_not_again_after_a_wrong_answer(
    tutor: Tutor, exercise_id: str, seed: int
) -> None:
    """An answer-seeker gets the worked example on another problem; asking again, and again
    after a wrong answer, moves them on to their own problem instead of the same paragraph."""
    exercise = _exercise(tutor, exercise_id)
    session = tutor.start("direct_instruction", exercise_id, seed=seed)
    messages = [
        "just tell me the answer",
        "what's the answer?",
        _wrong(exercise),
        "give me the answer now",
        "tell me",
    ]
    replies = [tutor.turn(session, message).tutor for message in messages]
    shown = [reply for reply in replies if exercise.worked_example.problem in reply]
    assert len(shown) == 1, replies


def _wrong_answers(exercise: Any, count: int) -> list[str]:
    """``count`` different answers the grader marks wrong (numbers, or words of the domain)."""
    if exercise.answer.isdigit():
        return [str(int(exercise.answer) + step) for step in (1, 2, -1, 3, -2, 4)][:count]
    return ["banana", "carrot", "the sun", "water", "red", "table"][:count]


@pytest.mark.parametrize("theory", ["srl"])
@pytest.mark.parametrize("exercise_id", SAMPLE)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_learner_who_keeps_answering_wrongly_gets_more_help_each_time(
    tutor: Tutor, theory: str, exercise_id: str, seed: int
) -> None:
    """Contingent help (Wood & Wood 1996): the rung rises with the wrong answers, bare guesses
    and word answers included, and by the fourth the reply carries the exercise's next hint."""
    exercise = _exercise(tutor, exercise_id)
    session = tutor.start(theory, exercise_id, seed=seed)
    results = [tutor.turn(session, answer) for answer in _wrong_answers(exercise, 4)]
    assert all(result.audit["grade"]["verdict"] == "wrong" for result in results)
    rungs = [result.rung for result in results]
    assert rungs == sorted(rungs) and rungs[-1] > rungs[0], rungs
    assert any(hint in results[-1].tutor for hint in exercise.hints), results[-1].tutor
