"""A text answer given with its reason: graded as the answer, the reason set aside.

A wrong answer with a reason ("oxygen because plants breathe it") was left ungraded (a
remark, too long) while the right one with a reason was graded right; a reason with no answer
before it ("because plants", a bare "because") was graded wrong as if it were an answer.
"""

from __future__ import annotations

import pytest

from pedrag.runtime.detect.detector import AnswerKey
from pedrag.runtime.learning.grader import grade

GAS = AnswerKey(answer="carbon dioxide", prompt="Which gas do plants take in for photosynthesis?")
CONJUNCTION = AnswerKey(answer="because", prompt="Join the clauses: 'I stayed home ___ I was ill.'")


@pytest.mark.parametrize(
    ("message", "verdict", "candidate"),
    [
        ("oxygen because plants breathe it", "wrong", "oxygen"),
        ("it's oxygen since leaves take it in", "wrong", "oxygen"),
        ("nitrogen, because air is mostly nitrogen", "wrong", "nitrogen"),
        ("I guess oxygen because", "wrong", "oxygen"),
        ("carbon dioxide because plants need it", "correct", "carbon dioxide"),
    ],
)
def test_an_answer_with_its_reason_is_graded_as_the_answer(
    message: str, verdict: str, candidate: str
) -> None:
    result = grade(message, GAS, intent="attempt")
    assert (result.verdict, result.candidate) == (verdict, candidate)


@pytest.mark.parametrize(
    "message",
    [
        "because",  # a reason with no answer
        "I think because plants",
        "no idea because we never did this",
        "not sure since it is confusing",
        "this is hard because I never learned it",
        "I give up because it's too hard",
        "what is it because I forgot?",
    ],
)
def test_a_reason_without_one_answer_is_not_graded(message: str) -> None:
    assert grade(message, GAS, intent="attempt").verdict == "none"


def test_an_exercise_whose_answer_is_a_connective_is_graded_as_written() -> None:
    assert grade("because", CONJUNCTION, intent="attempt").verdict == "correct"
    assert grade("since", CONJUNCTION, intent="attempt").verdict == "wrong"
