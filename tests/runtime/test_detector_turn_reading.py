"""The detector's per-reply reading, trimmed in issue 30's thirteenth round (brief Q6): each
quick path is compared with the reading it replaces, kept here as the oracle, on generated
texts built from the words it looks for. A quick path that ever disagrees would change a
verdict."""

from __future__ import annotations

from fractions import Fraction
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from pedrag.runtime.detect import answer
from pedrag.runtime.detect.answer import (
    _NUMBER_STARTS,
    _ValuesOnTheTable,
    _word_mentions,
    find_numbers,
)


class _EveryToken:
    """A set holding every word: the number-word reader as it was, trying every token."""

    def __contains__(self, word: object) -> bool:
        return True


def _word_mentions_every_token(text: str) -> list[answer.NumberMention]:
    with mock.patch.object(answer, "_NUMBER_STARTS", _EveryToken()):
        return _word_mentions(text)


WORDS = [
    "a", "A", "one", "One", "two", "seven", "zero", "ten", "twelve", "nineteen", "twenty",
    "fifty", "fiftysix", "FiftySix", "ninety", "hundred", "thousand", "million", "and", "half",
    "third", "quarters", "point", "minus", "negative", "percent", "the", "is", "it", "this",
    "someone", "often", "an", "of", "step", "five's", "won't", "that's",
]  # fmt: skip
GAPS = [" ", "-", " - ", ", ", "\n", ". ", "", "3 "]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(GAPS)), max_size=9))
def test_number_words_read_from_their_first_words_only_are_every_number_word(
    parts: list[tuple[str, str]],
) -> None:
    text = "".join(word + gap for word, gap in parts)
    assert _word_mentions(text) == _word_mentions_every_token(text), text


def test_the_first_words_are_every_word_a_number_starts_with() -> None:
    # Each reads as a number (or "a" as the numerator of "a half") only from its own token.
    for word in sorted(_NUMBER_STARTS - {"a"}):
        assert [m.start for m in _word_mentions(f"so {word} then")] == [3], word
    assert [m.value for m in _word_mentions("a half")] == [Fraction(1, 2)]
    assert not _word_mentions("hundred and half of it")


def _values_read_together(texts: tuple[str | None, ...]) -> frozenset[Fraction]:
    """The values on the table as they were read: every text's numbers, on every reply."""
    return frozenset(m.value for text in texts if text for m in find_numbers(text))


NUMBER_PIECES = [
    "7", "8", "56", "7 x 8", "fifty-six", "0.5", "1/2", "50%", "step 4", "-3", "seven",
    "What is", "times", "?", "and", "LVI", "",
]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(NUMBER_PIECES), max_size=4).map(" ".join), max_size=2),
    st.one_of(st.none(), st.lists(st.sampled_from(NUMBER_PIECES), max_size=4).map(" ".join)),
)
def test_the_givens_values_kept_per_exercise_are_the_values_read_on_every_reply(
    givens: list[str], message: str | None
) -> None:
    table = _ValuesOnTheTable(tuple(givens), message)
    together = _values_read_together((*givens, message))
    asked = {Fraction(n, d) for n in range(-4, 60) for d in (1, 2, 100)}
    assert {value for value in asked if value in table} == {v for v in asked if v in together}
