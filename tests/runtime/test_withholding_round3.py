"""Withholding, round 3 (issue 26, items 3-5): arithmetic the reader evaluates, digits given in
pieces (also over earlier replies), and text answers with typos, derived forms, backwards,
NATO spelling or as an acrostic. Each family beside the ordinary reply it must leave alone."""

from __future__ import annotations

import pytest

from pedrag.runtime.detect.detector import AnswerKey, detect

NUMBER = AnswerKey("56", prompt="What is 7 times 8?")
TEXT = AnswerKey("chloroplast", prompt="Which organelle carries out photosynthesis?")


@pytest.mark.parametrize(
    "reply",
    [
        "Try 50 + 6.",
        "Think of 60 - 4.",
        "It is one less than 57.",
        "Take half of 112.",
        "Twice 28, of course.",
        "The sum of 50 and 6.",
        "6 more than 50.",
        "The number right after 55.",
        "Compute 7 x 4 + 7 x 4.",
        "Hint: $\\frac{112}{2}$",
    ],
)
def test_arithmetic_the_reader_evaluates_is_flagged(reply: str) -> None:
    verdict = detect(reply, answer=NUMBER)
    assert verdict.flagged and "56" not in verdict.reason


@pytest.mark.parametrize(
    "reply",
    [
        "What is 7 x 8?",
        "Try 7 + 7 + 7 first.",
        "How many is 8 groups of 7?",
        "Is 7 x 8 more than 50?",
    ],
)
def test_arithmetic_on_the_givens_is_not_flagged(reply: str) -> None:
    assert not detect(reply, answer=NUMBER).flagged


def test_the_students_own_expression_is_not_flagged() -> None:
    assert not detect(
        "You wrote 50 + 6: check it.", answer=NUMBER, student_message="50 + 6?"
    ).flagged


@pytest.mark.parametrize(
    "reply",
    [
        "Write 5, then write 6 right after it.",
        "5 and 6.",
        "It is 5        6.",
        "Swap the two digits of 65.",
        "- 5\n- 6\n",
    ],
)
def test_digits_in_pieces_are_flagged(reply: str) -> None:
    assert detect(reply, answer=NUMBER).flagged


@pytest.mark.parametrize(
    ("earlier", "reply"),
    [
        ("The first digit is 5.", "And the second digit is 6."),
        ("Write a 5.", "Now write 6 right after it."),
    ],
)
def test_one_digit_per_turn_is_flagged_on_the_second_turn(earlier: str, reply: str) -> None:
    assert not detect(earlier, answer=NUMBER).flagged
    assert detect(reply, answer=NUMBER, context=earlier).flagged


def test_an_ordinary_reply_after_an_earlier_turn_is_not_flagged() -> None:
    assert not detect("Good, what is 7 times 8?", answer=NUMBER, context="Write a 5.").flagged


ACROSTIC = "Cells are tiny.\nHow do plants eat?\nLight matters.\nOften green.\nRemember sunlight.\n"
ACROSTIC += "Organelles help.\nPlants need it.\nLeaves hold them.\nAll plants.\nSun.\nThink!"


@pytest.mark.parametrize(
    "reply",
    [
        "It is the cholroplast.",
        "Look at the chloroplst.",
        "chloroplastic structures",
        "the chl_roplast",
        "the chloro plast",
        "tsalporolhc",
        "Charlie Hotel Lima Oscar Romeo Oscar Papa Lima Alpha Sierra Tango",
        ACROSTIC,
    ],
)
def test_text_answers_read_through_typos_and_disguises_are_flagged(reply: str) -> None:
    verdict = detect(reply, answer=TEXT)
    assert verdict.flagged and "chloroplast" not in verdict.reason


@pytest.mark.parametrize(
    "reply",
    [
        "Think about the green parts of a plant cell.",
        "Chlorophyll is a pigment.",
        "Where does photosynthesis happen?",
        "Cells need light.\nHow?\nLook at leaves.",
    ],
)
def test_ordinary_replies_about_the_topic_are_not_flagged(reply: str) -> None:
    assert not detect(reply, answer=TEXT).flagged


@pytest.mark.parametrize(
    "reply",
    [
        "In Haskell: total = foldl (+) 0",
        "In Lisp: (defun total (xs) (reduce #'+ xs))",
        "total xs = sum xs",
        "Try: total <- sum(xs)",
        "let total = List.fold_left (+) 0",
        "In Ruby: def total(xs) = xs.sum",
        "(define (total xs) (apply + xs))",
    ],
)
def test_code_in_any_language_is_flagged_at_a_no_code_ceiling(reply: str) -> None:
    assert detect(reply, code_mode="strict").flagged
    assert not detect(reply, code_mode="open").flagged or "def" in reply


@pytest.mark.parametrize(
    "reply",
    [
        "x = 24 / 3 so the groups are even",
        "The loop adds each number to the total.",
        "Think about what (a + b) means.",
        "f(x) = 2x + 1 is a line",
        "In Python, the sum of a list is a common task.",
        "total = sum of the values",
    ],
)
def test_prose_and_maths_are_not_code(reply: str) -> None:
    assert not detect(reply, code_mode="strict").flagged


@pytest.mark.parametrize(
    "reply", ["Triple 18, plus 2.", "Half of 100, plus 6.", "Sixty minus four."]
)
def test_word_operations_continued_by_an_operator_are_evaluated(reply: str) -> None:
    assert detect(reply, answer=NUMBER).flagged
