"""The answer reader's quick path of issue 30 goal 2 (a warm turn under 2 ms): a message with no
digit left after its number words are read is not scanned for the operator words that read
only beside a digit. Compared with the full scan, kept here as the oracle, on generated messages
built from those very words: a quick path that ever disagreed would change a grade."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from pedrag.runtime.learning import answer_reader
from pedrag.runtime.learning.answer_reader import _OPERATOR_WORDS, canonical


def _canonical_every_operator(message: str) -> str:
    """``canonical`` as it was before the quick path: every operator word tried."""
    saved = answer_reader._OPERATOR_WORDS_WITHOUT_DIGITS
    answer_reader._OPERATOR_WORDS_WITHOUT_DIGITS = _OPERATOR_WORDS
    try:
        return canonical(message)
    finally:
        answer_reader._OPERATOR_WORDS_WITHOUT_DIGITS = saved


_PIECES = [
    *("plus", "added to", "and add", "minus", "take away", "less", "times", "multiplied by"),
    *("x", "divided by", "over", "doubled", "tripled", "halved", "squared", "cubed", "**"),
    *("negative", "equals", "is equal to", "makes", "gives you", "comes to", "is", "are", "="),
    *("per cent", "percent", "one", "two", "zero", "fifty-six", "a half", "two thirds"),
    *("seven", "eight", "hundred", "the tens", "I", "think", "it", "?", ",", "-", " "),
    *("\u0663", "\u00bd", "\u2154", "\u2212", "\u00d7", "\u00f7", "\uff15", "\u00ad", "IV"),
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12), st.sampled_from([" ", "", "  ", "\n"]))
def test_a_message_without_digits_reads_as_the_full_scan_reads_it(
    pieces: list[str], separator: str
) -> None:
    message = separator.join(pieces)
    assert canonical(message) == _canonical_every_operator(message)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_any_text_reads_as_the_full_scan_reads_it(message: str) -> None:
    assert canonical(message) == _canonical_every_operator(message)


def test_the_quick_path_leaves_out_only_operator_words_that_need_a_digit() -> None:
    kept = set(answer_reader._OPERATOR_WORDS_WITHOUT_DIGITS)
    for pattern, replacement in _OPERATOR_WORDS:
        if (pattern, replacement) in kept:
            continue
        # left out: no text without a digit matches it
        for text in ("seven plus eight", "minus x", "equals is", "it is", "per cent", "cubed"):
            assert pattern.search(text) is None, pattern.pattern
        assert re.search(r"\\d", pattern.pattern)


def test_operator_words_still_read_in_a_message_with_digits() -> None:
    assert canonical("twenty-eight doubled is fifty-six") == "28 * 2 = 56"
    assert canonical("it makes fifty per cent") == "it = 50%"
