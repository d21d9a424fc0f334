"""A hedge around an answer ("oxygen, as far as I know") is not a second statement.

The grader read "oxygen, as far as I know" as two statements and left it ungraded (a remark),
while "carbon dioxide, as far as I know" was marked correct: a learner's hedge decided whether
a wrong answer counted. A hedge now leaves the answer to be graded as if said plainly, and
marks it tentative; a hedge alone ("I think so", "not sure") commits to nothing.
"""

from __future__ import annotations

import pytest

from pedrag.runtime.detect.detector import AnswerKey
from pedrag.runtime.learning.grader import grade

GAS = AnswerKey(answer="carbon dioxide", prompt="Which gas do plants take in for photosynthesis?")
PAST = AnswerKey(answer="swam", prompt="What is the past tense of 'swim'?")

HEDGES = [
    "as far as I know",
    "as far as I can tell",
    "if I remember correctly",
    "if I recall rightly",
    "I think",
    "I believe",
    "I suppose",
    "I reckon",
    "I'm not sure",
    "not really sure",
    "not 100% sure",
    "I could be wrong though",
    "correct me if I'm wrong",
    "probably",
    "afaik",
    "iirc",
]
SHAPES = ["{answer}, {hedge}", "{hedge}, {answer}", "{answer} {hedge}", "{answer}, {hedge}."]


@pytest.mark.parametrize("hedge", HEDGES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    ("key", "answer", "verdict"),
    [
        (GAS, "oxygen", "wrong"),
        (GAS, "nitrogen", "wrong"),
        (GAS, "carbon dioxide", "correct"),
        (PAST, "swimmed", "wrong"),
        (PAST, "swam", "correct"),
    ],
)
def test_a_hedged_answer_gets_the_verdict_of_the_bare_answer(
    key: AnswerKey, answer: str, verdict: str, shape: str, hedge: str
) -> None:
    message = shape.format(answer=answer, hedge=hedge)
    bare = grade(answer, key, intent="attempt")
    assert bare.verdict == verdict
    result = grade(message, key, intent="attempt")
    assert (result.verdict, result.candidate) == (verdict, answer), (message, result)
    assert result.tentative, message


@pytest.mark.parametrize(
    "message",
    ["I think so", "not sure", "I'm not sure.", "as far as I know", "probably, I guess"],
)
def test_a_hedge_alone_commits_to_nothing(message: str) -> None:
    result = grade(message, PAST, intent="attempt")
    assert result.verdict == "none" and result.candidate is None, result


@pytest.mark.parametrize(
    "message",
    [
        "not oxygen, I think",  # a negation stays a negation
        "what is oxygen? not sure",  # a question about the term
        "I'm not sure, oxygen or carbon dioxide",  # candidates, hedged
        "oxygen or nitrogen, as far as I know",
    ],
)
def test_a_hedge_does_not_turn_a_non_answer_into_one(message: str) -> None:
    assert grade(message, GAS, intent="attempt").verdict == "none"


MULT = AnswerKey(answer="56", prompt="What is 7 times 8?")


@pytest.mark.parametrize("hedge", ["not sure", "I'm not sure", "as far as I know", "I think"])
@pytest.mark.parametrize(("number", "verdict"), [("56", "correct"), ("54", "wrong")])
def test_a_hedge_after_a_number_leaves_it_graded_and_tentative(
    hedge: str, number: str, verdict: str
) -> None:
    # "56 not sure" read its "not" as denying 56: the answer went ungraded
    for message in (f"{number} {hedge}", f"{number}, {hedge}", f"{hedge}, {number}"):
        result = grade(message, MULT)
        assert (result.verdict, result.candidate, result.tentative) == (verdict, number, True)
