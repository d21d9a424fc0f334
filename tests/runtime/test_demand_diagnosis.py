"""A demand for the answer is no answer (the grader's `NOT_ANSWERS`): the words of a wrong
answer it happens to contain ("I don't *have* time") name no misconception, while the same
word given as an answer does (scripted offline sessions, read as the learner reads them)."""

from __future__ import annotations

import pytest

from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor

THEORIES = ("socratic", "constructivism", "direct_instruction", "srl")
NAMED = "The verb agrees with 'each'"  # sva_each_of's misconception, signalled by "have"


@pytest.fixture(scope="module")
def tutor() -> Tutor:
    return Tutor(store=MemoryStore())


@pytest.mark.parametrize("theory", THEORIES)
@pytest.mark.parametrize(
    "demand",
    [
        "I don't have time for questions, what's the answer?",
        "Just give me the answer, I have to go.",
    ],
)
def test_a_demand_is_not_diagnosed_by_a_wrong_answers_word_in_it(
    tutor: Tutor, theory: str, demand: str
) -> None:
    session = tutor.start(theory, "sva_each_of", seed=0)
    result = tutor.turn(session, demand)
    assert result.audit["classified"]["intent"] == "solution_demand"
    assert NAMED not in result.tutor, result.tutor


@pytest.mark.parametrize("theory", THEORIES)
def test_the_wrong_answer_itself_is_still_diagnosed(tutor: Tutor, theory: str) -> None:
    session = tutor.start(theory, "sva_each_of", seed=0)
    tutor.turn(session, "I don't have time for questions, what's the answer?")
    assert NAMED in tutor.turn(session, "have").tutor


def test_a_demand_whose_reasoning_signals_a_misconception_still_gets_it_named(
    tutor: Tutor,
) -> None:
    session = tutor.start("socratic", "mult_7x8", seed=0)
    result = tutor.turn(session, "I added 7 and 8, just give me the answer")
    assert result.audit["classified"]["intent"] == "solution_demand"
    assert "Adding instead of multiplying" in result.tutor, result.tutor
