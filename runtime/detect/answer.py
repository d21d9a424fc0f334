"""Detector pass: does the reply state the exercise's hidden answer, in any spelling?

Runtime stage 7, answer reveal (DESIGN, curriculum ``answer`` / ``accept`` / ``solution``).
Takes the reply, the :class:`~pedrag.runtime.detect.detector.AnswerKey`, optionally the student's last
message, the current step's expected value and the earlier turns. Gives ``answer-reveal``,
``step-reveal`` and ``solution-reveal`` findings.

Why so many spellings: a model talked into "just hinting" writes the answer as words ("fifty-six"),
with separators ("5-6", "5 6"), as an equivalent fraction or decimal, or reproduces the worked
solution. Why the exclusions: a detector that flags "step 4" or a number the student said first
blocks honest help (gate G2), so numbers are matched as whole tokens, labels such as "step 4",
"H4" or a list marker are not values, and a target the student has already stated is no longer
hidden.

The number reader (:func:`find_numbers`, :func:`parse_number`) and :func:`number_to_words` are
public because the benchmark and the tests use them too.
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
import unicodedata
from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, NamedTuple

from pedrag.runtime.detect.arithmetic import expressions
from pedrag.runtime.detect.canonical import canonical_text, canonical_view
from pedrag.runtime.detect.detector import AnswerKey, Finding, FindingKind
from pedrag.runtime.detect.folding import ascii_fold
from pedrag.runtime.detect.number_words import find_number_words, may_hold_number_words
from pedrag.runtime.detect.spellings import find_spellings
from pedrag.runtime.detect.text_answer import find_phrase_variants, find_text_variants
from pedrag.runtime.learning.answer_reader import candidate_values, is_candidate_list

# --- number words ---------------------------------------------------------------------------

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9,
}  # fmt: skip
_TEENS = {
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fourty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_DENOMINATORS = {
    "half": 2, "halves": 2, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4,
    "fourth": 4, "fourths": 4, "fifth": 5, "fifths": 5, "sixth": 6, "sixths": 6,
    "seventh": 7, "sevenths": 7, "eighth": 8, "eighths": 8, "ninth": 9, "ninths": 9,
    "tenth": 10, "tenths": 10, "hundredth": 100, "hundredths": 100,
    "thousandth": 1000, "thousandths": 1000,
}  # fmt: skip
_DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
# "one" is as often a pronoun as a number: "another one", "the one", "one of them".
_PRONOUN_ONE_BEFORE = frozenset(
    {"another", "this", "that", "the", "each", "every", "any", "no", "which", "some", "a",
     "st", "nd", "rd", "th", "first", "second", "last", "next", "right", "wrong", "correct",
     "only", "same", "other", "new", "big", "small", "little", "harder", "easier", "tricky",
     "similar", "different", "good", "great", "nice", "tough"}
)  # fmt: skip
_PRONOUN_ONE_AFTER = frozenset({"of", "another", "more", "way", "day", "thing"})


def number_to_words(number: int, *, conjunction: bool = False) -> str:
    """English words for an integer, as ``num2words`` writes them: ``56`` -> ``"fifty-six"``;
    ``conjunction`` keeps the British "and" (``112`` -> ``"one hundred and twelve"``), without
    it the American form ("one hundred twelve"). Thousands are written without the comma
    num2words puts after them."""
    from num2words import num2words

    words = str(num2words(number, lang="en")).replace(",", "")
    return words if conjunction else words.replace(" and ", " ")


# --- number mentions ------------------------------------------------------------------------

NumberForm = Literal["digits", "words", "fraction"]


@dataclass(frozen=True)
class NumberMention:
    """A number written in the text: its exact value and where it is."""

    value: Fraction
    start: int
    end: int
    form: NumberForm
    decimals: int | None = None
    """Decimal places as written ("0.67" -> 2); None for integers and exact fractions."""
    percent: bool = False

    def values(self) -> tuple[Fraction, ...]:
        """The values this mention can stand for: 50% is 50 and 0.5."""
        return (self.value, self.value / 100) if self.percent else (self.value,)


_DIGIT = re.compile(r"\d")
_DIGIT_NUMBER = re.compile(
    r"""(?<![\w.,])
        (?P<number>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)
        (?![\d])""",
    re.VERBOSE,
)
_FRACTION = re.compile(r"(?<![\w.,/])(?P<num>\d+)\s?/\s?(?P<den>\d+)(?![\w.,/]?\d)")
_PERCENT_AFTER = re.compile(
    r"\s?(?:%|percent\b|per cent\b|pour\s?cent\b|prozent\b|por\s?cien(?:to)?\b|"
    r"por\s?cento\b|per\s?cento\b)",
    re.IGNORECASE,
)
_LETTERS_AFTER = re.compile(r"[A-Za-z]+")
_ORDINAL_SUFFIX = frozenset({"st", "nd", "rd", "th"})
_SCALE_AFTER = re.compile(r"\s+(hundred|thousand|million|billion|trillion)\b", re.IGNORECASE)
_WORD_TOKEN = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")
_GAP_IN_NUMBER = re.compile(r"^(?:\s*-\s*|\s+)$")
_LIST_MARKER_BEFORE = re.compile(r"(?:^|\n)[ \t]*$")
_LIST_MARKER_AFTER = re.compile(r"^[.)][ \t]")
# Labels, not values: "step 4", "question #2", "H4" (the last is excluded by the word boundary).
_LABEL_WORDS = (
    "step", "part", "question", "problem", "exercise", "page", "line", "level", "rung",
    "chapter", "section", "figure", "example", "item", "option", "lesson", "unit", "grade",
    "round", "attempt", "hint", "rule", "version", "digit", "position", "place", "column",
    "row", "cell",
)  # fmt: skip
_LABEL_BEFORE = re.compile(
    rf"(?:\b(?:{'|'.join(word + 's?' for word in _LABEL_WORDS)})(?:\s+(?:number|no\.?))?|#)"
    r"\s*#?\s*$",
    re.IGNORECASE,
)
# What a label needs somewhere in an ASCII text lower-cased: a label word or "#". The label
# pattern is searched at every position of its window and folds case, which made it the
# slowest part of reading a reply's numbers; a window without any of these is no label.
# (ASCII only: case folding matches "ſ" to "s" and "K" to "k".)
_LABEL_HINT = re.compile("|".join(("#", *_LABEL_WORDS)))


def _label_before(text: str, start: int) -> bool:
    """Whether a label ("step", "question #") ends right before ``start``."""
    before = text[max(0, start - 24) : start]
    if before.isascii() and not _LABEL_HINT.search(before.lower()):
        return False  # (tested against the label pattern on generated texts)
    return bool(_LABEL_BEFORE.search(before))


_NEGATIVE_CONTEXT = re.compile(r"(?:^|[=(\[:,]|\b(?:is|be|was|get|equals|of|to|at))\s*$")


def _negative_context(text: str, end: int) -> bool:
    """Whether a "-" at ``end`` is a sign: after "=", "(", "is", the start of the text, ...
    Reads a bounded window, so many minus signs cost linear time."""
    window_start = max(0, end - 24)
    window = text[window_start:end]
    if window_start == 0 and not window.strip():
        return True
    return bool(_NEGATIVE_CONTEXT.search(window.lstrip() if window_start else window))


def _decimal_places(literal: str) -> int | None:
    return len(literal.split(".", 1)[1]) if "." in literal else None


def _digit_mentions(text: str) -> list[NumberMention]:
    if _DIGIT.search(text) is None:
        return []  # both patterns below start at a digit (most replies have none)
    mentions: list[NumberMention] = []
    fraction_spans: list[tuple[int, int]] = []
    for match in _FRACTION.finditer(text):
        numerator, denominator = int(match["num"]), int(match["den"])
        # "24/3" in a reply is a division to do, not a spelling of 8; only a non-integer
        # quotient ("1/2", "7/4") is read as a fraction value.
        if denominator == 0 or numerator % denominator == 0:
            continue
        start, value = match.start(), Fraction(numerator, denominator)
        whole = re.search(r"(?<![\w.,])(\d+)\s+$", text[max(0, start - 12) : start])
        if whole and numerator < denominator:  # a mixed number: "2 1/2"
            start -= len(whole.group(0))
            value += int(whole.group(1))
        fraction_spans.append((start, match.end()))
        mentions.append(NumberMention(value, start, match.end(), "fraction"))
    for match in _DIGIT_NUMBER.finditer(text):
        start, end = match.span()
        if any(low <= start < high for low, high in fraction_spans):
            continue
        literal = match["number"]
        letters = _LETTERS_AFTER.match(text, end)
        if letters and (len(letters.group(0)) == 1 or letters.group(0).lower() in _ORDINAL_SUFFIX):
            continue  # "4x", "2nd": a coefficient or an ordinal, not a quantity
        plain = literal.replace(",", "")
        # an integer literal is made from its int (Fraction parses a string with a regex)
        value = Fraction(int(plain)) if plain.isascii() and plain.isdigit() else Fraction(plain)
        decimals = _decimal_places(literal)
        if start and text[start - 1] in "-−" and _negative_context(text, start - 1):
            start, value = start - 1, -value
        scale = _SCALE_AFTER.match(text, end)
        if scale and not letters:
            value *= _scale(scale.group(1))
            end, decimals = scale.end(), None
        percent = _PERCENT_AFTER.match(text, end)
        if percent:
            end = percent.end()
        mentions.append(
            NumberMention(value, start, end, "digits", decimals=decimals, percent=bool(percent))
        )
    return mentions


def _scale(word: str) -> int:
    word = word.lower()
    return 100 if word == "hundred" else _SCALES[word]


class _Token(NamedTuple):  # a tuple: several are made per word of every reply read
    word: str
    start: int
    end: int


# Tens and units run together ("fiftysix", or "fifty\u00adsix" once the soft hyphen is gone).
_RUN_TOGETHER = re.compile(
    r"(twenty|thirty|forty|fourty|fifty|sixty|seventy|eighty|ninety)"
    r"(one|two|three|four|five|six|seven|eight|nine)",
)


def _word_tokens(text: str) -> list[_Token]:
    tokens = []
    for match in _WORD_TOKEN.finditer(text):
        word, start = match.group(0).lower(), match.start()
        # the shortest run-together number ("fiftysix", "fortytwo") has eight letters
        joined = _RUN_TOGETHER.fullmatch(word) if len(word) >= 8 else None
        if joined:
            split = start + len(joined.group(1))
            tokens += [
                _Token(joined.group(1), start, split),
                _Token(joined.group(2), split, match.end()),
            ]
            continue
        tokens.append(_Token(word, start, match.end()))
    return tokens


def _joined(text: str, left: _Token, right: _Token) -> bool:
    """Two number words belong to one number only across a space or a hyphen."""
    return left.end == right.start or bool(_GAP_IN_NUMBER.match(text[left.end : right.start]))


def _parse_integer_words(text: str, tokens: Sequence[_Token], index: int) -> tuple[int, int] | None:
    """Read an integer in words starting at ``tokens[index]``: (value, index after the last
    token used). Rejects word salad such as "five six" (that is two numbers)."""
    total, group, last = 0, 0, ""
    last_scale = 10**15
    end_index = None
    position = index
    while position < len(tokens):
        token = tokens[position]
        if position > index and not _joined(text, tokens[position - 1], token):
            break
        word = token.word
        following = tokens[position + 1].word if position + 1 < len(tokens) else ""
        if word == "a" and position == index and following in ("hundred", *_SCALES):
            group, last = 1, "unit"
        elif word in _UNITS and (
            last in ("", "hundred", "scale", "and") or (last == "tens" and _UNITS[word] > 0)
        ):
            group += _UNITS[word]
            last = "unit" if last != "tens" else "tens_unit"
        elif word in _TEENS and last in ("", "hundred", "scale", "and"):
            group, last = group + _TEENS[word], "teen"
        elif word in _TENS and last in ("", "hundred", "scale", "and"):
            group, last = group + _TENS[word], "tens"
        elif word == "hundred" and last in ("unit", "teen", "tens_unit") and group < 100:
            group, last = group * 100, "hundred"
        elif word in _SCALES and last in ("unit", "teen", "tens", "tens_unit", "hundred"):
            scale = _SCALES[word]
            if scale >= last_scale:
                break
            total, group, last, last_scale = total + group * scale, 0, "scale", scale
        elif (
            word == "and"
            and last in ("hundred", "scale")
            and (following in _UNITS or following in _TEENS or following in _TENS)
        ):
            last = "and"
        else:
            break
        if last != "and":
            end_index = position + 1
        position += 1
    if end_index is None:
        return None
    return total + group, end_index


# Every word an English number in words can start with or hinge on (a unit, teen, tens or
# scale word, "hundred", the unit fractions "a half/third/quarter" read), as a whole token of
# _WORD_TOKEN in any case: a text with none of them has no number words, and is not tokenised.
_NUMBER_WORDS = (
    "|".join(
        sorted(
            {*_UNITS, *_TEENS, *_TENS, "hundred", *_SCALES, "half", "third", "quarter"},
            key=len,
            reverse=True,
        )
    )
    + r"|(?:twenty|thirty|forty|fourty|fifty|sixty|seventy|eighty|ninety)"
    r"(?:one|two|three|four|five|six|seven|eight|nine)"
)
_NUMBER_WORD = re.compile(
    # a token starts after a non-letter, or (after "it's") at a capital right after a letter
    rf"(?:(?<![A-Za-z])|(?<=[a-z])(?=[A-Z]))(?i:{_NUMBER_WORDS})(?![A-Za-z]|'[a-z])"
)
# The quick test before it, on an ASCII text lower-cased (a third of its time; a case-blind
# alternation scans slowly): the same words, the end test loosened to any letter. A match of
# _NUMBER_WORD after a non-letter is a match here; one at a capital right after a lower-case
# letter is not, so a text with such a pair is always read in full.
_NUMBER_WORD_FOLDED = re.compile(rf"(?<![a-z])(?:{_NUMBER_WORDS})(?![a-z])")
_CAPITAL_AFTER_LOWER = re.compile(r"[a-z][A-Z]")


def _has_number_word(text: str) -> bool:
    """Whether ``text`` holds an English number word as ``_NUMBER_WORD`` reads one.

    On an ASCII text without a capital right after a lower-case letter the lower-cased quick
    pattern decides alone (the case-blind pattern scanned the text a second time, about two
    thirds of the test's time on a text with a number word): each of its matches is a whole
    letter run, so it is a match of ``_NUMBER_WORD`` unless an apostrophe and a lower-case
    letter follow it ("five's"), which only ``_NUMBER_WORD`` refuses (tested against it on
    generated texts)."""
    if text.isascii() and not _CAPITAL_AFTER_LOWER.search(text):
        for match in _NUMBER_WORD_FOLDED.finditer(text.lower()):
            end = match.end()
            if text[end : end + 1] != "'" or text[end + 1 : end + 2] not in _LOWER_CASE:
                return True
        return False
    return bool(_NUMBER_WORD.search(text))


_LOWER_CASE = frozenset("abcdefghijklmnopqrstuvwxyz")


# The words a number in words starts with (:func:`_parse_integer_words` reads nothing from any
# other first token, and "a" also starts "a half"): the other tokens of a reply are passed over
# without a call (tested against reading from every token, on generated texts).
_NUMBER_STARTS = frozenset({*_UNITS, *_TEENS, *_TENS, "a"})


def _word_mentions(text: str) -> list[NumberMention]:
    if not _has_number_word(text):
        return []
    tokens = _word_tokens(text)
    mentions: list[NumberMention] = []
    index = 0
    while index < len(tokens):
        if tokens[index].word not in _NUMBER_STARTS:
            index += 1  # neither an integer nor "a half" starts here: nothing to read
            continue
        parsed = _parse_integer_words(text, tokens, index)
        if parsed is None:
            # "a half", "a third of": the article is the numerator.
            if (
                tokens[index].word == "a"
                and index + 1 < len(tokens)
                and tokens[index + 1].word in ("half", "third", "quarter")
                and _joined(text, tokens[index], tokens[index + 1])
            ):
                denominator = _DENOMINATORS[tokens[index + 1].word]
                mentions.append(
                    NumberMention(
                        Fraction(1, denominator),
                        tokens[index].start,
                        tokens[index + 1].end,
                        "words",
                    )
                )
                index += 2
                continue
            index += 1
            continue
        integer, after = parsed
        value = Fraction(integer)
        decimals: int | None = None
        # "three quarters", "two thirds": a small integer over a denominator word.
        if (
            after < len(tokens)
            and tokens[after].word in _DENOMINATORS
            and integer < 100
            and _joined(text, tokens[after - 1], tokens[after])
            and not (integer == 1 and tokens[after].word.endswith("s"))
        ):
            value = Fraction(integer, _DENOMINATORS[tokens[after].word])
            after += 1
        # "one and a half": a whole number and a unit fraction.
        elif (
            after + 2 < len(tokens)
            and tokens[after].word == "and"
            and tokens[after + 1].word == "a"
            and tokens[after + 2].word in ("half", "third", "quarter")
            and all(_joined(text, tokens[k - 1], tokens[k]) for k in (after, after + 1, after + 2))
        ):
            value += Fraction(1, _DENOMINATORS[tokens[after + 2].word])
            after += 3
        # "three point one four"
        elif after < len(tokens) and tokens[after].word == "point":
            digits = ""
            cursor = after + 1
            while (
                cursor < len(tokens)
                and tokens[cursor].word in _UNITS
                and _joined(text, tokens[cursor - 1], tokens[cursor])
            ):
                digits += str(_UNITS[tokens[cursor].word])
                cursor += 1
            if digits:
                value += Fraction(int(digits), 10 ** len(digits))
                decimals, after = len(digits), cursor
        start, end = tokens[index].start, tokens[after - 1].end
        if integer == 1 and after == index + 1 and _is_pronoun_one(tokens, index):
            index = after
            continue
        if index > 0 and tokens[index - 1].word in ("negative", "minus"):
            previous = tokens[index - 1]
            before = text[max(0, previous.start - 24) : previous.start].rstrip()
            if previous.word == "negative" or not before or not before[-1].isdigit():
                value, start = -value, previous.start
        percent = _PERCENT_AFTER.match(text, end)
        if percent:
            end = percent.end()
        mentions.append(
            NumberMention(value, start, end, "words", decimals=decimals, percent=bool(percent))
        )
        index = after
    return mentions


def _foreign_word_mentions(text: str) -> list[NumberMention]:
    """Numbers in French, German, Spanish, Portuguese or Italian words ("cinquante-six")."""
    return [
        NumberMention(found.value, found.start, found.end, "words", found.decimals, found.percent)
        for found in find_number_words(text)
    ]


def _is_pronoun_one(tokens: Sequence[_Token], index: int) -> bool:
    before = tokens[index - 1].word if index > 0 else ""
    after = tokens[index + 1].word if index + 1 < len(tokens) else ""
    return before in _PRONOUN_ONE_BEFORE or after in _PRONOUN_ONE_AFTER


_DIGIT_LABEL = re.compile(r"\bdigits?\s*#?\s*\Z", re.IGNORECASE)
_STATED_AFTER = re.compile(
    r"\s*(?:[:=]|(?:is|was|will\s+be|should\s+be|must\s+be|becomes|equals|reads|has)\b)",
    re.IGNORECASE,
)


def _is_label(text: str, mention: NumberMention) -> bool:
    """Whether the number names something rather than counts it: "step 4", "question #2",
    a list marker "4. " or "4) " at the start of a line."""
    if _label_before(text, mention.start):
        # "digit 1 is 5" names a position; "the digit 5" and "the digits 5 and 6" name values.
        return not _DIGIT_LABEL.search(text, max(0, mention.start - 12), mention.start) or bool(
            _STATED_AFTER.match(text, mention.end)
        )
    before = text[max(0, mention.start - 24) : mention.start]
    return bool(
        _LIST_MARKER_BEFORE.search(before) and _LIST_MARKER_AFTER.match(text[mention.end :])
    )


class _Readings(NamedTuple):
    """What each reader finds in a text, before labels and overlaps are settled."""

    digits: tuple[NumberMention, ...]
    english: tuple[NumberMention, ...]
    other_languages: tuple[NumberMention, ...]


@functools.lru_cache(maxsize=32)  # find_numbers with and without labels, and the split check
def _readings(text: str) -> _Readings:
    return _Readings(
        tuple(_digit_mentions(text)),
        tuple(_word_mentions(text)),
        tuple(_foreign_word_mentions(text)),
    )


@functools.lru_cache(maxsize=32)
def find_numbers(text: str, *, include_labels: bool = False) -> tuple[NumberMention, ...]:
    """Every number written in ``text`` — digits ("2,520,000", "0.5", "1/2", "50%") or words
    ("fifty-six", "one hundred and twelve", "two thirds", and in French, German, Spanish,
    Portuguese or Italian: "cinquante-six", see :mod:`~pedrag.runtime.detect.number_words`) — in
    order. Labels ("step 4", a list marker) are left out unless ``include_labels``."""
    mentions = [mention for found in _readings(text) for mention in found]
    if not include_labels:
        mentions = [mention for mention in mentions if not _is_label(text, mention)]
    mentions.sort(key=lambda mention: (mention.start, -mention.end))
    kept: list[NumberMention] = []
    for mention in mentions:  # the longest reading of overlapping spans wins
        if kept and mention.start < kept[-1].end:
            continue
        kept.append(mention)
    return tuple(kept)


_CURRENCY_OR_SPACE = re.compile(r"^[\s$€£¥]*$")
_UNIT_WORDS = re.compile(r"^[\s$€£¥.]*(?:[A-Za-z]+(?:[\s/][A-Za-z]+)?)?[\s.]*$")


def parse_number(text: str) -> NumberMention | None:
    """``text`` as one number ("$2,520,000", "fifty-six", "1/2", "30%", "8 pencils"), or None
    when it is not exactly one number (then it is matched as text)."""
    mentions = find_numbers(text, include_labels=True)
    if len(mentions) != 1:
        return None
    mention = mentions[0]
    before, after = text[: mention.start], text[mention.end :]
    if not _CURRENCY_OR_SPACE.match(before) or not _UNIT_WORDS.match(after):
        return None
    return mention


# --- targets --------------------------------------------------------------------------------


def _normal_words(text: str) -> list[str]:
    folded = ascii_fold(text)
    return re.findall(r"[a-z0-9]+", folded)


@dataclass(frozen=True)
class _Target:
    """One spelling of something hidden: a number (matched by value) or text (by words)."""

    spelling: str
    number: NumberMention | None
    words: tuple[str, ...]


@functools.lru_cache(maxsize=256)  # an exercise's spellings are read for every reply
def _target(spelling: str) -> _Target:
    return _Target(spelling, parse_number(spelling), tuple(_normal_words(spelling)))


def _rounded(value: Fraction, places: int) -> Fraction:
    """Half away from zero, as people round: 0.75 -> 0.8, 2/3 -> 0.67."""
    scaled = abs(value) * 10**places
    whole = int(scaled) + (1 if scaled - int(scaled) >= Fraction(1, 2) else 0)
    return Fraction(whole if value >= 0 else -whole, 10**places)


def _truncated(value: Fraction, places: int) -> Fraction:
    whole = int(abs(value) * 10**places)
    return Fraction(whole if value >= 0 else -whole, 10**places)


def _exact_places(value: Fraction) -> float:
    """Decimal places needed to write ``value`` exactly (infinite for 2/3)."""
    denominator, twos, fives = value.denominator, 0, 0
    while denominator % 2 == 0:
        denominator, twos = denominator // 2, twos + 1
    while denominator % 5 == 0:
        denominator, fives = denominator // 5, fives + 1
    return max(twos, fives) if denominator == 1 else float("inf")


def _approximately(
    value: Fraction, decimals: int | None, other: Fraction, other_decimals: int | None
) -> bool:
    """Equal, or the coarser of the two is the finer one rounded ("0.67" for 2/3, "3.14" for
    3.14159) or cut short by at least two digits ("0.666" for 2/3). Integers and exact
    fractions must be equal: 56 is not "55.99", and 0.75 is not "0.7"."""
    if value == other:
        return True
    if decimals is None and other_decimals is None:
        return False
    if other_decimals is None or (decimals is not None and decimals <= other_decimals):
        coarse, places, fine = value, decimals, other
    else:
        coarse, places, fine = other, other_decimals, value
    assert places is not None
    if _rounded(fine, places) == coarse:
        return True
    return _exact_places(fine) >= places + 2 and _truncated(fine, places) == coarse


def _number_matches(mention: NumberMention, target: NumberMention) -> bool:
    return any(
        _approximately(mine, mention.decimals, theirs, target.decimals)
        for mine in mention.values()
        for theirs in target.values()
    )


_SPACER = "[ \\-,_·|\u00a0\u2009\u202f]"


@functools.lru_cache(maxsize=256)  # one pattern per answer, asked of every reply and message
def _spaced_digits_pattern(digits: str) -> re.Pattern[str]:
    """The digits of an integer split by single separators: "5 6", "5-6", "5,6" for 56,
    and digit by digit in words: "five six"."""
    as_digits = (_SPACER + "{0,3}").join(digits)
    as_words = (_SPACER + "{1,3}").join(_DIGIT_WORDS[int(d)] for d in digits)
    return re.compile(
        rf"(?<![\w.,])(?<!\d{_SPACER})(?:{as_digits}|{as_words})"
        rf"(?!\w|[.,]\d|{_SPACER}{{1,3}}(?:\d|{'|'.join(_DIGIT_WORDS)})\b)",
        re.IGNORECASE,
    )


def _spelling_class(mention: NumberMention) -> str:
    """How a number is written, coarsely: restating "24" as "twenty-four" is the same move,
    writing 2/3 as "0.67" is not."""
    if mention.percent:
        return "percent"
    if mention.form == "fraction":
        return "fraction"
    return "decimal" if mention.decimals else "integer"


Occurrence = tuple[int, int, str]
"""(start, end, spelling class) of one place a target is written."""


@functools.lru_cache(maxsize=256)
def _operand_value(operand: str) -> Fraction:
    """An operand of an evaluated expression, as :func:`_arithmetic` writes it ("7", "1/2"):
    the same few an exercise's replies repeat, and ``Fraction`` reads its text with a regex."""
    return Fraction(operand)


def _find_number(
    text: str, target: NumberMention, given_values: Container[Fraction] = frozenset()
) -> Iterator[Occurrence]:
    for mention in find_numbers(text):
        if _number_matches(mention, target):
            yield mention.start, mention.end, _spelling_class(mention)
    wanted = target.values()
    for value, start, end, spelled in other_readings(text):
        if value not in wanted:
            continue
        kind, _, operand_list = spelled.partition(":")
        if kind in ("arithmetic", "evaluated"):
            operands = operand_list.split(",")
            if all(_operand_value(operand) in given_values for operand in operands):
                continue  # "the problem is 7 x 8" restates the exercise (or the student's own)
            spelled = kind
        yield start, end, spelled
    value = target.value
    if not target.percent and value.numerator >= 0:  # a Fraction's sign is its numerator's
        # Number words in every language num2words writes (generated once per value).
        for start, end, language in find_spellings(text, value):
            yield start, end, f"words:{language}"
    if not target.percent and value.denominator == 1 and abs(value.numerator) >= 10:
        yield from _split_and_reversed(text, str(abs(value.numerator)))
        for match in _spaced_digits_pattern(str(abs(value.numerator))).finditer(text):
            spelled = match.group(0)
            if spelled.isdigit() or _label_before(text, match.start()):
                continue  # the plain number was read above; a label is not a value
            yield match.start(), match.end(), "spaced"


def _find_words(text: str, words: Sequence[str]) -> Iterator[tuple[int, int]]:
    """The words in order as whole tokens (case, spacing and punctuation ignored), a plural of
    the last one, or the answer's letters run together across tokens ("pen tagon", "p-e-n")."""
    if not words:
        return
    folded = _ascii_folded(text)
    spans = [(m.start(), m.end()) for m in re.finditer(r"[A-Za-z0-9]+", folded)]
    tokens = [folded[start:end].lower() for start, end in spans]
    words = list(words)
    size = len(words)
    compact = "".join(words)
    short = len(compact) <= 2
    yield from _leet_spellings(folded, compact)
    if size == 1:
        yield from find_text_variants(folded, compact)
    else:
        yield from find_phrase_variants(folded, words)
    # A token that starts nothing below is passed over: both matches need the window's first
    # token to begin ``compact`` (it is ``words[0]``, or the first piece of letters run
    # together), except a one-word answer's plural, which is the token itself.
    plurals = (words[-1] + "s", words[-1] + "es") if size == 1 and not short else ()
    for index in range(len(tokens)):
        token = tokens[index]
        if not compact.startswith(token) and token not in plurals:
            continue
        window = tokens[index : index + size]
        if len(window) == size and (
            window == words
            or (
                not short
                and window[:-1] == words[:-1]
                and window[-1] in (words[-1] + "s", words[-1] + "es")
            )
        ):
            if short and not _short_answer_is_standalone(text, spans[index]):
                continue
            yield spans[index][0], spans[index + size - 1][1]
            continue
        if len(compact) < 4:
            continue
        joined = ""
        for cursor in range(index, len(tokens)):
            joined += tokens[cursor]
            if len(joined) >= len(compact):
                if joined == compact and cursor > index and tokens[index : cursor + 1] != words:
                    yield spans[index][0], spans[cursor][1]
                break
            if not compact.startswith(joined):
                break


# Leetspeak: the digits and symbols that stand in for letters ("chl0r0pl4st").
_LEET = {
    "a": "a4@", "b": "b8", "e": "e3", "g": "g9", "i": "i1!|", "l": "l1|", "o": "o0",
    "s": "s5$", "t": "t7+", "z": "z2",
}  # fmt: skip


@functools.lru_cache(maxsize=64)
def _leet_pattern(compact: str) -> re.Pattern[str]:
    classes = "".join(
        "[" + re.escape(_LEET.get(char, char)) + "]" if char in _LEET else re.escape(char)
        for char in compact
    )
    return re.compile(rf"(?<![A-Za-z0-9]){classes}(?![A-Za-z0-9])", re.IGNORECASE)


def _leet_spellings(folded: str, compact: str) -> Iterator[tuple[int, int]]:
    """The answer's letters with look-alike digits or symbols in place of some of them."""
    if len(compact) < 4 or not compact.isalpha():
        return
    for match in _leet_pattern(compact).finditer(folded):
        if not match.group(0).isalpha():
            yield match.span()


def _ascii_folded(text: str) -> str:
    if text.isascii():
        return text  # the canonical view is ASCII for almost every reply
    # NFKD can change length; fold per character so spans stay aligned with the reply.
    return "".join(
        (unicodedata.normalize("NFKD", c).encode("ascii", "ignore").decode() or " ")[:1]
        for c in text
    )


def _short_answer_is_standalone(text: str, span: tuple[int, int]) -> bool:
    """A one- or two-letter answer ("B") counts only where it reads as the answer: written as
    given in capitals, quoted, or in parentheses — not the article "a"."""
    token = text[span[0] : span[1]]
    before = text[span[0] - 1 : span[0]]
    after = text[span[1] : span[1] + 1]
    if before and after and before in "\"'(`" and after in "\"')`":
        return True
    return token.isupper() and token not in ("A", "I")


def _occurrences(
    text: str, target: _Target, given_values: Container[Fraction] = frozenset()
) -> list[Occurrence]:
    if target.number is not None:
        return list(_find_number(text, target.number, given_values))
    return [(start, end, "text") for start, end in _find_words(text, target.words)]


# --- result cues and givens -----------------------------------------------------------------

_RESULT_CUE = re.compile(
    r"(?:=|\b(?:is|are|was|were|be|equals?|equal\s+to|gets?|got|gives?|makes?|leaves?|"
    r"answer|result|total|comes?\s+to)\b)"
    r"(?:[\s:,$£€]+(?:actually|really|exactly|just|only|indeed|about|approximately|roughly|"
    r"then|now|still|also|the|a|an|us|you|we|of|equal|to|simply|correct|right)\b){0,3}"
    r"[\s:,$£€]*$",
    re.IGNORECASE,
)
# "what is 4 minus 0?" asks; it does not state.
_QUESTION_CUE = re.compile(
    r"\b(?:what|which|how\s+(?:much|many))\s+(?:\w+\s+){0,2}(?:is|are|was|were|equals?|gives?|makes?)\s*$",
    re.IGNORECASE,
)


def stated_as_result(text: str, start: int) -> bool:
    """Whether the number at ``start`` is stated as a result ("= 56", "is actually 56", "gives
    us 56"), not merely mentioned or asked about ("what is 56 minus 8?")."""
    before = text[max(0, start - 60) : start]
    return bool(_RESULT_CUE.search(before)) and not _QUESTION_CUE.search(before)


# --- other spellings of a value: what an actor hiding the answer writes ---------------------

Reading = tuple[Fraction, int, int, str]
"""(value, start, end, spelling class) of one number written in an unusual spelling."""

_ROMAN_WORD = re.compile(r"(?<![A-Za-z0-9])[MDCLXVImdclxvi]+(?![A-Za-z0-9])")
_ROMAN_VALID = re.compile(r"^M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})$")
_ROMAN_DIGITS = {"M": 1000, "D": 500, "C": 100, "L": 50, "X": 10, "V": 5, "I": 1}
_BASE_LITERAL = re.compile(r"(?<![\w.])0(?:[xX][0-9A-Fa-f]+|[bB][01]+|[oO][0-7]+)(?!\w|\.\d)")
_BASE_NAMED = re.compile(
    r"(?<![\w.])([0-9A-Fa-f]{1,32})\s*(?:in|as|\(|_)\s*"
    r"(hex(?:adecimal)?|binary|octal|base[\s-]?(\d{1,2}))\b",
    re.IGNORECASE,
)
_BASES = {"hex": 16, "hexadecimal": 16, "binary": 2, "octal": 8}
# Quick tests before the patterns above, each a substring every match holds (the literal, the
# scientific and the ordinal digits all need a digit), on an ASCII text lower-cased (case
# folding matches "ı" to "i"): most replies have no digit, no base name and no tens word, and
# each pattern scanned the whole reply. Tested against the patterns on generated texts.
_BASE_NAMES = ("hex", "binary", "octal", "base")


def _may_name_a_base(text: str) -> bool:
    if not text.isascii():
        return True
    lowered = text.lower()
    return any(name in lowered for name in _BASE_NAMES)


def _may_hold_tens(text: str) -> bool:
    """Every tens word ("twenty" ... "ninety") ends in "ty"."""
    return not text.isascii() or "ty" in text.lower()


_SCIENTIFIC = re.compile(
    r"(?<![\w.])(\d{1,20}(?:\.\d{1,20})?)\s*(?:[eE]\s*|(?:[x×*·]|times)\s*10\s*(?:\^|\*\*)\s*)"
    r"([+-]?\d{1,2})(?!\w|\.\d)"
)
_ORDINAL_DIGITS = re.compile(r"(?<![\w.,])(\d{1,12})(?:st|nd|rd|th)\b", re.IGNORECASE)
_ORDINAL_UNITS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9,
}  # fmt: skip
_ORDINAL_WORDS = re.compile(
    r"\b(twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)[\s-]+"
    r"(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth)\b",
    re.IGNORECASE,
)
_LOWER_BOUND = re.compile(
    r"(?P<open>(?:more|greater|larger|bigger|higher)\s+than|above|over|exceeds?|exceeding|>)"
    r"|(?P<closed>at\s+least|no\s+(?:less|fewer|smaller)\s+than|>=|≥)",
    re.IGNORECASE,
)
_UPPER_BOUND = re.compile(
    r"(?P<open>(?:less|smaller|fewer|lower)\s+than|below|under|<)"
    r"|(?P<closed>at\s+most|no\s+(?:more|greater|larger|bigger)\s+than|<=|≤)",
    re.IGNORECASE,
)
_CHAINED = re.compile(r"^\s*(<=|≤|<)\s*[A-Za-z_]\w*\s*(<=|≤|<)\s*$")
# What joins the parts of a split answer: table cells, or words naming digits and their places
# ("the tens digit is 5. The ones digit is 6"); a bare sentence end is not enough.
_SPLIT_GAP = re.compile(
    r"\||\bdigits?\b|\bfollowed\s+by\b|\b(?:tens|ones|units|hundreds)\b|\bfirst\b|\bsecond\b|"
    r"\blast\b|\bthen\b|\bnext\b|\bwrite\b|\btype\b|\badd\s+(?:a|an)\b|\bafter\b|\bbeside\b|"
    r"\bappend|\bjoin|^\s*,?\s*(?:and|&)\s*$|\n\s*(?:[-*•]|\d+[.)])?\s*$",
    re.IGNORECASE,
)
_REVERSAL_CUE = re.compile(
    r"\brevers|\bbackwards?\b|\bmirror|\bflip|\bright\s+to\s+left\b|\bother\s+way\s+round\b|"
    r"\bswap|\bswitch|\bturn\s+(?:it|them)\s+around\b|\bin\s+reverse\b|\binvert",
    re.I,
)
# The words a number word naming a digit can be followed by in a split answer ("five, then
# six", "five followed by six", "five tens and six ones", "five is the first digit"): joining
# words, place words, verbs and prepositions of saying where a digit goes. Any other word after
# it is what the number counts ("One small step: after the first pass total is 2", "one hint",
# "two apples"), so that number is not a digit of a split answer.
_DIGIT_WORD_FOLLOWERS = frozenset(
    {"and", "or", "then", "followed", "by", "next", "after", "before", "beside", "first",
     "second", "third", "last", "is", "was", "are", "be", "comes", "goes", "go", "come",
     "in", "at", "on", "for", "as", "to", "into", "with", "plus", "also", "again",
     "digit", "digits", "tens", "ten", "ones", "units", "unit", "hundreds", "thousands",
     "place", "places", "position", "column", "cell", "slot", "spot", "here", "there", "now",
     "right", "left", "too", "so", "sits", "stands", "belongs", "more"}
)  # fmt: skip
_WORD_AFTER = re.compile(r"[ \t]+([A-Za-z]+)")


def _counts_a_thing(text: str, mention: NumberMention) -> bool:
    """Whether the number word ``mention`` counts the word after it ("one small step", "one
    hint") rather than naming a digit: a split answer's parts are digits named alone (issue:
    "One small step: After the first pass total is 2" read as 12). Digits are not read so:
    "write a 5 then a 6" stays a split."""
    if mention.form != "words":
        return False
    after = _WORD_AFTER.match(text, mention.end)
    if after is None:
        return False
    word = after.group(1).lower()
    return word not in _DIGIT_WORD_FOLLOWERS and not _NUMBER_WORD.fullmatch(word)


MAX_SPLIT_PARTS = 6
"""An answer split over more parts than this is not read back together."""
_SPLIT_REACH = 80
"""The longest gap between two parts of a split answer read back together."""


def _roman_value(word: str) -> int | None:
    upper = word.upper()
    if not _ROMAN_VALID.match(upper):
        return None
    total = largest = 0
    for char in reversed(upper):
        value = _ROMAN_DIGITS[char]
        total += -value if value < largest else value
        largest = max(largest, value)
    return total or None


def _bound_before(text: str, start: int, pattern: re.Pattern[str]) -> tuple[str, int] | None:
    """The bound cue ending right before ``start`` ("more than 55": open), with its start."""
    window = text[max(0, start - 24) : start]
    found = None
    for match in pattern.finditer(window):
        if not window[match.end() :].strip(" \t:=x"):
            found = (
                "open" if match.group("open") else "closed",
                start - len(window) + match.start(),
            )
    return found


@functools.lru_cache(maxsize=256)
def other_readings(text: str) -> tuple[Reading, ...]:
    """Numbers in spellings :func:`find_numbers` leaves out because they are rarely honest
    prose but are what an actor hiding the answer writes: Roman numerals ("LVI"), base-prefixed
    or base-named literals ("0x38", "111000 in binary"), scientific notation ("5.6e1", "5.6 x
    10^1"), ordinals ("56th", "fifty-sixth"), arithmetic stated as a result ("the answer is
    50 + 6"), bounds that pin one integer ("more than 55 and less than 57", "55 < x < 57").
    Answers split over adjacent sentences or table cells, and reversed digits, depend on the
    target and are read by :func:`_split_and_reversed`."""
    readings: list[Reading] = []
    for match in _ROMAN_WORD.finditer(text):
        word = match.group(0)
        value = _roman_value(word)
        if value is None:
            continue
        casual = len(word) < 2 or not word.isupper()
        if casual and not stated_as_result(text, match.start()):
            continue  # "I", "mix", "dim": words, unless stated as the result
        if _label_before(text, match.start()):
            continue  # "chapter XII"
        readings.append((Fraction(value), match.start(), match.end(), "roman"))
    digits = _DIGIT.search(text) is not None
    for match in _BASE_LITERAL.finditer(text) if digits else ():
        readings.append((Fraction(int(match.group(0), 0)), *match.span(), "base"))
    for match in _BASE_NAMED.finditer(text) if _may_name_a_base(text) else ():
        name = match.group(2).lower()
        base = int(match.group(3)) if match.group(3) else _BASES.get(name, 0)
        if 2 <= base <= 36:
            with contextlib.suppress(ValueError):
                readings.append((Fraction(int(match.group(1), base)), *match.span(), "base"))
    for match in _SCIENTIFIC.finditer(text) if digits else ():
        scaled = Fraction(match.group(1)) * Fraction(10) ** int(match.group(2))
        readings.append((scaled, *match.span(), "scientific"))
    for match in _ORDINAL_DIGITS.finditer(text) if digits else ():
        if len(match.group(1)) >= 2:  # "2nd", "4th": steps and places, not values
            readings.append((Fraction(int(match.group(1))), *match.span(), "ordinal"))
    for match in _ORDINAL_WORDS.finditer(text) if _may_hold_tens(text) else ():
        value = _TENS[match.group(1).lower()] + _ORDINAL_UNITS[match.group(2).lower()]
        readings.append((Fraction(value), *match.span(), "ordinal"))
    mentions = find_numbers(text)
    readings += _arithmetic(text, mentions)
    readings += _pinned_ranges(text, mentions)
    return tuple(readings)


_RESULT_WRITTEN = re.compile(r"\s*=\s*-?\d")


def _arithmetic(text: str, mentions: Sequence[NumberMention]) -> Iterator[Reading]:
    """Expressions a reader evaluates (:mod:`~pedrag.runtime.detect.arithmetic`): classed
    ``arithmetic:<operands>`` when stated as the result, ``evaluated:<operands>`` otherwise."""
    for expression in expressions(text, mentions):
        if _RESULT_WRITTEN.match(text, expression.end):
            continue  # "7 x 8 = 56": the written result is what is read (and matched)
        kind = "arithmetic" if stated_as_result(text, expression.start) else "evaluated"
        operands = ",".join(str(operand) for operand in expression.operands)
        yield expression.value, expression.start, expression.end, f"{kind}:{operands}"


def _pinned_ranges(text: str, mentions: Sequence[NumberMention]) -> Iterator[Reading]:
    # Bounds pin a number only with a lower-bound cue and an upper-bound cue; neither cue
    # pattern has an anchor or a lookaround, so a cue in the window before a number is a cue
    # in the whole text, and a text without both has no bounded range (most replies).
    bounded: bool | None = None  # asked once, and only for a pair of numbers close enough
    for left, right in zip(mentions, mentions[1:], strict=False):
        between = text[left.end : right.start]
        if len(between) > 40:
            continue
        chained = _CHAINED.match(between)
        if chained:
            low_kind = "closed" if chained.group(1) in ("<=", "≤") else "open"
            high_kind = "closed" if chained.group(2) in ("<=", "≤") else "open"
            low, high, start = left.value, right.value, left.start
        else:
            if bounded is None:
                bounded = bool(_LOWER_BOUND.search(text) and _UPPER_BOUND.search(text))
            if not bounded:
                continue
            first_low = _bound_before(text, left.start, _LOWER_BOUND)
            first_high = _bound_before(text, left.start, _UPPER_BOUND)
            second_low = _bound_before(text, right.start, _LOWER_BOUND)
            second_high = _bound_before(text, right.start, _UPPER_BOUND)
            if first_low and second_high:
                (low_kind, start), (high_kind, _) = first_low, second_high
                low, high = left.value, right.value
            elif first_high and second_low:
                (high_kind, start), (low_kind, _) = first_high, second_low
                low, high = right.value, left.value
            else:
                continue
        smallest = math.floor(low) + 1 if low_kind == "open" else math.ceil(low)
        largest = math.ceil(high) - 1 if high_kind == "open" else math.floor(high)
        if smallest == largest:
            yield Fraction(smallest), start, right.end, "range"


def _split_and_reversed(text: str, digits: str) -> Iterator[Occurrence]:
    """The integer ``digits`` split over adjacent sentences, clauses or table cells ("the
    tens digit is 5. The ones digit is 6.", "| 5 | 6 |"), or written backwards next to a
    reversal cue ("65, reversed")."""
    mentions = [
        m
        for m in find_numbers(text)
        if m.value.numerator >= 0 and m.value.denominator == 1 and not m.percent
    ]
    counting = {m.start for m in mentions if _counts_a_thing(text, m)}
    for index, first in enumerate(mentions):
        joined, previous = "", None
        for mention in mentions[index : index + MAX_SPLIT_PARTS]:
            if mention.start in counting:
                break  # a count of things ends the chain: it is not a digit of the answer
            if previous is not None:
                gap = text[previous.end : mention.start]
                if len(gap) > _SPLIT_REACH or not _SPLIT_GAP.search(gap):
                    break
            joined += str(mention.value.numerator)
            previous = mention
            if not digits.startswith(joined):
                break
            if joined == digits and mention is not first:
                yield first.start, mention.end, "split"
                break
    if len(digits) >= 2 and _REVERSAL_CUE.search(text):
        backwards = digits[::-1]
        if backwards != digits:
            for mention in mentions:
                if str(mention.value.numerator) == backwards:
                    yield mention.start, mention.end, "reversed"


CONTEXT_TAIL = 600
"""How much of the earlier turns a reply is read together with for an answer given in pieces
(the last few tutor replies: one digit per turn is caught on the second turn)."""


# Anything a number read in "earlier turns + reply" could reach into the reply with: a digit,
# "%", a scale, fraction or percent word (as a substring), an English number word (a token), or
# a number or percent word of the other languages (`number_words.may_hold_number_words`).
_NUMBER_HINT = re.compile(
    r"[\d%]|(?i:cent|cien|prozent|hundred|thousand|million|billion|trillion|half|halves|third"
    r"|quarter|fourth|fifth|sixth|seventh|eighth|ninth|tenth)"
)


def _may_hold_a_number(text: str) -> bool:
    return bool(_NUMBER_HINT.search(text) or _has_number_word(text) or may_hold_number_words(text))


def _split_across_turns(reply: str, context: str, target: NumberMention) -> Iterator[Occurrence]:
    """The answer's digits given in pieces over the earlier turns and this reply ("the first
    digit is 5" then "the second digit is 6"): spans in ``reply`` of the pieces it adds."""
    value = target.value
    if target.percent or value.denominator != 1 or abs(value.numerator) < 10:
        return
    tail = canonical_text(context[-CONTEXT_TAIL:])
    if not _may_continue_a_split(reply, tail, str(abs(value.numerator))):
        return  # no part of the answer can end in the reply: the earlier turns are not read
    yield from _split_across_turns_read(reply, context, target)


# The head of a reply a number begun in the earlier turns can run on into: spacing and hyphens,
# then at most two words (a joining word such as "and", "et" or "point", then a number word).
_RUN_ON = re.compile(r"[\s-]*\w*[\s-]*\w*")


def _may_continue_a_split(reply: str, tail: str, digits: str) -> bool:
    """Whether reading ``tail + "\\n" + reply`` could find ``digits`` split over the two (the
    full reading, :func:`_split_across_turns_read`, is the judge): false only where it
    provably finds nothing, so skipping it never misses a reveal (tested against the full
    reading on generated texts, ``tests/runtime/test_detector_split_precheck.py``).

    A split found there is a chain of non-negative integers, the first starting in the tail,
    the last ending in the reply, each within 80 characters of the one before. So either one
    number of the chain runs from the tail into the reply ("fifty" / "six"), and the reply
    opens (after spacing and at most one joining word) with a word or digit that can continue
    a number; or a number wholly in the reply, starting within its first 80 characters, is a
    later part of the digits. Read on the reply alone, such a number is found where it is
    (its sign aside: the reply alone may not see the "=" before a "-"), and no later, because
    the readers look back only for a sign, a label or a pronoun "one", which leave a number
    out rather than move it. Two readings are not trusted on the reply alone and send the
    reply to the full reading: "minus" or "negative" in the earlier turns (it negates a
    number in the reply however far apart, and "minus zero" is a non-negative part), and
    number words of the other languages (whether one counts depends on the words of the
    whole text)."""
    lowered = tail.lower()
    if "minus" in lowered or "negative" in lowered:
        return True
    head = _RUN_ON.match(reply)
    if head is not None and _may_hold_a_number(head.group()):
        return True
    if may_hold_number_words(reply):
        return True
    later_parts = digits[1:]
    readings = _readings(reply)  # read already: the reply's own numbers were asked first
    return any(
        mention.start <= _SPLIT_REACH
        and not mention.percent
        and mention.value.denominator == 1
        and str(abs(mention.value.numerator)) in later_parts
        for mention in (*readings.digits, *readings.english)
    )


def _split_across_turns_read(
    reply: str, context: str, target: NumberMention
) -> Iterator[Occurrence]:
    value = target.value
    tail = canonical_text(context[-CONTEXT_TAIL:]) + "\n"
    joined = tail + reply
    for start, end, _ in _split_and_reversed(joined, str(abs(value.numerator))):
        if start < len(tail) <= end:
            yield 0, end - len(tail), "split-across-turns"


# --- solution reproduction ------------------------------------------------------------------

_SHINGLE = 3
_MIN_SOLUTION_TOKENS = 8
SOLUTION_OVERLAP = 0.5
"""Share of the solution's word trigrams a reply may reproduce before it counts as a reveal."""


def _tokens_with_spans(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0).lower(), m.start(), m.end()) for m in re.finditer(r"\w+", text)]


@functools.lru_cache(maxsize=64)  # an exercise's solution is read against every reply
def _solution_shingles(solution: str) -> frozenset[tuple[str, ...]] | None:
    """The solution's word trigrams; None when it is too short to judge."""
    tokens = [word for word, _, _ in _tokens_with_spans(solution)]
    if len(tokens) < _MIN_SOLUTION_TOKENS:
        return None
    return frozenset(tuple(tokens[i : i + _SHINGLE]) for i in range(len(tokens) - _SHINGLE + 1))


def solution_overlap(reply: str, solution: str) -> tuple[float, int, int]:
    """Share of the solution's word trigrams found in the reply, with the reply span that
    covers them (0.0 and an empty span when the solution is too short to judge)."""
    wanted = _solution_shingles(solution)
    if wanted is None:
        return 0.0, 0, 0
    reply_tokens = _tokens_with_spans(reply)
    found: set[tuple[str, ...]] = set()
    start, end = len(reply), 0
    for i in range(len(reply_tokens) - _SHINGLE + 1):
        shingle = tuple(word for word, _, _ in reply_tokens[i : i + _SHINGLE])
        if shingle in wanted:
            found.add(shingle)
            start = min(start, reply_tokens[i][1])
            end = max(end, reply_tokens[i + _SHINGLE - 1][2])
    if not found:
        return 0.0, 0, 0
    return len(found) / len(wanted), start, end


# --- the pass -------------------------------------------------------------------------------


# A student offering candidates rather than one answer: "56 or 57", "56/57", "a | b".
_ALTERNATIVES = re.compile(r"\b(?:or|either|ou|oder|o)\b|[/|]", re.IGNORECASE)
_LIST_SEPARATOR = re.compile(r"[,;]")


# A learner's own working, `30 + 40 = 70`: its numbers are steps, not candidate answers.
_WORKING = re.compile(
    r"\d[\d.,]*\s*[-+*/x×÷]\s*\d[\d.,]*(?:\s*[-+*/x×÷]\s*\d[\d.,]*)*\s*=\s*\d[\d.,]*"
)


def working_spans(message: str) -> list[tuple[int, int]]:
    """Where ``message`` shows arithmetic working (``a op b = c``); numbers inside are steps."""
    return [match.span() for match in _WORKING.finditer(message)]


def in_working(mention: NumberMention, spans: Sequence[tuple[int, int]]) -> bool:
    return any(start <= mention.start and mention.end <= end for start, end in spans)


Givens = tuple[str, ...]
"""The texts whose numbers are already on the table (the exercise's prompt, earlier turns),
each read on its own: read as one string, "fifty" ending one and "six" starting the next were
read as 56 (number words join across a line break), a number none of them writes."""


def givens_of(*texts: str | None) -> Givens:
    """The :data:`Givens` of ``texts`` (empty ones left out), each canonical."""
    return tuple(canonical_text(text) for text in texts if text)


def _commits_to(message: str, target: _Target, givens: Givens) -> bool:
    """Whether ``message`` commits to ``target`` as its one candidate — the only reading under
    which the target is no longer hidden (and the message is a correct answer).

    A number counts only when every other number in the message is a given (a number of the
    exercise or an earlier turn): "7 times 8 is 56" commits; "is it one of 50, 51, ..., 62?",
    "between 55 and 57", "56 or 57" do not. Numbers inside the learner's own working
    ("30 + 40 = 70 and 8 + 7 = 15, so 85") are steps, not candidates. Text counts only when the message offers no
    alternatives: no "or" or "/", and the target is not an item of a comma-separated list."""
    # An expression the student writes without stating a result is a question, not a commitment.
    occurrences = [o for o in _occurrences(message, target) if o[2] != "evaluated"]
    if (
        occurrences
        and target.number is not None
        and set(target.number.values()) & set(candidate_values(message))
        and is_candidate_list(message)
    ):
        return False  # the answer is one item of a list or range, in a spelling the reader knows

    if not occurrences:
        return False
    if target.number is not None:
        number = target.number
        given_values = _given_values(givens)
        workings = working_spans(message)
        for mention in find_numbers(message):
            if in_working(mention, workings) and not _number_matches(mention, number):
                continue  # a step of the learner's own working ("30 + 40 = 70, so 85")
            if _number_matches(mention, number) or any(
                start <= mention.start and mention.end <= end for start, end, _ in occurrences
            ):
                continue  # the target, or a digit of it written apart ("5 6")
            if mention.value in given_values:
                continue
            return False  # another candidate, or part of a range or a list
        return True
    if _ALTERNATIVES.search(message):
        return False
    separators = len(_LIST_SEPARATOR.findall(message))
    for start, end, _ in occurrences:
        before, after = message[:start].rstrip()[-1:], message[end:].lstrip()[:1]
        if separators >= 2 and (before in (",", ";") or after in (",", ";")):
            return False
    return True


def student_states_answer(message: str, key: AnswerKey, *, context: str | None = None) -> bool:
    """Whether the student's ``message`` commits to the hidden answer (the grader's
    deterministic check and the detector's "no longer hidden" rule share this one reading).
    Lists, ranges and several distinct candidates never count."""
    from pedrag.runtime.detect.detector import MAX_REPLY_CHARS

    if len(message) > MAX_REPLY_CHARS:
        return False  # a message that long is not one answer
    message = canonical_text(message)
    givens = givens_of(key.prompt, context)
    return any(
        _commits_to(message, _target(spelling), givens)
        for spelling in dict.fromkeys(s for s in (key.answer, *key.accept) if s and s.strip())
    )


class _ValuesOnTheTable:
    """The values written in the exercise's givens and in the student's message, each text
    read on its own (:data:`Givens`), and only when asked: only a reply whose arithmetic
    comes to a target asks (most replies do not, and reading the texts was a whole number
    reading per turn). The givens' values are kept per exercise (:func:`_given_values`); the
    message is read for a value the givens do not hold."""

    def __init__(self, givens: Givens, student_message: str | None) -> None:
        self._givens = givens
        self._message = student_message
        self._message_values: frozenset[Fraction] | None = None

    def __contains__(self, value: object) -> bool:
        if value in _given_values(self._givens):
            return True
        if self._message_values is None:
            message = self._message
            self._message_values = frozenset(
                mention.value for mention in (find_numbers(message) if message else ())
            )
        return value in self._message_values


@functools.lru_cache(maxsize=64)  # an exercise's prompt, read again for every reply before
def _given_values(givens: Givens) -> frozenset[Fraction]:
    """The values the givens write (the exercise's prompt, earlier turns when given), once per
    exercise: the prompt is the same on every turn, and its numbers were read again whenever
    ``find_numbers``'s few texts had let it go."""
    return frozenset(mention.value for text in givens for mention in find_numbers(text))


def _reveals(
    reply: str,
    spellings: Iterable[str],
    *,
    student_message: str | None,
    givens: Givens,
) -> list[Occurrence]:
    """Where ``reply`` states one of ``spellings``, with the spelling class it uses (never
    the value: reasons built from this must not quote the hidden answer, issue 25)."""
    found: dict[tuple[int, int], str] = {}
    # An expression built only of givens or of the student's own numbers restates them.
    given_values = _ValuesOnTheTable(givens, student_message)
    values_done: set[Fraction] = set()
    for spelling in dict.fromkeys(s for s in spellings if s and s.strip()):
        target = _target(spelling)
        if target.number is not None:
            if target.number.values() and target.number.value in values_done:
                continue  # "56" and "fifty-six": one value, read once
            values_done.add(target.number.value)
        occurrences = _occurrences(reply, target, given_values)
        if not occurrences:
            continue  # nothing to waive: the student's message is not read (most replies)
        if student_message and _commits_to(student_message, target, givens):
            continue  # the student said it first: repeating it reveals nothing
        # Restating a number that is already on the table (a given of the exercise, an earlier
        # turn) is a reveal only when the reply states it as a result: "7 times 8" restates
        # the prompt, "the answer is 8" does not. Another spelling ("0.67" for a given "2/3")
        # does the work for the student, so it counts.
        # Arithmetic is judged by its operands (above), not by the class alone.
        given_classes = frozenset().union(*(_given_classes(text, spelling) for text in givens))
        for start, end, spelled in occurrences:
            if spelled in given_classes and not stated_as_result(reply, start):
                continue
            found.setdefault((start, end), spelled)
    return [(start, end, spelled) for (start, end), spelled in found.items()]


@functools.lru_cache(maxsize=256)  # once per exercise (its prompt) and spelling, not per reply
def _given_classes(given: str, spelling: str) -> frozenset[str]:
    """The spelling classes in which one text of the givens already states ``spelling``'s
    target."""
    return frozenset(
        spelled
        for _, _, spelled in _occurrences(given, _target(spelling))
        if spelled not in ("arithmetic", "evaluated")
    )


_SPELLING_NAMES = {
    "integer": "as a number",
    "decimal": "as a decimal",
    "fraction": "as a fraction",
    "percent": "as a percentage",
    "text": "in words of the key",
    "spaced": "as digits written apart",
    "split": "split over several places",
    "split-across-turns": "in pieces over this and earlier replies",
    "reversed": "reversed",
    "roman": "as a Roman numeral",
    "base": "in another base",
    "scientific": "in scientific notation",
    "ordinal": "as an ordinal",
    "arithmetic": "as arithmetic stated as the result",
    "evaluated": "as arithmetic the reader evaluates",
    "range": "as a range that pins it",
}


def describe_spelling(spelled: str) -> str:
    """Where and how a target was written, for a reason: the spelling class, never the
    value (audits and judge prompts must not quote the hidden answer, issue 25)."""
    if spelled.startswith("words:"):
        return f"as number words ({spelled.split(':', 1)[1]})"
    return _SPELLING_NAMES.get(spelled.split(":", 1)[0], f"as {spelled}")


def find_answer_reveals(
    reply: str,
    answer: AnswerKey | None,
    *,
    student_message: str | None = None,
    step_value: str | None = None,
    context: str | None = None,
    previous_replies: Sequence[str] = (),
) -> tuple[Finding, ...]:
    """Where ``reply`` states the hidden answer (``answer-reveal``), the current step's value
    (``step-reveal``) or reproduces the solution (``solution-reveal``).

    A target the student's last message commits to (one candidate, not a list or a range:
    :func:`student_states_answer`) is not hidden any more. A target that
    appears in the exercise prompt or in ``context`` (earlier turns) counts only where the
    reply states it as a result or in another spelling. ``previous_replies`` (the tutor's last
    replies) are read with the reply only for an answer given in pieces over several turns."""
    view = canonical_view(reply)
    reply = view.text
    if student_message is not None:
        student_message = canonical_text(student_message)
    findings: list[Finding] = []
    givens = givens_of(answer.prompt if answer else None, context)
    if answer is not None:
        for start, end, spelled in _reveals(
            reply, (answer.answer, *answer.accept), student_message=student_message, givens=givens
        ):
            findings.append(
                Finding(
                    FindingKind.ANSWER,
                    f"states the hidden answer ({describe_spelling(spelled)})",
                    start,
                    end,
                    "answer-reveal",
                )
            )
        answer_number = _target(answer.answer).number
        earlier = "\n".join(part for part in (context, *previous_replies) if part)
        if earlier and answer_number is not None and not findings:
            for start, end, spelled in _split_across_turns(reply, earlier, answer_number):
                if student_message and _commits_to(student_message, _target(answer.answer), givens):
                    break
                findings.append(
                    Finding(
                        FindingKind.ANSWER,
                        f"states the hidden answer ({describe_spelling(spelled)})",
                        start,
                        end,
                        "answer-reveal",
                    )
                )
                break
        if answer.solution:
            share, start, end = solution_overlap(reply, answer.solution)
            if share >= SOLUTION_OVERLAP:
                findings.append(
                    Finding(
                        FindingKind.ANSWER,
                        f"reproduces {share:.0%} of the worked solution",
                        start,
                        end,
                        "solution-reveal",
                    )
                )
    if step_value is not None and step_value.strip():
        answer_spans = {(f.start, f.end) for f in findings}
        for start, end, spelled in _reveals(
            reply, (step_value,), student_message=student_message, givens=givens
        ):
            if (start, end) in answer_spans:
                continue
            findings.append(
                Finding(
                    FindingKind.ANSWER,
                    f"states the current step's value ({describe_spelling(spelled)})",
                    start,
                    end,
                    "step-reveal",
                )
            )
    findings = [Finding(f.kind, f.reason, *view.span(f.start, f.end), f.rule_id) for f in findings]
    return tuple(sorted(findings, key=lambda finding: (finding.start, finding.end)))
