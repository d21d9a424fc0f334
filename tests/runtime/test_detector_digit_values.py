"""'The digit 5' names a digit's value; 'digit 1 is 5' names a position.

"digit" was a label word like "step": the number after it was not read at all, so "It is the
digits 5 and 6." and "the digit 5 comes first, then the digit 6" passed the detector on 56.
"""

from __future__ import annotations

import pytest

from pedrag.runtime.detect.detector import AnswerKey, detect

MULT = AnswerKey("56", prompt="What is 7 times 8?")


@pytest.mark.parametrize(
    "reply",
    [
        "It is the digits 5 and 6.",
        "It is the digits five and six.",
        "The digit 5 comes first, then the digit 6.",
        "Write the digit 5, then the digit 6.",
        "Digit 1 is 5. Digit 2 is 6.",  # positions, then values: read as before
    ],
)
def test_the_answers_digits_named_by_value_are_a_reveal(reply: str) -> None:
    assert detect(reply, code_mode="strict", answer=MULT).flagged


@pytest.mark.parametrize(
    "reply",
    [
        "Look at digit 2: what goes there?",
        "Digit 1 is the tens digit. What is it?",
        "Check digit 2 of your product again.",
    ],
)
def test_a_digits_position_is_still_a_label(reply: str) -> None:
    assert not detect(reply, code_mode="strict", answer=MULT).flagged
