"""The answer reader: what a learner's message commits to, and whether it equals the key.

Runtime stage 2 (the grader; the detector's candidate-list check is meant to call it too). Takes
a message as plain text and, to grade, an exercise's key (answer, ``accept:`` spellings,
``tolerance:``, ``units:``, the prompt's givens and the worked solution's steps); gives a
:class:`Reading` — the one answer the message commits to (as the learner wrote it), whether it
was tentative ("is it 56?"), or ``None`` and why it commits to nothing — and :func:`equivalent`,
the equivalence a maths teacher accepts.

Why one module: grading, the attempt rule and the detector's list check must read a message the
same way, or a learner can be told "That's right: 54" for a number they never wrote. The rules:

- the *final stated result* is the answer ("28 doubled is 56" -> 56; "2x = 8 so x = 4" -> 4):
  operands of a step are not answers, a step's result is superseded by a later one;
- a negated mention ("not 56", "I don't think it's 56") and a question about the term
  ("what is a chloroplast?") commit to nothing; a tentative answer ("is it 56?") is graded;
- two or more bare candidates — a list or a range, in any spelling the reader knows (digits,
  words, Roman numerals, hex, scientific notation) — commit to nothing.

Numbers are read after the message's number words are turned into digits by ``text2num`` (the
library's ``alpha2digit``); fractions, decimals with a point or a comma, signs (including
U+2212), percentages and scientific notation are read exactly as :class:`~fractions.Fraction`;
expressions (``x = 4``, ``2(x+3)``) are compared with SymPy. Text answers are compared with
``rapidfuzz`` at a length-dependent edit distance, plural and case folded.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

from rapidfuzz.distance import Levenshtein
from text_to_num import alpha2digit, text2num

from pedrag.runtime.detect.canonical import canonical_text
from pedrag.runtime.detect.folding import ascii_fold

MAX_TEXT_ANSWER_WORDS = 5  # a longer message without the key is a remark, not an answer
MAX_MESSAGE_CHARS = 4_000  # longer messages are read only up to here (a turn's text is capped)
MAX_EXPRESSION_CHARS = 80
MAX_EXPONENT = 64
#: The most binary digits an expression's exact value may need before SymPy is asked for it.
#: A learner's "7^7^9" is 7^40353607: computing it hung the turn's thread.
MAX_VALUE_BITS = 4_096

# -- the canonical text ------------------------------------------------------------------------

_DASHES = str.maketrans(
    {
        "\u2212": "-",
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": " - ",
        "\u00d7": "*",
        "\u22c5": "*",
        "\u00f7": "/",
        "\u2044": "/",
    }
)
_SOFT_HYPHEN = re.compile(r"(?<=[^\W\d_])\u00ad(?=[^\W\d_])")
# A superscript is an exponent, not a digit: NFKC made "5⁶" (5 to the 6th) the 56 of 7 x 8,
# graded correct. Written as "^" before NFKC, so a reader sees the power it says.
_SUPERSCRIPT_RUN = re.compile("[\u2070\u00b9\u00b2\u00b3\u2074-\u207b]+")
_SUPERSCRIPTS = str.maketrans(
    "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207a\u207b",
    "0123456789+-",
)
# A vulgar fraction right after digits ("56½", "1¾") is the fraction part of a mixed number:
# NFKC alone wrote "561/2", read as 561 halves.
_VULGAR_AFTER_DIGIT = re.compile("(?<=\\d)(?=[\u00bc-\u00be\u2150-\u215e])")
_SMALL_WORDS = {"zero": "0", "one": "1", "two": "2", "nought": "0", "nil": "0"}
_PRONOUN_BEFORE = re.compile(
    r"\b(?:the|this|that|which|each|every|any|no|some|another|last|next|other|right|wrong|"
    r"little|new|only|first|second)\s+$",
    re.IGNORECASE,
)
_PRONOUN_AFTER = re.compile(
    r"^\s+(?:of|more|another|way|day|thing|by|is\s+(?:the|a|an))\b", re.IGNORECASE
)
_SMALL = re.compile(r"\b(zero|one|two|nought|nil)\b", re.IGNORECASE)
_DENOMINATORS = {
    "half": 2,
    "halves": 2,
    "third": 3,
    "thirds": 3,
    "quarter": 4,
    "quarters": 4,
    "fourth": 4,
    "fourths": 4,
    "fifth": 5,
    "fifths": 5,
    "sixth": 6,
    "sixths": 6,
    "seventh": 7,
    "sevenths": 7,
    "eighth": 8,
    "eighths": 8,
    "ninth": 9,
    "ninths": 9,
    "tenth": 10,
    "tenths": 10,
    "hundredth": 100,
    "hundredths": 100,
}  # fractions in words: text2num reads "two thirds" as "two 3rds"
_FRACTION_WORDS = re.compile(
    r"\b(a|an|one|two|three|four|five|six|seven|eight|nine|ten|\d+)[\s-]+("
    + "|".join(sorted(_DENOMINATORS, key=len, reverse=True))
    + r")\b",
    re.IGNORECASE,
)
# "seven fours", "6 sevens": that many of the number, a product (text2num reads "seven fours"
# as "7 4", two numbers, and "seven fours are 28" was a wrong answer 28, not a step)
_GROUPS = re.compile(
    r"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+"
    r"(two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)(?:s|es)\b",
    re.IGNORECASE,
)
_OPERATOR_WORDS = (
    (re.compile(r"\b(?:double|twice)\s+(?=-?\d)", re.I), "2 * "),  # "double 28 is 56"
    (re.compile(r"(?<=\d)\s+(?:plus|add(?:ed)?\s+to|and\s+add)\s+(?=-?\d)", re.I), " + "),
    (re.compile(r"(?<=\d)\s+(?:minus|take\s+away|less)\s+(?=-?\d)", re.I), " - "),
    (re.compile(r"(?<=\d)\s*(?:times|multiplied\s+by)\s*(?=-?\d)", re.I), " * "),
    (re.compile(r"(?<=\d)(?<!\b0)\s*x\s*(?=-?\d)", re.I), " * "),  # 7x8, not 0x38
    (re.compile(r"(?<=\d)\s+(?:divided\s+by|over)\s+(?=-?\d)", re.I), " / "),
    # "5 out of 6" is the fraction 5/6 (was the answer 5, and the 6 a second number)
    (re.compile(r"(?<=\d)\s+out\s+of\s+(?=\d)", re.I), "/"),
    (re.compile(r"(?<=\d)\s+doubled\b", re.I), " * 2"),
    (re.compile(r"(?<=\d)\s+tripled\b", re.I), " * 3"),
    (re.compile(r"(?<=\d)\s+halved\b", re.I), " / 2"),
    (re.compile(r"(?<=\d)\s+squared\b", re.I), " ^ 2"),
    (re.compile(r"(?<=\d)\s+cubed\b", re.I), " ^ 3"),
    (re.compile(r"(?<=\d)\s*\*\*\s*(?=-?\d)"), " ^ "),
    (re.compile(r"\b(?:minus|negative)\s+(?=\d)", re.I), "-"),
    (re.compile(r"\b(?:equals|is\s+equal\s+to|makes|gives(?:\s+you)?|comes\s+to)\s+", re.I), "= "),
    (re.compile(r"(?<=\d)\s+(?:is|are|=)\s+(?=-?\d)", re.I), " = "),
    (re.compile(r"(?<=[a-z])\s+is\s+(?=-?\d)", re.I), " is "),
    (re.compile(r"\s*\bper\s*cent\b", re.I), "%"),
)

_DIGIT = re.compile(r"\d")
# The operator words that can match in a text without a digit (the others require one, `\d`,
# beside the word): the same patterns in the same order.
_OPERATOR_WORDS_WITHOUT_DIGITS = tuple(
    (pattern, replacement)
    for pattern, replacement in _OPERATOR_WORDS
    if "\\d" not in pattern.pattern
)


_PLACE_VALUE = re.compile(r"\b(the|in|of)\s+(ones|tens|hundreds|thousands)\b", re.IGNORECASE)


def canonical(text: str) -> str:
    """The message with number words as digits and operator words as symbols, so every reader
    sees one spelling ("twenty-eight doubled is fifty-six" -> "28 * 2 = 56")."""
    text = _SUPERSCRIPT_RUN.sub(
        lambda m: "^" + m.group(0).translate(_SUPERSCRIPTS), text[:MAX_MESSAGE_CHARS]
    )
    text = _VULGAR_AFTER_DIGIT.sub(" ", text)
    text = unicodedata.normalize("NFKC", text).translate(_DASHES)
    text = _SOFT_HYPHEN.sub("-", text)  # "fifty\u00adsix" is fifty-six
    # then the one canonical view the detector reads too (digits of every script, invisible
    # and bidi characters, confusables, HTML entities, LaTeX): grader and detector see the same
    # text, so they cannot disagree about which number a message holds
    text = canonical_text(text)
    # "adding the tens first": a place value, not the number 10 (text2num reads "tens" as 10)
    text = _PLACE_VALUE.sub(lambda m: f"{m.group(1)} {m.group(2)}-place", text)
    text = _FRACTION_WORDS.sub(_fraction_word, text)
    text = _GROUPS.sub(r"\1 times \2", text)
    text = alpha2digit(text, "en")
    text = _SMALL.sub(lambda m: _small_word(text, m), text)  # what alpha2digit leaves alone
    # Most messages hold no digit by now ("I'm stuck"), and every operator word but two reads
    # only next to one: those are not tried (each was a scan of the whole message, about 40 us
    # a message for the fourteen; issue 30). No replacement writes a digit where none was.
    operators = _OPERATOR_WORDS if _DIGIT.search(text) else _OPERATOR_WORDS_WITHOUT_DIGITS
    for pattern, replacement in operators:
        text = pattern.sub(replacement, text)
    return text


def _fraction_word(match: re.Match[str]) -> str:
    numerator = match.group(1).lower()
    if numerator in ("a", "an"):
        top = 1
    elif numerator.isdigit():
        top = int(numerator)
    else:
        try:
            top = int(text2num(numerator, "en"))
        except ValueError:
            return match.group(0)
    return f"{top}/{_DENOMINATORS[match.group(2).lower()]}"


def _small_word(text: str, match: re.Match[str]) -> str:
    """ "one" is a number unless it is the pronoun ("this one", "one of them")."""
    if _PRONOUN_BEFORE.search(text[: match.start()]) or _PRONOUN_AFTER.match(text[match.end() :]):
        return match.group(0)
    return _SMALL_WORDS[match.group(1).lower()]


# -- numbers -----------------------------------------------------------------------------------

_NUMBER = re.compile(
    r"(?<![\w.,/])(?P<sign>[-+]\s?)?(?:"
    r"(?P<base>0[xX][0-9A-Fa-f]+|0[bB][01]+|0[oO][0-7]+)"
    r"|(?P<whole>\d+)\s(?P<part>\d+/\d+)(?!\s?[.,/]\d)"  # a mixed number: "56 1/2", "56½"
    r"|(?P<frac>\d+\s?/\s?\d+)(?!\s?[.,]\d)"
    r"|(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:[.,]\d+)?|\.\d+)"
    r"(?P<sci>\s?[eE][+-]?\d+|\s?[*]\s?10\s?\^\s?-?\d+)?"
    r")(?P<percent>\s?%)?(?![\w]|[.,]\d)"
)
_ROMAN = re.compile(r"(?<![\w])[MDCLXVI]+(?![\w])")
_ROMAN_VALID = re.compile(r"^M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})$")
_ROMAN_GAP = re.compile(
    r"[\s,;/.\-\u2013\u2014]*(?:\b(?:or|and|to|through)\b[\s,;/.\-\u2013\u2014]*)?",
    re.IGNORECASE,
)
"""What may stand between two numerals of a Roman run ("L LI LII", "L, LI or LII"): the
pronoun "I" twice in a sentence ("I am stuck, I got 15") is no run."""
_ROMAN_DIGITS = {"M": 1000, "D": 500, "C": 100, "L": 50, "X": 10, "V": 5, "I": 1}
_ORDINAL_AFTER = re.compile(r"^(?:st|nd|rd|th)\b", re.IGNORECASE)


Spelling = Literal["decimal", "fraction", "percent", "scientific", "base", "roman"]


@dataclass(frozen=True)
class Number:
    """One number in the canonical text: its exact value, where it is, and how it was written."""

    value: Fraction
    start: int
    end: int
    text: str
    spelling: Spelling = "decimal"


def _value(match: re.Match[str]) -> tuple[Fraction, Spelling] | None:
    sign = -1 if (match.group("sign") or "").startswith("-") else 1
    spelling: Spelling
    if match.group("base"):
        return Fraction(sign * int(match.group("base"), 0)), "base"
    if match.group("whole"):
        top, bottom = (int(p) for p in match.group("part").split("/"))
        return sign * (int(match.group("whole")) + Fraction(top, bottom)), "fraction"
    if match.group("frac"):
        top, bottom = (int(p) for p in match.group("frac").replace(" ", "").split("/"))
        if bottom == 0:
            return None
        value, spelling = Fraction(top, bottom), "fraction"
    else:
        literal = match.group("num")
        if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", literal) and not literal.startswith("0,"):
            literal = literal.replace(",", "")  # 1,000 is a thousand; 0,375 is a decimal comma
        value, spelling = Fraction(literal.replace(",", ".")), "decimal"
        sci = match.group("sci")
        if sci:
            exponent = int(re.split(r"[eE^]", sci.replace(" ", ""))[-1])
            if abs(exponent) > MAX_EXPONENT:
                return None
            value, spelling = value * Fraction(10) ** exponent, "scientific"
    if match.group("percent"):
        value, spelling = value / 100, "percent"
    return sign * value, spelling


def numbers(text: str) -> tuple[Number, ...]:
    """Every number in ``text`` (already canonical, see :func:`canonical`), in order. Roman
    numerals count only in a run of two or more different ones with nothing but separators
    between them (a list such as "L LI LII"): a lone "I" or "C" is a word, and so are two
    pronouns "I" in one sentence."""
    found: list[Number] = []
    position = 0
    while (match := _NUMBER.search(text, position)) is not None:
        position = match.end()
        if match.group("sign") and _operand_before(text, match.start()):
            # "56 - 57", "7 + 8": an operator between two operands, not a sign ("56 - 57" was
            # the answer -57); read again from the digits
            position = match.start("sign") + 1
            continue
        if match.group("whole") and not _proper(match.group("part")):
            position = match.end("whole")  # "12 156/12": two numbers, not a mixed number
            match = _NUMBER.match(text, match.start(), position)
            if match is None:
                continue
        if _ORDINAL_AFTER.match(text[match.end() :]):
            continue
        read = _value(match)
        if read is not None:
            found.append(
                Number(read[0], match.start(), match.end(), match.group(0).strip(), read[1])
            )
    runs: list[list[re.Match[str]]] = []
    for match in _ROMAN.finditer(text):
        if not _ROMAN_VALID.match(match.group(0)):
            continue
        if runs and _ROMAN_GAP.fullmatch(text[runs[-1][-1].end() : match.start()]):
            runs[-1].append(match)
        else:
            runs.append([match])
    for run in runs:
        if len({m.group(0) for m in run}) >= 2:
            found += [
                Number(Fraction(_roman(m.group(0))), m.start(), m.end(), m.group(0), "roman")
                for m in run
            ]
    return tuple(sorted(found, key=lambda n: n.start))


def _operand_before(text: str, position: int) -> bool:
    """An operand (a digit, ")" or "%") is the last thing before ``position`` but spaces, so
    a "-" or "+" there is an operator. A walk back over the spaces, not a regex anchored at
    the end of the text before (a scan of it for every sign of a long message)."""
    while position > 0 and text[position - 1].isspace():
        position -= 1
    return position > 0 and (text[position - 1] in ")%" or text[position - 1].isdigit())


def _proper(fraction: str) -> bool:
    top, bottom = (int(p) for p in fraction.split("/"))
    return 0 < top < bottom


def _roman(numeral: str) -> int:
    total = 0
    for here, after in zip(numeral, [*numeral[1:], ""], strict=True):
        value = _ROMAN_DIGITS[here]
        total += -value if after and _ROMAN_DIGITS[after] > value else value
    return total


def candidate_values(text: str) -> tuple[Fraction, ...]:
    """The distinct values of every number a message mentions, in any spelling the reader knows
    (digits, words, fractions, decimals, percentages, scientific notation, hex, a run of Roman
    numerals), in order of first mention: what a candidate-list check counts."""
    seen: list[Fraction] = []
    for number in numbers(canonical(text)):
        if number.value not in seen:
            seen.append(number.value)
    return tuple(seen)


# What may stand between two items of a list or the ends of a range: punctuation and the
# connecting words of an offer ("54, 55 or 56", "between 55 and 57", "x = 4 or x = 5", "is it 54?
# maybe 56", "a) 54 b) 56"), with at least one connector unless the items stand side by side
# ("L LI LII").
_LIST_GAP = re.compile(
    r"^(?:[\s,;:/.?!()=\-\u2013\u2014]|\b(?:or|and|to|till|until|through|maybe|perhaps|"
    r"possibly|probably|either|it'?s|it|is|be|could|might|think|guess|then|what|about|"
    r"how|hmm+|um+|[a-z])\b)*$",
    re.IGNORECASE,
)
_LIST_CONNECTOR = re.compile(
    r"^\s*$|[,;/\-\u2013\u2014]|\b[a-z]\)|\b(?:or|and|to|till|until|through)\b", re.IGNORECASE
)


def _list_gap(gap: str) -> bool:
    return bool(_LIST_GAP.match(gap) and _LIST_CONNECTOR.search(gap))


def is_candidate_list(text: str) -> bool:
    """Whether a message offers two or more candidate values (a list or a range), so that it
    commits to none of them. The reader's verdict alone also covers worked prose with several
    bare numbers ("I got 243 ... so she bought 117"); an offer needs two different numbers next
    to each other with nothing but separators between them, which a learner's working has not."""
    canonical_view = canonical(text)
    side_by_side = any(
        first.value != second.value and _list_gap(canonical_view[first.end : second.start])
        for first, second in itertools.pairwise(numbers(canonical_view))
    )  # the cheap half first: most messages offer no two numbers side by side
    return side_by_side and read_message(text).reason == "a list or range of candidates"


def read_number(text: str) -> Fraction | None:
    """The value of a text that is one number and nothing else (a key such as "0.375", "-7",
    "5/6", "37.5%", "x = 4"), else None."""
    text = canonical(text).strip().rstrip(".")
    text = re.sub(r"^[a-z]\s*=\s*", "", text, flags=re.IGNORECASE)
    found = numbers(text)
    if len(found) == 1 and found[0].start == 0 and found[0].end == len(text):
        return found[0].value
    return None


# -- clauses: negation, questions about the term, tentative answers ----------------------------

# ("!=" is an operator, not an exclamation: "result != n" is one clause)
# (?<!\s): a run of spaces is tried from its first space only; tried from each (a correction
# blanks what comes before it with spaces), a 4,000-character message took 0.11 s to split.
_CLAUSE_END = re.compile(
    r"(?:\.(?!\d)|!(?!=)|[;?\n])+|,\s+|(?<!\s)\s+but\s+|(?<!\s)\s+though\s+", re.IGNORECASE
)
_NEGATION = re.compile(
    r"\b(?:not|no|never|neither|nor|nothing|none|hardly|unlikely|doubt\w*|wrong)\b|n't\b|"
    r"\bnot?\s+sure\b",
    re.IGNORECASE,
)
_TENTATIVE_NEGATIVE = re.compile(
    r"\b(?:is|was|would|should|could|does)n't\s+(?:it|that|the\s+answer)\b", re.IGNORECASE
)
_TERM_QUESTION = re.compile(
    r"^\s*(?:so\s+|and\s+|but\s+|ok\w*,?\s+|um+,?\s+)?(?:what|what's|whats|why|how|where|which|"
    r"who|when|does|do|did|can|define|explain|describe|tell\s+me|meaning\s+of"
    # "could you explain carbon dioxide?" asks about the term as "can you" does ("could it be
    # carbon dioxide?" stays tentative: it is not addressed to the tutor)
    r"|(?:could|would|will)\s+you)\b",
    re.IGNORECASE,
)
# Asking the tutor to explain the term, no question mark needed ("explain carbon dioxide",
# "please define osmosis"): a request about the term, never an answer to grade.
_TERM_REQUEST = re.compile(
    r"^\s*(?:please\s+|ok\w*,?\s+|so\s+)?(?:define|explain|describe|tell\s+me\s+about)\b(?!\s*:)",
    re.IGNORECASE,
)
_TENTATIVE = re.compile(
    r"\?\s*$|\b(?:maybe|perhaps|probably|i\s+think|i\s+guess|might|could\s+it|is\s+it)\b",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"\b(?:actually|no\s+wait|wait|i\s+mean|sorry|correction|on\s+second\s+thought|"
    # "I got 56 last time but now 54": the number said now (was a list, committed to nothing)
    r"scratch\s+that|instead|but\s+now)\b",
    re.IGNORECASE,
)
# A word that gives a reason for what came before it ("oxygen because plants breathe it",
# "13 because 12 x 13 = 156"). "as" gives one only before a clause of its own, one with a
# subject pronoun ("as it has chlorophyll") or a step ("55 as 7 x 8 = 56", graded correct as
# 56 before): "such as", "the same as", "as a decimal", "as far as I know" give none.
_AS_REASON = (
    r"(?<!\bfar\s)(?<!\blong\s)(?<!\bsoon\s)(?<!\bmuch\s)(?<!\bwell\s)(?<!\bsame\s)"
    r"(?<!\bsuch\s)as(?=\s+(?:i|i'm|it|it's|its|we|you|they|he|she|that|this|there|these|"
    r"those)\b|\s*[(\[]?\s*-?\d[^.!?;\n=]{0,80}=)"
)
# (A run of separators is tried from its first character only, and the step after "as" is
# looked for 80 characters ahead: " , , , ..." and "as 1 as 1 ..." were scanned to their end
# from every position, 1.2 s of CPU for 4,000 characters.)
REASON = re.compile(
    rf"(?:^|(?<![\s,;])[\s,;]+)(?:because|since|'?cause|cuz|coz|{_AS_REASON})\b", re.IGNORECASE
)
# Where a reason ends: its sentence, or a turn to something else ("but").
_REASON_END = re.compile(r"\.(?!\d)|[!?;\n]|\s+but\s+", re.IGNORECASE)
# A question tagged on to a statement ("mitochondria, isn't it?", "it's 56, right?"): the
# statement said tentatively. Without a comma or a question mark "56 isn't it" may say 56 is
# not the answer, and is left to the negation rules.
# A one-word tag needs both its comma and its question mark ("true?" may be the answer).
_TAG = (
    r"(?:(?:is|was|are|were|does|do|did|would|should|could|can|wo|has|have)n'?t|ain'?t)\s+"
    r"(?:it|that|they|this|there|he|she)|(?:is|was|does|would)\s+(?:it|that)\s+not"
)
_TAG_REACH = 160  # characters: the longest tag ("..., is that correct?") with room to spare
_TAG_QUESTION = re.compile(
    rf"(?:\s*,\s*(?:{_TAG})\s*\??|\s+(?:{_TAG})\s*\?|"
    r"\s*,\s*(?:right|correct|yes|yeah|no|ok(?:ay)?|true)\s*\?|"
    # a question of its own asking whether it is right ("56. Am I right?", "went, is that it?")
    r"[\s,.!]*(?:am\s+i\s+(?:right|correct)|(?:is|was)\s+(?:that|this|it)\s+(?:right|correct|"
    r"it))\s*\?)\s*$",
    re.I,
)
_RANGE = re.compile(
    r"\b(?:between|from)\s+\S+\s+(?:and|to)\b|\b(?:one\s+of|any\s+of|either)\b|\bor\b|"
    r"\d\s*(?:to|\.\.)\s*\d",  # "50-60" is read as operands: no candidate at all
    re.IGNORECASE,
)


# The tutor's or the exercise's words quoted back ("you said 56", "the hint says 28"): what they
# said, not what the learner commits to (was graded as the learner's answer). One phrase for
# both readers: before a number, and at the start of a text answer's clause ("the hint says
# carbon dioxide" was graded correct as the learner's answer).
_QUOTING = (
    r"\b(?:you|the\s+(?:tutor|question|hint|prompt|exercise|problem|book))\s+(?:just\s+)?"
    r"(?:said|says|say|wrote|writes|write|asked|asks|mentioned|told\s+me|meant|showed)"
    r"\s+(?:(?:that|it\s+was|it\s+is|it's|the\s+answer\s+(?:is|was))\s+)?[\"'\u201c\u2018]?"
)
_QUOTED_BEFORE = re.compile(rf"{_QUOTING}(?:\s*[a-z]\s*=)?\s*$", re.IGNORECASE)  # "you said x = 4"
_QUOTES_THE_TUTOR = re.compile(
    rf"^\s*(?:(?:so|ok|okay|well|but|and|um+|hmm+)\b[\s,]*)*{_QUOTING}", re.IGNORECASE
)
# A "no" (or "nope", "scratch that", ...) after the answer, with nothing after it ("56? no",
# "carbon dioxide, nope"): the learner takes the answer back and settles on none. Before, "56?
# no" was graded correct as 56, while "56 no 55" (`_BARE_NO`) and "not 56" committed to
# nothing. A tag asking for agreement ("56, no?", `_TAG_QUESTION`) is no retraction.
# (Looked for in the message's last characters only, `_NEAR`: searched from every position of
# a long run of separators or "no, no, ...", it took 0.8 s of CPU for 4,000 characters.)
_RETRACTION = re.compile(
    r"(?<![\w'])(?:(?:oh|hmm+|um+|wait|actually|no)[\s,.!]+)*"
    r"(?:no+|nope|nah|no\s+wait|scratch\s+that|never\s*mind|forget\s+(?:it|that)|"
    r"ignore\s+that)[\s.!]*$",
    re.IGNORECASE,
)
# "56? or no", "carbon dioxide or not": whether it is the answer, asked, not taken back.
_OR_BEFORE = re.compile(r"\bor[\s,]*$", re.IGNORECASE)
# "is 56 right?", "is carbon dioxide the answer?": the answer said tentatively, as "is it 56?"
# is (its echo was "is carbon dioxide correct"). A pronoun ("is it right?", "is that
# correct?") names no answer and is left as it is.
_IS_IT_RIGHT = re.compile(
    r"^(\s*)(?:is|was|would)\s+(?!(?:it|that|this|mine|my\s+answer)\s)(.+?)\s+"
    r"(?:right|correct|it|the\s+(?:right\s+|correct\s+)?answer)\s*\?\s*$",
    re.IGNORECASE,
)
# "56 no 55", "55, no, 56": a bare "no" between two numbers does not say which the learner
# settles on (it may deny the first or answer a question about it); only a plain correction
# ("56, no wait, 55", "actually", "I mean": `_CORRECTION`) picks the number after it.
_BARE_NO = re.compile(r"\d[\s,.!?]*\bno\b[\s,.!?]*-?\d", re.IGNORECASE)
_BOUND_BEFORE = re.compile(
    r"(?:\b(?:more|less|greater|fewer|bigger|smaller|larger|higher|lower)\s+than|"
    r"\bat\s+(?:least|most)|\b(?:no|not)\s+(?:more|less)\s+than|[<>]=?|[≤≥])\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Clause:
    start: int
    end: int
    text: str
    question: bool  # ends with "?"


def clauses(text: str) -> tuple[Clause, ...]:
    out: list[Clause] = []
    start = 0
    for match in _CLAUSE_END.finditer(text):
        out.append(Clause(start, match.start(), text[start : match.start()], "?" in match.group()))
        start = match.end()
    if start < len(text):
        out.append(Clause(start, len(text), text[start:], False))
    return tuple(c for c in out if c.text.strip())


def _clause_at(parts: Sequence[Clause], position: int) -> Clause | None:
    for clause in parts:
        if clause.start <= position < max(clause.end, clause.start + 1):
            return clause
    return None


def negated(clause: Clause, position: int) -> bool:
    """A negation before ``position`` in its clause ("not 56", "I don't think it's 56"); a
    negative question ("isn't it 56?") is tentative, not negated."""
    offset = position - clause.start
    if clause.question and _first_end(_TENTATIVE_NEGATIVE, clause.text) <= offset:
        return False
    return _first_end(_NEGATION, clause.text) <= offset


@functools.lru_cache(maxsize=64)
def _first_end(pattern: re.Pattern[str], text: str) -> float:
    """Where the first match of ``pattern`` in ``text`` ends (infinity when none): a match
    before a position is one ending by it. Found once per clause, not searched again in the
    text before each of its numbers (a clause of 2,000 numbers took 4.8 s of CPU to grade)."""
    found = pattern.search(text)
    return found.end() if found is not None else float("inf")


def asks_about(clause: Clause) -> bool:
    """A question about the term ("what is a chloroplast?", "how do I get 56?", "could you
    explain carbon dioxide?") or a request to explain it ("explain carbon dioxide")."""
    if _TERM_REQUEST.match(clause.text):
        return True
    return clause.question and bool(_TERM_QUESTION.match(clause.text))


# -- what a message commits to -----------------------------------------------------------------

Kind = Literal["number", "expression", "text"]


@dataclass(frozen=True)
class Reading:
    """What a message commits to: ``answer`` as the learner wrote it (canonical spelling for
    numbers), its ``value`` for a numeric key, or ``answer is None`` and ``reason`` why not."""

    answer: str | None
    reason: str
    value: Fraction | None = None
    tentative: bool = False
    unit: str = ""
    steps: tuple[tuple[str, bool], ...] = field(default=())  # (step as written, evaluates)
    #: A text answer's statements one by one ("quick? gracefully?" is two), so a grader can
    #: tell one answer said twice from several different guesses joined in ``answer``.
    parts: tuple[str, ...] = field(default=())
    #: The message names an answer the learner does not stand by: taken back ("oxygen? no"),
    #: negated ("not oxygen") or the tutor's words quoted ("the hint says oxygen"). Its words
    #: are then no answer for anything read from them: the grade, and the misconception a
    #: wrong answer's words signal (`grader.answer_words_signal`).
    disowned: bool = False

    @property
    def committed(self) -> bool:
        return self.answer is not None


_OPERATOR_BEFORE = re.compile(r"(?:[+*/^=]|(?<=[\d)])\s*-|\(|\bby)\s*$", re.IGNORECASE)
_NEGATION_AFTER = re.compile(
    r"^\s*(?:is|was|'s|would\s+be)?\s*(?:wrong|incorrect|not\b|isn't|wasn't|is\s+not)", re.I
)
# "(" after a number multiplies ("3(4 + 5)") only when what it opens is an expression: "55 (or
# 56)", "55 (since 7 x 8 = 56)" and "55 (7 x 8 = 56)" are an answer and an aside, and reading
# 55 as an operand left 56 as the answer (graded correct).
_OPERATOR_AFTER = re.compile(r"^\s*(?:[+*/^]|\((?![^()]*=)\s*[-\d(.]|-\s*[\d(])")
# "23 not 35": the number after "not" is the one denied, not the one before it; "23, not
# sure" is a hedge (defined with the text answers' hedges below).
_CONTRAST_AFTER = re.compile(r"^\s*not\s+(?:the\s+)?-?\d")


def _denied_after(after: str) -> bool:
    """A negation right after a number denies it ("56 is wrong", "56 isn't it"), unless it
    denies another number or is a hedge."""
    return bool(
        _NEGATION_AFTER.match(after)
        and not _CONTRAST_AFTER.match(after)
        and not _HEDGE_AFTER_NUMBER.match(after)
    )


_EQUALS_AFTER = re.compile(r"^\s*=")
_EQUALS_BEFORE = re.compile(r"=\s*$")
_RESULT_CUE = re.compile(
    r"(?:\b(?:is|it's|its|answer|get|got|make|equal|that's|thats|be|is\s+it|was\s+it|"
    # what code prints is its answer ("it prints 5" on var_update committed to nothing)
    r"prints|printed|outputs|shows|displays)\b|=|:)"
    r"\s*(?:about\s+)?$",
    re.IGNORECASE,
)
_UNIT_AFTER = re.compile(r"^\s*([a-zA-Z\u00b0\u00b5]+(?:\^?[23])?)")
# Each operand and each operation read once, atomically, at most 16 operations and short runs
# of brackets and spaces ("((((..." was scanned to its end from each bracket): with
# its spaces and brackets free to be split several ways, "1 - 1 - 1 - ..." (no "=") was
# tried in exponentially many ways, 2.7 s of CPU for 80 characters and minutes for 200 (a
# learner could stall the turn's thread). Fractions are operations ("3/4 = 0.75").
_STEP = re.compile(
    r"(?P<lhs>(?>[-(]{0,8}\s{0,8}-?\d[\d.,]*)"
    r"(?>\s{0,8}[-+*/^()]\s{0,8}\(?\s{0,8}-?\d[\d.,]*\)?\)?){1,16})"
    r"\s{0,8}=\s*(?P<rhs>-?\d+(?:[.,/]\d+)*)(?![\d.,]*\s*[-+*/^]\s*\d)"
)


def working_steps(text: str) -> tuple[tuple[str, bool], ...]:
    """Each arithmetic step ``a op b = c`` in the canonical text, and whether it evaluates
    (checked with SymPy): the learner's working, checkable."""
    out: list[tuple[str, bool]] = []
    for match in _STEP.finditer(text):
        lhs = evaluate(match.group("lhs"))
        rhs = read_number(match.group("rhs"))
        out.append((match.group(0).strip(), lhs is not None and rhs is not None and lhs == rhs))
    return tuple(out)


def evaluate(expression: str) -> Fraction | None:
    """The exact value of an arithmetic expression of numbers (SymPy), else None."""
    parsed = parse_expression(expression)
    if parsed is None or not parsed.is_Rational:
        return None
    return Fraction(int(parsed.p), int(parsed.q))


_EXPRESSION_CHARS = re.compile(r"^[0-9a-z+\-*/^(). ]+$")


@functools.lru_cache(maxsize=1024)
def parse_expression(text: str) -> Any | None:
    """A SymPy expression for short arithmetic or algebra (single-letter variables only, no
    names: the text is a learner's, so nothing but numbers, letters and operators reaches the
    parser), or None when it is not one. Kept by text (SymPy's expressions are immutable): an
    expression exercise's key and accepted spellings were parsed again for every message, 0.7
    ms each, twice since the unevaluated read bounds the value first."""
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text.strip().lower())
    text = re.sub(r"(?<=\d),(?=\d)", ".", text).rstrip(".")
    if (
        not text
        or len(text) > MAX_EXPRESSION_CHARS
        or not _EXPRESSION_CHARS.match(text)
        or re.search(r"[a-z]{2,}", text)
        or any(abs(int(e)) > MAX_EXPONENT for e in re.findall(r"\^\s*\(?\s*(-?\d+)", text))
        or text.count("^") > 2
        # a number in e-notation is read by Python's tokenizer as one float, and SymPy writes
        # out its every digit: "50e39999911" took minutes
        or any(int(e) > MAX_EXPONENT for e in re.findall(r"(?<=[\d.])e[+-]?(\d+)", text))
    ):
        return None
    from sympy import Symbol  # imported on first use: SymPy is slow to import
    from sympy.parsing.sympy_parser import (
        convert_xor,
        implicit_multiplication_application,
        parse_expr,
        standard_transformations,
    )

    names = {letter: Symbol(letter) for letter in set(re.findall(r"[a-z]", text))}
    transformations = (
        *standard_transformations,
        implicit_multiplication_application,
        convert_xor,
    )
    global_dict = {
        "Integer": _sympy_name("Integer"),
        "Float": _sympy_name("Float"),
        "Rational": _sympy_name("Rational"),
        "Symbol": Symbol,
    }
    try:
        # read first without evaluating, so a tower of powers is refused before it is computed
        shape = parse_expr(
            text,
            local_dict=names,
            # the unevaluated tree is written with these classes by name
            global_dict={**global_dict, **{n: _sympy_name(n) for n in ("Add", "Mul", "Pow")}},
            transformations=transformations,
            evaluate=False,
        )
        if _value_bits(shape) is None:
            return None
        return parse_expr(
            text,
            local_dict=names,
            global_dict=global_dict,
            transformations=transformations,
            evaluate=True,
        )
    except Exception:  # noqa: BLE001 - see below
        # The text is a learner's and SymPy's parser fails on it in more ways than it
        # documents (TokenError on "(^", IndexError on ")(", besides SyntaxError and its
        # kin): whatever fails to parse is not an expression, and a grade never raises.
        return None


def _value_bits(node: Any) -> int | None:
    """An upper bound on the binary digits of the numerator and denominator ``node``'s exact
    value needs, read from its unevaluated tree; None when it exceeds ``MAX_VALUE_BITS`` or an
    exponent exceeds ``MAX_EXPONENT``. Why a bound on the tree and not on the text: a text
    check of each exponent passed "7^7^9" (each exponent under the limit; powers associate to
    the right) and "7**9**9" (not written with ^), and SymPy then computed the power."""
    if node.is_Symbol:
        return 0
    if node.is_Integer:
        return int(abs(node)).bit_length()
    if node.is_Rational:
        return max(int(abs(node.p)).bit_length(), int(node.q).bit_length())
    if node.is_Float:
        return 64
    if node.is_Pow:
        base, exponent = node.args
        base_bits = _value_bits(base)
        exponent_bits = _value_bits(exponent)
        if base_bits is None or exponent_bits is None:
            return None
        if exponent.free_symbols:
            bits = base_bits + exponent_bits  # stays symbolic: nothing is computed
        else:
            if exponent_bits > MAX_EXPONENT.bit_length() + 1:
                return None
            power = abs(exponent.doit())
            if not power.is_finite or power > MAX_EXPONENT:
                return None
            bits = max(base_bits, 1) * int(power.round() if power.is_Float else power) + 1
            bits = max(bits, base_bits)
    elif node.is_Add or node.is_Mul:
        parts = [_value_bits(arg) for arg in node.args]
        if any(part is None for part in parts):
            return None
        bits = sum(part for part in parts if part is not None) + len(parts)
    else:
        return None  # a tuple ("(1, 2)^3") or anything else: not arithmetic
    return bits if bits <= MAX_VALUE_BITS else None


def _sympy_name(name: str) -> Any:
    import sympy

    return getattr(sympy, name)


def statement(message: str) -> str:
    """The message's canonical text (:func:`canonical`) with a question asking whether an
    answer is right said as that answer, tentatively: "56, right?", "mitochondria, isn't it?"
    and "is 56 right?" read as "56?". Every kind of answer is read from this text (an
    expression's too: "2x + 6, right?" committed to nothing while "is it 2x + 6?" was graded)."""
    text = _ELLIPSIS.sub(" ... ", canonical(message))
    # The tag ends the text: looked for in its tail only (from every position, a message of
    # ", , , ..." made the search quadratic: 0.24 s of CPU for 4,000 characters).
    cut = max(0, len(text) - _TAG_REACH)
    text = text[:cut] + _TAG_QUESTION.sub("?", text[cut:])
    return _IS_IT_RIGHT.sub(r"\1\2?", text)


# "...54": dots trailing off, not a decimal point ("...54" committed to nothing, while "...56"
# was correct as the whole message less its punctuation).
_ELLIPSIS = re.compile(r"\.{2,}")


def taken_back(text: str) -> bool:
    """Whether the learner takes back what they said before ("56? no", "2x + 6, scratch
    that"): a "no" after an answer with nothing after it, not one asking whether ("56? or
    no"). Read on :func:`statement`'s text, by every kind of answer."""
    tail = max(0, len(text) - _NEAR)
    retraction = _RETRACTION.search(text, tail)
    if retraction is None:
        return False
    before = text[: retraction.start()]
    return bool(before.strip(" ,.;:!?-\u2013")) and not _OR_BEFORE.search(
        before, max(0, len(before) - _NEAR)
    )


def read_message(
    message: str,
    *,
    kind: Kind = "number",
    givens: Sequence[Fraction] = (),
    steps: Sequence[Fraction] = (),
    restated: Sequence[str] = (),
) -> Reading:
    """What ``message`` commits to. ``kind`` is the key's (a number, an expression, a text);
    ``givens`` are the prompt's numbers (an answer only when stated as the result), ``steps``
    the worked solution's intermediate values (never an answer: "that's 28, then I double it"
    is a step), ``restated`` the prompt's own spellings of the answer's value ("3/8" in "write
    3/8 as a decimal": copying it out is no answer)."""
    text = statement(message)
    # a hedge in brackets ("chloroplast (not sure)") is a hedge as after a comma: its "not"
    # negated the answer, so a text answer with it went ungraded
    text = ASIDE.sub(_hedge_aside, text)
    worked = working_steps(text)
    correction = None
    for match in _CORRECTION.finditer(text):
        correction = match
    if correction is not None and text[correction.end() :].strip():
        text = " " * correction.end() + text[correction.end() :]
    if taken_back(text):
        return Reading(None, "an answer taken back", steps=worked, disowned=True)
    if kind == "text":
        return _read_text(message, text, worked)
    if _BARE_NO.search(text):
        return Reading(
            None, "'no' between two numbers: which one is meant is unclear", steps=worked
        )
    parts = clauses(text)
    candidates: list[tuple[Number, bool]] = []  # (number, is the result of a step)
    asked = negations = bounds = 0
    for number in numbers(text):
        clause = _clause_at(parts, number.start)
        if clause is None:
            continue
        if asks_about(clause):
            asked += 1
            continue
        if negated(clause, number.start) or _denied_after(text[number.end : clause.end]):
            negations += 1
            continue
        # what stands right before and after it: the patterns read no further ("more than",
        # "=", an operator), and a window keeps a message of many numbers linear
        before = text[max(0, number.start - _NEAR) : number.start]
        after = text[number.end : number.end + _NEAR]
        if _QUOTED_BEFORE.search(before):
            continue  # "you said 56": the tutor's words, quoted
        if _BOUND_BEFORE.search(before):
            # "more than 50" says where the answer is, not what it is: graded wrong as "50",
            # its feedback told the learner "50 isn't it", a number they never offered
            bounds += 1
            continue
        if _OPERATOR_AFTER.match(after) and not _EQUALS_AFTER.match(after):
            continue  # an operand ("28 * 2", "2x")
        if _EQUALS_AFTER.match(after) and not _EQUALS_BEFORE.search(before):
            continue  # the left side of a step
        result = bool(_EQUALS_BEFORE.search(before))
        if _OPERATOR_BEFORE.search(before) and not result:
            continue
        if number.text.replace(" ", "") in restated:
            continue
        if number.value in steps and not (result or _alone(text, number)):
            continue
        if number.value in givens and not (
            result or _RESULT_CUE.search(before) or _alone(text, number)
        ):
            continue
        candidates.append((number, result))
    candidates = _without_reasons(text, candidates)
    if not candidates:
        reason = (
            "a question about the term"
            if asked
            else "a negated answer"
            if negations
            else "a bound, not an answer"
            if bounds
            else "no answer stated"
        )
        return Reading(None, reason, steps=worked, disowned=negations > 0 and not asked)
    bare = {n.value for n, result in candidates if not result}
    if len(bare) >= 2 or len({n.value for n, _ in candidates}) >= 2 and _RANGE.search(text):
        return Reading(None, "a list or range of candidates", steps=worked)
    final = candidates[-1][0]
    if final.spelling == "roman":
        return Reading(None, "a list or range of candidates", steps=worked)

    clause = _clause_at(parts, final.start)
    tentative = clause is not None and said_tentatively(clause, text)
    unit_match = _UNIT_AFTER.match(text[final.end :])
    return Reading(
        final.text,
        "the final stated result",
        final.value,
        tentative,
        unit_match.group(1) if unit_match else "",
        worked,
    )


def said_tentatively(clause: Clause, text: str) -> bool:
    """Whether the answer ``clause`` states is offered rather than asserted: asked ("is it
    56?", "2x + 6?"), with a word of doubt in it ("maybe 54"), or hedged anywhere in the
    message ``text`` ("I think"). One rule for every kind of answer: an expression's was
    never tentative ("is it 2x + 6?" graded as said outright)."""
    return clause.question or bool(_TENTATIVE.search(clause.text) or _HEDGE_IN.search(text))


def answer_core(clause_text: str) -> str:
    """What a clause states as the answer, without the words leading into it ("I think it's
    2x + 6" states "2x + 6"), a hedge or filler after it ("2x + 6 I think", "went obviously",
    in either order) or the punctuation around it. One reading for the text answers and the
    grader's expressions (which read the reader's private pattern before, and committed "2x +
    6 I think" to nothing)."""
    core = _LEAD_IN.sub("", clause_text.strip()).strip(" .!?,:;'\"")
    for _ in range(2):
        core = _FILLER_AFTER.sub("", _HEDGE_AFTER.sub("", core))
    return core


def _without_reasons(text: str, candidates: list[tuple[Number, bool]]) -> list[tuple[Number, bool]]:
    """The candidates less those inside a reason given for an answer stated before it: "13
    because 12 x 13 = 156" commits to 13, not to the 156 its reason ends on. Before, the
    final stated result was the reason's, and a right answer with its reason was graded wrong.
    A reason with no answer before it ("because 10") is the message's answer. An aside in
    brackets after an answer ("55 (7 x 8 = 56)", "55 [since 7 x 8 = 56]") is a reason too;
    one that offers another candidate ("55 (or 56)", "55 (maybe 56)") is left, so the message
    is a list."""
    for found in ASIDE.finditer(text):
        if _OTHER_CANDIDATE.search(found.group(1)) or not any(
            number.start < found.start() for number, _ in candidates
        ):
            continue
        candidates = [
            (number, result)
            for number, result in candidates
            if not found.start() <= number.start < found.end()
        ]
    for found in REASON.finditer(text):
        if not any(number.start < found.start() for number, _ in candidates):
            continue
        end = _REASON_END.search(text, found.end())
        stop = end.start() if end is not None else len(text)
        candidates = [
            (number, result)
            for number, result in candidates
            if not found.start() <= number.start < stop
        ]
    return candidates


# A bracketed aside, closed or running to the end of the message ("13 (12 x 13 = 156"); the
# grader reads a text answer's brackets with it too.
ASIDE = re.compile(r"[(\[]([^()\[\]]*)(?:[)\]]|$)")
_OTHER_CANDIDATE = re.compile(r"\b(?:or|maybe|perhaps|possibly|probably|either)\b", re.I)


def _hedge_aside(found: re.Match[str]) -> str:
    inside = found.group(1).strip(" .!?,")
    return f"; {inside}; " if inside and _HEDGE_CLAUSE.fullmatch(inside) else found.group(0)


#: How far before and after a number the reader looks for what makes it an operand, a result
#: or a bound.
_NEAR = 64


def _alone(text: str, number: Number) -> bool:
    """The message is this number and nothing else (a unit, punctuation and a hedge aside:
    "12", "12 i think", "maybe 12?"). Such a number is the learner's answer even when it is
    one of the prompt's numbers or a step of the worked solution: "12" for 156 / 12 and "7"
    for 7 x 8 committed to nothing, so a wrong answer went uncounted."""
    if len(text) - (number.end - number.start) > 2 * _NEAR:
        return False  # longer than any hedge and unit
    rest = text[: number.start] + text[number.end :]
    rest = _TENTATIVE.sub(" ", _HEDGE_IN.sub(" ", rest)).strip(" .!?,")
    return not rest or bool(_UNIT_AFTER.fullmatch(rest))


# -- text answers ------------------------------------------------------------------------------

_LEAD_IN = re.compile(
    r"^(?:(?:so|ok|okay|well|um+|uh+|hmm+|oh|then|and|but|yes|yeah)\b[\s,]*)*"
    r"(?:(?:(?:i\s+(?:think|guess|believe|reckon|would\s+say|'d\s+say)|maybe|perhaps|probably|"
    r"my\s+(?:final\s+)?answer\s+is|the\s+answer\s+is|is\s+the\s+answer|it'?s|it\s+is|"
    r"is\s+it|(?:is|was)n'?t\s+it|could\s+it\s+be|"
    r"would\s+it\s+be|that'?s|that\s+is|it\s+must\s+be|must\s+be|it\s+would\s+be|"
    # what code prints is the answer said ("it prints HiAda" was a remark, ungraded)
    r"it\s+(?:prints|outputs|shows|displays|will\s+print|would\s+print)|the\s+output\s+is|"
    # how sure the learner is, or that this is their pick: not the answer's words ("I'd go
    # with nitrogen" was a remark, ungraded, while "I'd go with carbon dioxide" was correct)
    r"(?:i'?d|i\s+would|i'?ll|i\s+will)\s+(?:go\s+with|say|guess|pick|choose)|"
    r"let\s+me\s+guess|(?:i'?m\s+)?(?:pretty|quite|fairly|really)\s+sure|definitely|"
    r"obviously|surely|certainly|of\s+course|hopefully|idk|dunno|something\s+like|kind\s+of|"
    r"sort\s+of|going\s+with|i'?m\s+going\s+with|guessing|my\s+(?:final\s+)?guess\s+is|"
    r"(?:the\s+)?answer\s+(?:is|should\s+be|would\s+be|must\s+be)|(?:it\s+(?:should|has\s+to|"
    r"would)|it'd|should|has\s+to|would)\s+be|(?:it'?s\s+)?gotta\s+be|i\s+feel\s+like(?=\s+it'?s\b|\s+it\s+is\b)|ans|"
    r"it\s+happens\s+in|in|at|on|by|the|a|an|that)\b"
    # "answer:", "my final answer:", "output:", "ans -", and "=" ("that gives result += n"
    # is "that = result += n" once operator words are read) (no "\b" follows a colon)
    r"|(?:(?:my|the|final)\s+)*(?:answer|output|guess|ans)\s*[:\-]|=(?!=))[\s,:]*)*",
    re.IGNORECASE,
)
# Words after a text answer that say how sure the learner is or that it is their answer, not
# what it is ("carbon dioxide obviously" was a list of two candidates, ungraded, while
# "nitrogen obviously" was wrong; "chloroplast is my answer" was correct, "mitochondria is my
# answer" a remark). Cut as a hedge after it is (`_HEDGE_AFTER`).
_FILLER_AFTER = re.compile(
    r"(?:[\s,]+(?:-+\s+)?(?:obviously|definitely|surely|for\s+sure|certainly|of\s+course|lol|"
    r"haha+|hah|hmm+|then|final\s+answer|(?:is|was)\s+(?:my|the)\s+(?:final\s+)?answer|is\s+it|"
    r"it\s+is|right|correct|yes|yeah|ok(?:ay)?|[:;]-?[()dp]|final|\(\s*final(?:\s+answer)?\s*\)|"
    r"(?:is|was)\s+my\s+(?:final\s+)?guess|please|thanks|thank\s+you))+\s*$",
    re.IGNORECASE,
)
# How a learner says they are not certain, around an answer rather than in it.
_HEDGES = (
    r"i\s+(?:think|guess|believe|suppose|reckon)(?:\s+so)?|maybe|perhaps|probably|"
    r"(?:i'?m\s+|i\s+am\s+)?not\s+(?:(?:really|quite|entirely|totally|completely|too|so|"
    r"very|a\s+hundred\s+percent|100%)\s+)?(?:sure|certain)|"
    r"as\s+far\s+as\s+i\s+(?:know|can\s+tell|remember)|afaik|iirc|"
    r"if\s+i\s+(?:remember|recall)(?:\s+(?:it\s+)?(?:correctly|rightly|right))?|"
    r"i\s+(?:could|might|may)\s+be\s+wrong(?:\s+though)?|correct\s+me\s+if\s+i'?m\s+wrong|"
    r"or\s+something(?:\s+like\s+that)?|i\s+hope(?:\s+so)?|hopefully|idk|i\s+dunno|dunno|"
    r"kinda|kind\s+of|sort\s+of|let\s+me\s+guess|at\s+a\s+guess|if\s+i\s+had\s+to\s+guess"
)
_HEDGE_IN = re.compile(rf"(?<!\w)(?:{_HEDGES})(?!\w)", re.IGNORECASE)
_HEDGE_AFTER_NUMBER = re.compile(rf"^[\s,]*(?:{_HEDGES})\s*[.!?]*\s*$", re.IGNORECASE)
# A hedge after the answer ("carbon dioxide i think", "went, maybe"): not part of it, so the
# tutor's "That's right: carbon dioxide is correct" echoes the answer, not the hedge.
_HEDGE_REACH = 160  # characters: a few hedges in a row ("oxygen, I think, maybe, not sure")
_HEDGE_AFTER = re.compile(rf"(?:[\s,]+(?:-+\s+)?(?:{_HEDGES}))+\s*$", re.IGNORECASE)
# A clause that is only a hedge ("oxygen, as far as I know", "if I remember rightly, went"):
# the answer is the other clause, said tentatively. Before, the hedge was read as a second
# statement, and a wrong answer with it went ungraded while a right one was marked correct.
_HEDGE_CLAUSE = re.compile(rf"(?:(?:{_HEDGES})[\s,]*)+", re.IGNORECASE)
_CONVERSATION = re.compile(
    r"^(?:hi|hello|hey|thanks?|thank\s+you|ok|okay|yes|yeah|yep|no|nope|sure|cool|great|"
    r"nice|help|hint|hints?\s+please|please|i'?m\s+stuck|stuck|idk|dunno|i\s+don'?t\s+know|"
    r"no\s+idea|next|continue|again|what|why|how|huh|lol|bye|good|fine|right|wait|hmm+|um+|"
    r"uh+|oh|ah|go\s+on|got\s+it|i\s+see|makes\s+sense|interesting|wow|awesome|amazing|"
    r"oops|alright|all\s+right|really|seriously|weird|strange|neat|sweet|damn|ugh+|argh+|"
    r"correct|guess|ha(?:ha)+|he(?:he)+|"
    r"(?:give|tell|show)\s+me.*|can\s+you.*|please\s+.*|i\s+(?:need|want)\s+.*)$",
    re.IGNORECASE,
)
_REMARK = re.compile(
    r"\b(?:i|i'm|im|i've|i'll|me|my|mine|you|you're|your|we|us|our|this|it|give\s+up|nothing|"
    r"anything|everything|something|yours|obvious|harder|hard|confus\w*|stuck|help|idea|know|understand|sure|boring|hate|"
    r"stupid|dumb|ugh|whatever|sorry|please|thanks?|lol|tired|easy|difficult|again|try\w*|"
    r"works?|hint\w*|answer|question|explain|tell|show|give|lost|frustrat\w*)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W\d_]+(?:['-][^\W\d_]+)*|\d+")


def _read_text(message: str, text: str, worked: tuple[tuple[str, bool], ...]) -> Reading:
    parts = [c for c in clauses(text) if c.text.strip()]
    hedged = [c for c in parts if _HEDGE_CLAUSE.fullmatch(c.text.strip(" .!?,:;'\""))]
    if parts and len(hedged) == len(parts):
        return Reading(None, "a hedge, no answer", steps=worked)  # "I think so", "not sure"
    parts = [_unhedged(c) for c in parts if c not in hedged]
    quoted = [c for c in parts if _QUOTES_THE_TUTOR.match(c.text)]
    parts = [_after_quote(c) if c in quoted else c for c in parts]
    parts = [c for c in parts if c.text.strip()]
    kept = [c for c in parts if not asks_about(c) and not negated(c, c.end)]
    if not kept:
        reason = (
            "a question about the term"
            if any(asks_about(c) for c in parts)
            else "a negated answer"
            if parts
            else "the tutor's words quoted"
            if quoted
            else "no answer stated"
        )
        disowned = reason in ("a negated answer", "the tutor's words quoted")
        return Reading(None, reason, steps=worked, disowned=disowned)
    stated = " ".join(c.text.strip() for c in kept)
    tentative = (
        bool(hedged)
        or any(isinstance(c, _Hedged) for c in kept)
        or any(c.question for c in kept)
        or bool(_TENTATIVE.search(stated))
        or bool(_HEDGE_IN.search(stated))
    )
    cores = [answer_core(c.text) for c in kept]
    cores = [_WRAPPED.sub(r"\1", _MARKUP.sub("", core).strip()).strip() for core in cores]
    cores = [core for core in cores if core and not _CONVERSATION.match(core)]
    if not cores:
        return Reading(None, "no answer stated", steps=worked)
    reason = "the stated answer" if len(cores) == 1 else "several statements"
    return Reading(" ".join(cores), reason, tentative=tentative, steps=worked, parts=tuple(cores))


def _after_quote(clause: Clause) -> Clause:
    """What a clause that quotes the tutor says after the quote: what follows a colon ("you
    asked which gas: oxygen" is the answer "oxygen"), else nothing ("the hint says carbon
    dioxide" is the tutor's words, not the learner's answer)."""
    colon = clause.text.find(":")
    kind = type(clause)  # a hedged clause stays hedged
    if colon < 0:
        return kind(clause.end, clause.end, "", clause.question)
    return kind(clause.start + colon + 1, clause.end, clause.text[colon + 1 :], clause.question)


# A list bullet, a quote marker or emphasis around a text answer ("- result += n", "**went**"):
# typing, not the answer's characters ("- result += n" was wrong, its "-" an operator).
_MARKUP = re.compile(r"^(?:[-*>\u2022]\s+)+|^[*_`]+(?=\S)|(?<=\S)[*_`]+$")
# The whole answer in one pair of brackets ("(result += n)", "[went]"), none inside.
_WRAPPED = re.compile(r"^[(\[]([^()\[\]]+)[)\]]$")


_COPULA_END = re.compile(r"\b(?:is|are|was|were|be|it'?s)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class _Hedged(Clause):
    """A clause whose trailing hedge was cut off, so the hedge's own "not" ("oxygen I'm not
    sure") is not read as negating the answer."""


def _unhedged(clause: Clause) -> Clause:
    body = clause.text.rstrip(" .!?")
    # Looked for near the end only: searched from every position, a run of hedges that does
    # not end the text ("I mean I mean ... x") made it quadratic, 2 s of CPU for 4,000 chars.
    cut = _HEDGE_AFTER.search(body, max(0, len(body) - _HEDGE_REACH))
    if cut is None or not body[: cut.start()].strip() or _COPULA_END.search(body[: cut.start()]):
        return clause  # "it is not certain" says something of the answer: no hedge to cut
    text = body[: cut.start()]
    return _Hedged(clause.start, clause.start + len(text), text, clause.question)


def is_remark(text: str) -> bool:
    """A statement about the learner, the tutor or the task ("I give up", "this is hard",
    "nothing works"), not an answer to the exercise."""
    return bool(_REMARK.search(text))


def _fold(text: str) -> list[str]:
    """Words, case folded, accents removed, each in the singular."""
    plain = ascii_fold(text)
    words = [w for w in _WORD.findall(plain) if w not in ("the", "a", "an")]
    return [_singular(w) for w in words]


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def allowed_edits(length: int) -> int:
    """Typos tolerated in a spelling of ``length`` characters: none in a short word (where one
    letter makes another word), one up to 11, two beyond."""
    return 0 if length <= 4 else 1 if length <= 11 else 2


# Characters that are operators in an answer written as code or a formula ("result += n",
# "if n % 2 == 0", "6CO2 + 6H2O -> C6H12O6"). Words are folded and forgiven a typo; these are
# not: "result = n", "result -= n" and "result == n" are other statements than "result += n"
# (each was graded correct, the words alone being compared). A hyphen inside a word
# ("carbon-dioxide") is spelling, not an operator.
OPERATOR_CHARACTERS = frozenset("=+*/%<>!&|^~@()[]{}")


# One operator run: operator characters (a hyphen only where it is not inside a word), white
# space between them ignored ("result + = n" is "+=").
_OPERATOR_ONE = r"(?:[=+*/%<>!&|^~@()\[\]{}]|(?<![^\W\d_])-|-(?![^\W\d_]))"
_OPERATOR_RUN = re.compile(rf"{_OPERATOR_ONE}(?:\s*{_OPERATOR_ONE})*")


def operators(text: str) -> tuple[str, ...]:
    """The runs of operator characters in ``text``, in order, white space ignored."""
    return tuple("".join(run.split()) for run in _OPERATOR_RUN.findall(text.rstrip(" .!?")))


def same_text(said: str, spelling: str) -> bool:
    """Whether ``said`` is ``spelling`` up to case, plural, articles and a few typos (the first
    letter must match: a different first letter is usually a different word), with the same
    operators in the same order (`operators`)."""
    if operators(said) != operators(spelling):
        return False
    a, b = " ".join(_fold(said)), " ".join(_fold(spelling))
    if not a or not b:
        return False
    if a == b:
        return True
    if a[0] != b[0] or DIGITS.findall(a) != DIGITS.findall(b):
        return False  # a digit changed is another answer, not a typo ("C6H12O5", "2 5 9")
    said_words, spelling_words = a.split(), b.split()
    if len(said_words) == len(spelling_words):
        # word by word, each forgiven what its own length allows: over the whole phrase, "we
        # swum" was one edit from "we swam" and correct, though "swum" alone is wrong
        return all(
            x == y
            or (
                x[0] == y[0]
                and Levenshtein.distance(x, y, score_cutoff=allowed_edits(len(y)))
                <= allowed_edits(len(y))
            )
            for x, y in zip(said_words, spelling_words, strict=True)
        )
    limit = allowed_edits(len(b))
    return Levenshtein.distance(a, b, score_cutoff=limit) <= limit


DIGITS = re.compile(r"\d+")


def mentions_text(message_words: Sequence[str], spelling: str) -> bool:
    """Whether the folded words of a message contain ``spelling`` (as a run of words)."""
    target = _fold(spelling)
    size = len(target)
    if not size:
        return False
    return any(
        same_text(" ".join(message_words[i : i + size]), " ".join(target))
        for i in range(len(message_words) - size + 1)
    )


def text_words(text: str) -> list[str]:
    return _fold(text)
