"""Generated number spellings (issue 26, item 2): every cardinal num2words writes, in each of
its languages, is flagged as the hidden answer; ordinary replies are not."""

from __future__ import annotations

import random
from decimal import Decimal
from fractions import Fraction

import pytest
from num2words import CONVERTER_CLASSES, num2words

from pedrag.runtime.detect.answer import number_to_words
from pedrag.runtime.detect.detector import AnswerKey, detect
from pedrag.runtime.detect.spellings import MIN_SHORT_LETTERS, find_spellings, spelling_index

RANDOM = random.Random(2026)
INTEGERS = [56, 112, 1_000, 46_311, 999_999, *RANDOM.sample(range(11, 10**6), 5)]
LANGUAGES = sorted(CONVERTER_CLASSES)


def _spelled(value: int | Decimal, language: str) -> str | None:
    try:
        return str(num2words(value, lang=language))
    except Exception:  # noqa: BLE001 - num2words lacks some numbers in some languages
        return None


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_num2words_spelling_of_an_integer_answer_is_flagged(language: str) -> None:
    missed = []
    for answer in INTEGERS:
        written = _spelled(answer, language)
        if written is None:
            continue
        short = " " not in written and len(written) < MIN_SHORT_LETTERS and written.isascii()
        if short:
            continue  # one short word: left to the hand-written readers (see the module)
        for reply in (f"So it comes to {written}.", f"{written.upper()}!", f"Psst: {written}"):
            if not detect(reply, answer=AnswerKey(str(answer))).flagged:
                missed.append(reply)
    assert missed == []


def test_english_with_the_standard_comma_and_without_and() -> None:
    for answer in INTEGERS:
        british = str(
            num2words(answer, lang="en")
        )  # "forty-six thousand, three hundred and eleven"
        for written in (british, british.replace(",", ""), british.replace(" and ", " ")):
            assert detect(f"It is {written}.", answer=AnswerKey(str(answer))).flagged, written


@pytest.mark.parametrize("value", ["0.5", "2.75", "12.25"])
def test_decimals_spelled_by_num2words_are_flagged(value: str) -> None:
    missed = [
        (language, written)
        for language in LANGUAGES
        if (written := _spelled(Decimal(value), language)) and len(written) >= MIN_SHORT_LETTERS
        if not detect(f"Answer: {written}", answer=AnswerKey(value)).flagged
    ]
    assert missed == []


def test_the_index_is_computed_once_per_value() -> None:
    first = spelling_index(Fraction(46_311))
    assert spelling_index(Fraction(46_311)) is first
    assert len({s.language for group in first.by_prefix.values() for s in group}) >= 40


def test_a_spelling_inside_a_longer_word_or_of_another_value_is_not_matched() -> None:
    assert list(find_spellings("zesenveertigduizendje", Fraction(46_000))) == []
    assert list(find_spellings("sechsundfünfzig", Fraction(57))) == []


def test_ordinary_words_that_are_small_numbers_elsewhere_are_not_flagged() -> None:
    # "to" is 2 in Norwegian, "fire" 4 in Danish, "on" 10 in Turkish, "otto" 8 in Italian.
    for reply, answer in (
        ("Go to the board.", 2),
        ("Fire away!", 4),
        ("Carry on.", 10),
        ("Otto is here.", 8),
    ):
        assert not detect(reply, answer=AnswerKey(str(answer))).flagged


def test_number_to_words_is_num2words_english() -> None:
    assert number_to_words(46_311) == "forty-six thousand three hundred eleven"
    assert number_to_words(112, conjunction=True) == "one hundred and twelve"
