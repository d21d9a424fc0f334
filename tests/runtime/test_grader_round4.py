"""Round 4 of the grader's red team: what a message's spelling may not change, and that a long
message costs bounded work on the turn's hot path.

Before: "chloroplast (not sure)" went ungraded (the hedge's "not" in brackets negated the
answer) and "Sydney (I think)" was a remark while "Canberra (I think)" was confirmed; a
message of repeated operands, separators or brackets ("1 - 1 - 1 ...", " , , ,", "((((") kept
the grader's regular expressions backtracking: 2.7 s of CPU for 80 characters of "1 - ",
minutes for 200, 4.8 s for 2,000 numbers; "(((" was graded wrong as an answer.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pedrag.runtime.detect.detector import AnswerKey
from pedrag.runtime.learning import answer_reader
from pedrag.runtime.learning.grader import grade

_MULT = AnswerKey(answer="56", prompt="What is 7 times 8?", solution="7 x 8 = 28 x 2 = 56")
_ORGANELLE = AnswerKey(answer="chloroplast", prompt="Where does photosynthesis take place?")
_CAPITAL = AnswerKey(answer="Canberra", prompt="What is the capital of Australia?")


@pytest.mark.parametrize(
    ("key", "message", "verdict"),
    [
        (_ORGANELLE, "chloroplast (not sure)", "correct"),
        (_ORGANELLE, "mitochondria (not sure)", "wrong"),
        (_CAPITAL, "Canberra (I think)", "correct"),
        (_CAPITAL, "Sydney (I think)", "wrong"),
        (_CAPITAL, "Sydney [maybe]", "wrong"),
        (_MULT, "55 (not sure)", "wrong"),
        (_MULT, "56 (I think)", "correct"),
    ],
)
def test_a_hedge_in_brackets_leaves_the_answer_graded_and_tentative(
    key: AnswerKey, message: str, verdict: str
) -> None:
    result = grade(message, key)
    assert (result.verdict, result.tentative) == (verdict, True), result.reason


def test_a_bracket_that_is_not_a_hedge_is_not_one() -> None:
    # "(mitochondria)" offers another item, "(in the leaf)" describes: neither is a hedge
    assert grade("chloroplast (mitochondria)", _ORGANELLE).verdict == "none"
    assert grade("chloroplast (in the leaf)", _ORGANELLE).verdict == "correct"


@pytest.mark.parametrize("message", ["(((", "?!", "( )", "..."])
def test_punctuation_alone_is_no_text_answer(message: str) -> None:
    assert grade(message, _ORGANELLE).verdict == "none"


def test_a_sign_after_an_operand_is_an_operator() -> None:
    assert answer_reader.candidate_values("56 - 57") == (56, 57)
    assert answer_reader.candidate_values("56, -57") == (56, -57)
    assert answer_reader.candidate_values("it's +55") == (55,)
    assert answer_reader.candidate_values("56½") == (answer_reader.Fraction(113, 2),)
    assert answer_reader.candidate_values("5⁶") == (5, 6)  # the base and its exponent


# Pieces a long message repeats: operands and signs, separators, brackets, superscripts,
# reason words, hedges. Each made some pattern rescan the text after it from every position.
_PIECES = [
    "1 - ",
    "-1 ",
    "1 ",
    " ,",
    "(",
    "⁻",
    "as 1 ",
    "as it ",
    "because ",
    "(not sure) ",
    "7 x 8 = ",
    "1 1/2 ",
    "½",
    "not ",
    "chloroplast ",
    "= ",
    "[1 ",
    "   ",
]


@settings(max_examples=25, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(_PIECES), min_size=1, max_size=3),
    size=st.integers(min_value=2_000, max_value=10_000),
)
def test_a_long_message_of_repeated_pieces_is_graded(pieces: list[str], size: int) -> None:
    # Before, such messages of a few hundred characters kept the grader busy for minutes (an
    # exponential backtrack): this property did not finish on the old reader.
    unit = "".join(pieces)
    message = (unit * (size // len(unit) + 1))[:size]
    for key in (_MULT, _ORGANELLE):
        assert grade(message, key).verdict in {"correct", "wrong", "none"}
    assert all(holds in (True, False) for _, holds in answer_reader.working_steps(message))
