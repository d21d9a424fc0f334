"""The worked example as the learner meets it in a scripted offline session: shown whenever
the learner asks for an example.

A learner who asked "can you show me an example?" after it was shown got "think of a similar
problem you can already solve", a request answered with a request.
"""

from __future__ import annotations

import pytest

from pedrag.runtime.learning.material import Material
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor

# numbers, text and code exercises
EXERCISES = ("mult_7x8", "add_38_47", "photo_gas_in", "sum_list_loop")
ASKS = ("Can you show me an example?", "hi", "Can you show me an example?", "show me an example")


@pytest.fixture(scope="module")
def tutor() -> Tutor:
    return Tutor(store=MemoryStore())


def _example(tutor: Tutor, exercise_id: str) -> str:
    exercise = next(e for e in tutor.curriculum.exercises if e.id == exercise_id)
    return Material.from_exercise(exercise).example


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
