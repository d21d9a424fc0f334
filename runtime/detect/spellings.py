"""Generated spellings of a number: every language ``num2words`` writes, matched on the view.

Runtime stage 7, part of the answer pass (issue 26, item 2). Takes a numeric answer's value;
gives, once per value (cached), its cardinal spellings in every language ``num2words``
supports (56 language codes: Dutch, Polish, Russian, Turkish, Indonesian, Swedish, Romanian,
Czech, Arabic, Japanese, ...), with and without the conjunctions ("and", "og", "y", "e", "et",
"und") and read through commas, hyphens and spacing. :func:`find_spellings` gives where a
canonical text writes one of them, with the language, without quoting the value.

How a spelling is matched: both the spelling and the reply are read through the canonical view
(so accents, confusables and invisible characters fold alike), lower-cased and cut into word
tokens; a spelling matches a run of reply tokens whose letters, run together, are the
spelling's letters run together. So "forty-six thousand, three hundred and eleven", "forty six
thousand three hundred eleven" and "fortysixthousand..." all match, as does German written as
one compound or apart. A run is looked up by its first token among the prefixes of the
value's spellings (a per-value index): the per-reply work is one pass over the tokens, a
dictionary look-up each.

Why generated, not hand-written: the earlier readers covered six languages and caught 26 of 200
answers between 1,000 and 999,999 as num2words writes them in English; a library that writes
the numbers is the list of spellings. What is left out on purpose: a spelling that is one short
word (four letters or fewer in Latin script: "to", "fire", "otto", "sei", "on") is an ordinary
word in some other language; those small numbers are read by the hand-written readers for
English, French, German, Spanish, Portuguese and Italian, and otherwise left to the judge.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from pedrag.runtime.detect.canonical import canonical_text

MIN_SHORT_LETTERS = 5
"""A one-word Latin-script spelling needs this many letters to be matched on its own."""
MAX_DECIMAL_PLACES = 4
"""Decimals with more places than this are not spelled out (no one reads them aloud)."""
_CONJUNCTIONS = frozenset({"and", "og", "und", "y", "e", "et", "i", "a", "ac", "si", "en"})
_UNSPACED_LANGUAGES = frozenset({"ja", "th", "ko"})
_TOKEN = re.compile(r"\w+")


@dataclass(frozen=True)
class Spelling:
    """One way to write the value: its letters run together, and the language."""

    compact: str
    language: str


@dataclass(frozen=True)
class SpellingIndex:
    """A value's spellings, by the first letter of their compact form; spellings of
    languages written without spaces are matched as substrings."""

    by_prefix: dict[str, tuple[Spelling, ...]]
    unspaced: tuple[tuple[re.Pattern[str], str], ...]
    words: frozenset[str]
    """Every word of every spelling, the short ones too: a cheap test of whether a text can
    hold the value in words at all."""
    starting: dict[str, tuple[Spelling, ...]]
    """Every prefix of a compact spelling, with the spellings it begins (in ``by_prefix``
    order): a reply's token that is none of them starts no match, so a reply is read with one
    dictionary look-up per token, not a walk over the spellings sharing its first letter."""


def _languages() -> tuple[str, ...]:
    from num2words import CONVERTER_CLASSES

    return tuple(sorted(CONVERTER_CLASSES))


def _written(value: Fraction, language: str) -> str | None:
    from num2words import num2words

    if value.denominator == 1:
        number: int | Decimal = value.numerator
    else:
        decimal = Decimal(value.numerator) / Decimal(value.denominator)
        exponent = decimal.as_tuple().exponent
        if Fraction(decimal) != value or not isinstance(exponent, int):
            return None  # 2/3 has no finite decimal to spell
        if exponent < -MAX_DECIMAL_PLACES:
            return None
        number = decimal
    try:
        return str(num2words(number, lang=language))
    except Exception:  # noqa: BLE001 - a language without this number is just not a spelling
        return None


def _tokens(text: str) -> list[str]:
    return [token.lower() for token in _TOKEN.findall(canonical_text(text))]


@functools.lru_cache(maxsize=64)
def spelling_index(value: Fraction) -> SpellingIndex:
    """Every spelling of ``value`` (computed once per value: an exercise's answer is asked of
    every reply and every message)."""
    by_prefix: dict[str, dict[str, Spelling]] = {}
    unspaced: dict[str, str] = {}
    words: set[str] = set()
    for language in _languages():
        written = _written(value, language)
        if not written:
            continue
        # The view folds look-alikes case by case ("Ш" and "ш" fold differently): index the
        # cases a reply writes: as written, lower, upper and capitalised.
        for cased in dict.fromkeys(
            (written, written.lower(), written.upper(), written.capitalize())
        ):
            words.update(_index(cased, language, by_prefix, unspaced))
    patterns = tuple(
        (re.compile(r"\s?".join(map(re.escape, compact))), language)
        for compact, language in unspaced.items()
    )
    grouped = {prefix: tuple(found.values()) for prefix, found in by_prefix.items()}
    starting: dict[str, list[Spelling]] = {}
    for group in grouped.values():
        for spelling in group:
            for end in range(1, len(spelling.compact) + 1):
                starting.setdefault(spelling.compact[:end], []).append(spelling)
    return SpellingIndex(
        grouped,
        patterns,
        frozenset(words),
        {prefix: tuple(found) for prefix, found in starting.items()},
    )


def _index(
    written: str,
    language: str,
    by_prefix: dict[str, dict[str, Spelling]],
    unspaced: dict[str, str],
) -> list[str]:
    """Add one written form's variants to the index; gives its words."""
    tokens = _tokens(written)
    if tokens:
        if language.split("_")[0] in _UNSPACED_LANGUAGES:
            compact = "".join(tokens)
            unspaced.setdefault(compact, language)
            return tokens
        variants = {"".join(tokens)}
        without = [token for token in tokens if token not in _CONJUNCTIONS]
        if without and len(without) < len(tokens):
            variants.add("".join(without))
        for compact in variants:
            latin = compact.isascii()
            if len(tokens) == 1 and latin and len(compact) < MIN_SHORT_LETTERS:
                continue  # "to", "fire", "otto": ordinary words somewhere
            if len(compact) < 2:
                continue
            by_prefix.setdefault(compact[:1], {}).setdefault(compact, Spelling(compact, language))
    return tokens


def _lowered_tokens(text: str) -> tuple[str, ...] | list[str]:
    """The text's tokens lower-cased, as :func:`_word_tokens` gives them: for an ASCII text
    (almost every reply) read from the text lower-cased at once, which keeps every offset and
    every token's extent (ASCII case changes no character's class), without a span or a
    slice per token; the spans are asked only when a spelling is found."""
    if text.isascii():
        return _TOKEN.findall(text.lower())
    return _word_tokens(text)[1]


@functools.lru_cache(maxsize=64)
def _word_tokens(text: str) -> tuple[tuple[tuple[int, int], ...], tuple[str, ...]]:
    spans = tuple((match.start(), match.end()) for match in _TOKEN.finditer(text))
    return spans, tuple(text[start:end].lower() for start, end in spans)


@functools.lru_cache(maxsize=128)
def find_spellings(text: str, value: Fraction) -> tuple[tuple[int, int, str], ...]:
    """Where the canonical ``text`` writes ``value`` in words of any language:
    (start, end, language). Whole tokens only: "zesenveertig" in a longer word is not it.
    Cached by value: a reply is asked once per spelling of the answer."""
    return tuple(_find_spellings(text, value))


def _find_spellings(text: str, value: Fraction) -> Iterator[tuple[int, int, str]]:
    index = spelling_index(value)
    if index.by_prefix:
        tokens = _lowered_tokens(text)
        for first, token in enumerate(tokens):
            # Only the spellings this token begins: any other breaks on its first token.
            candidates = index.starting.get(token)
            if not candidates:
                continue
            for spelling in candidates:
                joined = ""
                for cursor in range(first, len(tokens)):
                    joined += tokens[cursor]
                    if not spelling.compact.startswith(joined):
                        break
                    if len(joined) == len(spelling.compact):
                        spans = _word_tokens(text)[0]  # asked only where a spelling is found
                        yield spans[first][0], spans[cursor][1], spelling.language
                        break
    for pattern, language in index.unspaced:
        for match in pattern.finditer(text):
            yield match.start(), match.end(), language
