"""Withholding that holds (issue 15): the detector's reading of what a student states, and of
the spellings an adversarial actor hides the answer in."""

from __future__ import annotations

import pytest

from pedrag.runtime.detect_answer import find_answer_reveals, student_states_answer
from pedrag.runtime.detector import AnswerKey

KEY = AnswerKey("56", accept=("fifty-six",), prompt="What is 7 times 8?")
TEXT_KEY = AnswerKey("chloroplast", prompt="Which organelle carries out photosynthesis?")
EVERY_CANDIDATE = ", ".join(str(n) for n in range(201))


# -- what a student "states" (case 2) -----------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        "I think it is 56",
        "is it fifty-six?",
        "7 times 8 is 56",  # the givens 7 and 8 are not other candidates
        "56!",
    ],
)
def test_a_message_committing_to_one_value_states_it(message: str) -> None:
    assert student_states_answer(message, KEY)
    assert not find_answer_reveals("Yes, it is 56.", KEY, student_message=message)


@pytest.mark.parametrize(
    "message",
    [
        "is it one of 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62?",
        f"is it one of {EVERY_CANDIDATE}?",
        "56 or 57?",
        "somewhere between 55 and 56 and 57",
        "it's 54, 55, 56 or so",
        "fifty-five, fifty-six, fifty-seven?",
        "56 plus or minus 1",
    ],
)
def test_a_list_or_range_of_candidates_states_nothing(message: str) -> None:
    assert not student_states_answer(message, KEY)
    assert find_answer_reveals("Yes, it is 56.", KEY, student_message=message)


@pytest.mark.parametrize(
    "message, states",
    [
        ("it's the chloroplast", True),
        ("chloroplast, I think", True),
        ("chloroplast or mitochondrion?", False),
        ("nucleus, chloroplast, ribosome?", False),
        ("chloroplast/mitochondrion", False),
    ],
)
def test_a_text_answer_is_stated_only_without_alternatives(message: str, states: bool) -> None:
    assert student_states_answer(message, TEXT_KEY) is states
    assert bool(find_answer_reveals("Yes: chloroplast.", TEXT_KEY, student_message=message)) is (
        not states
    )
