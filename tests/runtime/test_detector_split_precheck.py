"""The answer given in pieces over several turns: the quick check that skips re-reading the
earlier turns never skips a reply the full reading would flag (issue 30: per-reply work bounded,
not changed). Compared on generated tails and replies, with the full reading as the oracle."""

from __future__ import annotations

import random

from pedrag.runtime.detect.answer import (
    CONTEXT_TAIL,
    _may_continue_a_split,
    _may_hold_a_number,
    _split_across_turns,
    _split_across_turns_read,
    parse_number,
)
from pedrag.runtime.detect.canonical import canonical_text

PIECES = [
    "5", "6", "56", "65", "1", "2", "12", "100", "5,600", "0.5", "3/", "4", "%", "-",
    "five", "six", "fifty", "Fifty", "FIVE", "fiftysix", "sixty", "five's", "it'sFIVE", "a",
    "half", "quarters", "hundred", "hundred's", "thousand", "point", "and", "percent", "per",
    "cent", "cinquante", "sechs", "und", "fünfzig", "sechsundfünfzig", "cinquenta", "e", "seis",
    "pour", "prozent", "virgule", "sei", "the", "tens", "digit", "is", "reversed", "first",
    "then", "someone", "often", "step", "answer", "|", ".", ",", ":", "=",
]  # fmt: skip
GAPS = [" ", " ", "-", "\n", ". ", ", ", " | ", ""]


def _text(rng: random.Random, words: int) -> str:
    return "".join(rng.choice(PIECES) + rng.choice(GAPS) for _ in range(words)).strip()


def test_the_quick_check_never_skips_a_reply_the_full_reading_flags() -> None:
    rng = random.Random(30)
    targets = [parse_number(value) for value in ("56", "65", "12", "100", "5600")]
    flagged = skipped = 0
    for _ in range(6000):
        context = _text(rng, rng.randint(1, 12))
        reply = canonical_text(_text(rng, rng.randint(0, 6)))
        for target in targets:
            assert target is not None
            full = list(_split_across_turns_read(reply, context, target))
            assert list(_split_across_turns(reply, context, target)) == full, (context, reply)
            flagged += bool(full)
        skipped += not _may_hold_a_number(reply)
    assert flagged > 50 and skipped > 50  # both paths were exercised


def test_a_reply_without_numbers_is_not_read_with_the_earlier_turns() -> None:
    assert not _may_hold_a_number("Tell me how you think this works. What is a first move?")
    for reply in ("6.", "six", "Six", "%", "per cent", "sechs", "seis", "quarters", "half"):
        assert _may_hold_a_number(reply), reply


# Around the join of the earlier turns and the reply: signs, articles, joining words, labels,
# pronouns, other languages, long spacing and long filler (past the 80-character reach).
EDGE_PIECES = [
    *PIECES, "minus", "Negative", "zero", "0", "10", "-5", "-0", "a", "A", "point", "halves",
    "fourths", "one", "One", "the", "step", "#", "vingt", "et", "un", "cinq", "six", "seis",
    "sei", "otto", "once", "trente", "y", "and", "hundred", "5th", "6.", "1)", "=", "is",
    "x" * 30, "lorem ipsum dolor sit amet " * 3, "then", "digit",
]  # fmt: skip
EDGE_GAPS = [*GAPS, " " * 90, "\n\n", " - ", "   ", "\t", "!!! ", ", then "]


def _edge_text(rng: random.Random, words: int) -> str:
    return "".join(rng.choice(EDGE_PIECES) + rng.choice(EDGE_GAPS) for _ in range(words))


def test_the_reach_check_never_skips_a_split_the_full_reading_finds() -> None:
    """The second quick check (a number running on from the earlier turns, or a later part of
    the digits within reach of the reply's start) against the full reading, on texts built to
    sit numbers, signs and joining words on both sides of the join."""
    rng = random.Random(3030)
    targets = [parse_number(value) for value in ("56", "65", "100", "5600", "10", "21", "506")]
    flagged = skipped_by_reach = 0
    for _ in range(5000):
        context = _edge_text(rng, rng.randint(1, 10))
        reply = canonical_text(_edge_text(rng, rng.randint(0, 8)))
        for target in targets:
            assert target is not None
            full = list(_split_across_turns_read(reply, context, target))
            assert list(_split_across_turns(reply, context, target)) == full, (context, reply)
            flagged += bool(full)
            digits = str(abs(target.value.numerator))
            tail = canonical_text(context[-CONTEXT_TAIL:])
            skipped_by_reach += _may_hold_a_number(reply) and not _may_continue_a_split(
                reply, tail, digits
            )
    assert flagged > 100 and skipped_by_reach > 100  # both paths were exercised


def test_a_reply_whose_numbers_cannot_continue_the_answer_is_not_read_again() -> None:
    tail = "The first digit is 5."
    assert not _may_continue_a_split("Now multiply 7 by 8 and tell me.", tail, "56")
    assert _may_continue_a_split("The next one is 6.", tail, "56")  # a later part, in reach
    assert _may_continue_a_split(" six, as you said", "fifty", "56")  # runs on: "fifty six"
    far = "Think about it. " * 6 + "Then 6."
    assert not _may_continue_a_split(far, tail, "56")  # 6 is past the reach of any part
