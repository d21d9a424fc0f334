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
