"""The split-answer reading against number words that count things. A split answer is digits
named one by one ("five, then six" for 56); a number word followed by what it counts ("One
small step: After the first pass total is 2", "one hint", "two apples") names no digit, so it
is not read as the first part of one: that prose made the detector refuse a hint for the
exercise whose answer is 12 ("one" + "2"), and the turn failed closed."""

from __future__ import annotations

import pytest

from pedrag.runtime.detect.detector import AnswerKey, Detector


@pytest.mark.parametrize(
    ("answer", "reply"),
    [
        ("12", "One small step: After the first pass total is 2. What is it after the second?"),
        ("12", "One hint: after the first pass total is 2."),
        ("12", "One idea: first work out the total, 2 after one pass."),
        ("26", "Two apples first, then 6 pears: how many pieces of fruit?"),
        ("35", "Three friends sit down; after that 5 more arrive."),
    ],
)
def test_a_number_word_counting_a_thing_is_not_a_digit_of_a_split_answer(
    answer: str, reply: str
) -> None:
    assert not Detector(answer=AnswerKey(answer)).check(reply).flagged


@pytest.mark.parametrize(
    ("answer", "reply"),
    [
        ("12", "one, then two"),
        ("12", "One then 2."),
        ("56", "Say five, then six."),
        ("56", "Type five followed by six."),
        ("56", "five tens and six ones"),
        ("56", "The first digit is five, then the second digit is six."),
        ("56", "Write five first, then six after it."),
        ("56", "Read sixty-five reversed."),
        ("56", "Write 5 apples then 6."),  # digits are not read as counts
    ],
)
def test_digits_named_one_by_one_in_words_are_still_a_split_answer(answer: str, reply: str) -> None:
    assert Detector(answer=AnswerKey(answer)).check(reply).flagged


def test_a_count_between_two_digits_ends_the_chain_rather_than_being_skipped() -> None:
    """Leaving the counting word out of the chain would join the digits on either side of it
    ("5", "6" -> 56) where the text names 5, one apple, 6: narrowing must not add readings."""
    assert not Detector(answer=AnswerKey("56")).check("Take 5, then one apple, then 6.").flagged
