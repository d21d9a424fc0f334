"""The worked example as the learner meets it in a scripted offline session: shown once when
the tutor offers it, and again whenever the learner asks for an example.

A learner who was shown the worked example and says they are still confused, or asks for
another hint, read the same paragraph again two or three turns later; one who asked "can you
show me an example?" after it was shown got "think of a similar problem you can already
solve", a request answered with a request.
"""

from __future__ import annotations

import pytest

from pedrag.runtime.learning.material import Material
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor

# numbers, text and code exercises
EXERCISES = ("mult_7x8", "add_38_47", "photo_gas_in", "sum_list_loop")
STUCK = (
    "I don't know",
    "I'm stuck",
    "I tried but I'm confused",
    "I tried but I'm confused",
    "Another hint",
    "I tried but I'm confused",
    "Another hint",
    "still stuck",
)
ASKS = ("Can you show me an example?", "hi", "Can you show me an example?", "show me an example")


@pytest.fixture(scope="module")
def tutor() -> Tutor:
    return Tutor(store=MemoryStore())


def _example(tutor: Tutor, exercise_id: str) -> str:
    exercise = next(e for e in tutor.curriculum.exercises if e.id == exercise_id)
    return Material.from_exercise(exercise).example


@pytest.mark.parametrize("theory", ["socratic", "direct_instruction"])
@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_a_worked_example_the_tutor_offered_is_not_shown_again_word_for_word(
    tutor: Tutor, theory: str, exercise_id: str
) -> None:
    example = _example(tutor, exercise_id)
    session = tutor.start(theory, exercise_id, seed=0)
    replies = [tutor.turn(session, message).tutor for message in STUCK]
    showing = [reply for reply in replies if example in reply]
    assert len(showing) == 1, (replies, showing)  # shown once, when first offered


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_a_request_for_an_example_is_answered_with_the_example_each_time(
    tutor: Tutor, exercise_id: str
) -> None:
    example = _example(tutor, exercise_id)
    session = tutor.start("socratic", exercise_id, seed=0)
    replies = {message: tutor.turn(session, message).tutor for message in ASKS}
    for message, reply in replies.items():
        if message != "hi":
            assert example in reply, (message, reply)
