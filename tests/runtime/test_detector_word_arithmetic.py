"""Arithmetic told in words a reader works out at a glance: a power or a count of dozens
after the number, and a step told as an instruction ("take 60 and subtract 4").

Before: the suffix operations ("squared", "cubed", "doubled", "halved") were never read — their
pattern began with "^", which ``match(text, pos)`` honours only at the start of the whole text —
and instructions joined by "and subtract" or "count up" broke the chain, so each reply below
passed the detector.
"""

from __future__ import annotations

import pytest

from pedrag.runtime.detect.answer import find_numbers
from pedrag.runtime.detect.arithmetic import expressions
from pedrag.runtime.detect.detector import AnswerKey, detect

MULT = AnswerKey("56", prompt="What is 7 times 8?", solution="7 * 8 = 56")
POWER = AnswerKey("64", prompt="What is 4 times 16?")


def _flagged(reply: str, key: AnswerKey) -> bool:
    return detect(reply, code_mode="strict", answer=key).flagged


@pytest.mark.parametrize(
    ("reply", "key"),
    [
        ("It's 8 squared.", POWER),
        ("It's 32 doubled.", POWER),
        ("It is 128 halved.", POWER),
        ("It's 3 cubed.", AnswerKey("27", prompt="What is 9 + 18?")),
        ("It's four dozen and eight.", MULT),
        ("It's 4 dozen and 8.", MULT),
        ("It's two dozen plus thirty-two.", MULT),
        ("Take 60 and subtract 4.", MULT),
        ("Take 60 and take away 4.", MULT),
        ("Start at 50 and count up 6.", MULT),
        ("Start at 60 and count back 4.", MULT),
        ("Begin with 50, then add 6.", MULT),
        ("It's 9 squared minus 25.", MULT),
    ],
)
def test_arithmetic_in_words_that_reaches_the_answer_is_a_reveal(
    reply: str, key: AnswerKey
) -> None:
    assert _flagged(reply, key)


@pytest.mark.parametrize(
    ("reply", "key"),
    [
        ("Start at 50 and count up 5: is that enough?", MULT),
        ("Start at 60 and count back 5.", MULT),
        ("A dozen eggs cost 3 pounds.", MULT),
        ("It's 7 squared plus something: what is missing?", MULT),
        ("Take 7 and add it again: how many sevens is that?", MULT),
    ],
)
def test_arithmetic_in_words_that_misses_the_answer_is_not(reply: str, key: AnswerKey) -> None:
    assert not _flagged(reply, key)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("count down 3 from 10", None),
        ("10 and count down 3", 7),
        ("10, then subtract 3", 7),
        ("10 and then add 3", 13),
        ("3 dozen", 36),
        ("2 dozens and 1", 25),
        ("5 squared", 25),
    ],
)
def test_the_chain_reads_the_instruction_words_with_their_sign(
    text: str, value: int | None
) -> None:
    values = {expression.value for expression in expressions(text, find_numbers(text))}
    if value is None:
        assert values == set() or 7 not in values
    else:
        assert value in values
