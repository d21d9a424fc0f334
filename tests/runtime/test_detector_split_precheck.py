"""The answer given in pieces over several turns: the quick check that skips re-reading the
earlier turns never skips a reply the full reading would flag (issue 30: per-reply work bounded,
not changed). Compared on generated tails and replies, with the full reading as the oracle."""

from __future__ import annotations

import random

from pedrag.runtime.detect.answer import (
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
