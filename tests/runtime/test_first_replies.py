"""What the tutor says first and which step it points to (scripted offline sessions, read as
the learner reads them).

A first reply cannot rephrase an earlier reply (there is none), and a hint never asks for a
step the learner's own working, or code, has done already.
"""

from __future__ import annotations

import re

import pytest

from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor

THEORIES = ("socratic", "constructivism", "direct_instruction", "srl")
SAMPLE = ("mult_7x8", "add_46_29", "photo_gas_in", "for_sum_output", "sva_each_of")
# what a reply says when it presents itself as saying an earlier reply again
REPHRASING = re.compile(r"another way|in other words|said differently", re.I)


@pytest.fixture(scope="module")
def tutor() -> Tutor:
    return Tutor(store=MemoryStore())


@pytest.mark.parametrize("theory", THEORIES)
@pytest.mark.parametrize("exercise_id", SAMPLE)
@pytest.mark.parametrize("message", ["I don't understand the question.", "Can you help me?"])
def test_the_first_reply_never_rephrases_a_reply_that_was_never_said(
    tutor: Tutor, theory: str, exercise_id: str, message: str
) -> None:
    session = tutor.start(theory, exercise_id, seed=0)
    result = tutor.turn(session, message)
    assert not REPHRASING.search(result.tutor), result.tutor
    if result.audit["choice"]["action"] == "help_restate":
        exercise = next(e for e in tutor.curriculum.exercises if e.id == exercise_id)
        assert exercise.restatement in result.tutor  # the question is still said plainer


def test_a_later_restatement_may_say_it_puts_the_question_another_way(tutor: Tutor) -> None:
    session = tutor.start("socratic", "mult_7x8", seed=0)
    tutor.turn(session, "hi")
    replies = [tutor.turn(session, "I don't understand the question.").tutor for _ in range(3)]
    assert any(REPHRASING.search(reply) for reply in replies), replies
