"""The canonical view: a text as a reader sees it, before anything is matched against it.

Runtime stage 7's first step (DESIGN, "The runtime turn"; issue 26, item 1). Takes any text (a
drafted reply, a student's message, an exercise prompt). Gives a :class:`CanonicalView`: the
text a person reading the rendered reply would read, with, for each of its characters, the
offset in the original text it came from, so a finding on the view points at the reply itself.

What the view does, in order:

- **Escapes decoded.** HTML entities (``&#53;``, ``&#x36;``, ``&amp;``), ``\\uXXXX`` /
  ``\\xXX`` escapes and runs of ``%XX`` URL escapes (not right after a digit, where ``%`` is a
  percent sign) read as the characters they stand for.
- **LaTeX reduced to its text.** ``\\frac{a}{b}`` (and ``\\dfrac``, ``\\tfrac``) reads
  ``a/b``; ``\\cdot`` / ``\\times`` / ``\\div`` read as operators; ``\\boxed``, ``\\text`` and
  every other command before a group are dropped with their braces; braces, ``$`` and the
  spacing commands ``\\!`` ``\\,`` ``\\;`` ``\\:`` are removed; ``x^{2}`` / ``CO_2`` read
  ``x2`` / ``CO2``. Inline markup (``<sub>``, ``<b>``) goes too.
- **Digits read as digits.** Every character with a decimal or digit value (Unicode
  ``decimal`` / ``digit``: Arabic-Indic, Persian, Devanagari, full-width, mathematical,
  circled, dingbat, parenthesised and full-stop digits) is that ASCII digit; a superscript
  digit right after a digit reads ``^`` and the digit ("10²" is ten squared, not 102).
- **Invisible and blank characters removed**: format characters (category Cf: zero-width
  space and joiners, the soft hyphen, the bidi marks), combining marks, variation selectors,
  and the characters that render blank (U+2800 braille blank, the Hangul fillers U+115F,
  U+1160, U+3164, U+FFA0). A bidi **override** (U+202E ... U+202C) displays its content
  backwards, so the view reverses it: "\\u202e65\\u202c" reads "56".
- **Look-alikes folded.** Compatibility forms (NFKD), hyphen look-alikes to ``-`` and Unicode
  confusables (UTS #39, the ``confusable_homoglyphs`` package's copy) to the ASCII letter or
  digit they imitate ("сhloroplast" with a Cyrillic "с").
- **Spacing collapsed.** Any run of horizontal spacing (spaces, tabs, the Unicode spaces) is
  one space: a gap of five spaces is as much a gap as one.

:func:`latin_letters` is the same fold of look-alikes and invisible characters for readers that
match words and nothing else (the pre-classifier's injection and request patterns): letters
only, word by word, with braces, LaTeX, digits and every other character left as written, and
a word with any letter that imitates none (a genuine Russian or Greek word) left whole.

Why one module: the detector, the stream guard and the grader's answer reader must read the
same text, or a spelling the detector reads through is one the grader does not (and the reverse).
Why a map back: findings are reported, and replaced in a stream, at the reply's own offsets.
The view is a plain function of the text, cached by value: a reply is read once per turn
however many passes ask.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from dataclasses import dataclass

# Hyphens a model may write instead of "-": hyphen, non-breaking hyphen, figure dash, en dash,
# minus sign, small and full-width hyphen-minus. The em dash stays: it separates clauses.
_HYPHENS = frozenset("\u2010\u2011\u2012\u2013\u2212\ufe63\uff0d")
_DROPPED_CATEGORIES = frozenset({"Mn", "Me", "Cf"})
# Characters that render as nothing or as blank space but are letters or symbols to Unicode.
BLANK_CHARACTERS = frozenset("\u2800\u115f\u1160\u3164\uffa0\u180e\u17b4\u17b5\u034f")
_SUPERSCRIPT_DIGITS = frozenset("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")
_OVERRIDE_START, _OVERRIDE_END = "\u202e", "\u202c"
_LINE_BREAKS = frozenset("\n\r\u2028\u2029\x0b\x0c\x85")

# A run of %XX escapes; not right after a digit, where "%" is a percent sign ("50%20").
_PERCENT_RUN = re.compile(r"(?<![0-9])(?:%[0-9A-Fa-f]{2})+")
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});?")
_BACKSLASH_ESCAPE = re.compile(r"\\(?:u\{?([0-9A-Fa-f]{4,6})\}?|x([0-9A-Fa-f]{2}))")
_MARKUP = re.compile(
    r"</?(?:sub|sup|b|i|em|strong|span|code|tt|u|small|big|mark|p|div|br)\s*/?>", re.IGNORECASE
)
_LATEX_FRACTION = re.compile(r"\\[dtc]?frac\s*")
_LATEX_OPERATORS = {
    "cdot": "*", "times": "×", "div": "÷", "ast": "*", "pm": "±", "minus": "-", "over": "/",
    "lbrace": "", "rbrace": "", "left": "", "right": "", "displaystyle": "", "quad": " ",
    "qquad": " ",
}  # fmt: skip
_LATEX_COMMAND = re.compile(r"\\([A-Za-z]+)\s*|\\[,;:! ]")
_LATEX_SPECIALS = frozenset("${}")
_LATEX_GROUP = re.compile(r"(?<=[A-Za-z0-9])[_^]\{([A-Za-z0-9]{1,8})\}|(?<=[A-Za-z])_([0-9])")


@dataclass(frozen=True)
class CanonicalView:
    """The view of one text: ``text``, and for each of its characters (and its end) the
    offset in the original text it came from."""

    text: str
    origin: tuple[int, ...]

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original text's span for the view's ``text[start:end]``."""
        if end <= start:
            return self.origin[start], self.origin[start]
        first, last = self.origin[start], self.origin[end - 1]
        low, high = min(first, last), max(first, last)  # a reversed override runs backwards
        return low, high + 1


@functools.cache
def _confusables() -> dict[str, str]:
    """Non-ASCII characters -> the ASCII letter or digit they imitate (UTS #39 data as the
    ``confusable_homoglyphs`` package ships it); loaded on first non-ASCII text."""
    from confusable_homoglyphs import utils

    table: dict[str, str] = {"\u2044": "/", "\u2215": "/"}
    data = utils.load("confusables.json")

    def look_alikes(char: str) -> list[str]:
        return [
            "".join(c for c in glyph["c"] if unicodedata.category(c) != "Cf")
            for glyph in data.get(char, ())
        ]

    for char in data:
        if len(char) != 1 or char.isascii():
            continue
        candidates: list[str] = []
        # UTS #39 skeletons are transitive ("τ" -> "ᴛ" -> "T"): follow up to three steps.
        frontier, seen = [char], {char}
        for _ in range(3):
            following = [alike for item in frontier for alike in look_alikes(item)]
            candidates = [c for c in following if len(c) == 1 and c.isascii() and c.isalnum()]
            if candidates:
                break
            frontier = [c for c in following if len(c) == 1 and c not in seen]
            seen.update(frontier)
        if not candidates:
            continue
        # A letter imitates a letter where it can ("О" is "O", not "0"); a digit a digit.
        wanted = str.isdigit if unicodedata.category(char) == "Nd" else str.isalpha
        preferred = [c for c in candidates if wanted(c)]
        table[char] = (preferred or candidates)[0]
    return table


def digit_value(char: str) -> str | None:
    """The ASCII digit a character stands for ("٥", "۵", "५", "５", "❺", "⑸" -> "5"), or a
    whole number for the circled and parenthesised numbers past nine ("⑩" -> "10")."""
    value = unicodedata.decimal(char, None)
    if value is None:
        value = unicodedata.digit(char, None)
    if value is not None:
        return str(value)
    if unicodedata.category(char) == "No":
        numeric = unicodedata.numeric(char, None)
        if numeric is not None and numeric == int(numeric) and numeric >= 0:
            return str(int(numeric))
    return None


def _char_view(char: str, confusables: dict[str, str]) -> str:
    if char in _HYPHENS:
        return "-"
    if char in BLANK_CHARACTERS or unicodedata.category(char) in _DROPPED_CATEGORIES:
        return ""
    digit = digit_value(char)
    if digit is not None:
        return digit
    if char in confusables:  # before NFKD, which can turn a look-alike into another letter
        return confusables[char]
    decomposed = unicodedata.normalize("NFKD", char)
    kept = []
    for part in decomposed:
        if part in BLANK_CHARACTERS or unicodedata.category(part) in _DROPPED_CATEGORIES:
            continue
        if part in _HYPHENS:
            part = "-"
        if part.isspace() and part not in _LINE_BREAKS:
            part = " "
        kept.append(part if part.isascii() else confusables.get(part, part))
    return "".join(kept)


def _is_plain(text: str) -> bool:
    """Nothing for the view to do: ASCII with no escape, markup, LaTeX or doubled space."""
    return (
        text.isascii()
        and not any(mark in text for mark in ("%", "<", "\\", "$", "_", "^", "&", "{", "}"))
        and "  " not in text
        and "\t" not in text
    )


def _decoded_escapes(text: str) -> dict[int, tuple[int, str]]:
    """Spans the view rewrites as a whole, by start: escapes, markup and LaTeX commands."""
    rewrites: dict[int, tuple[int, str]] = {}
    if "%" in text:
        for match in _PERCENT_RUN.finditer(text):
            try:
                decoded = bytes.fromhex(match.group(0).replace("%", "")).decode("ascii")
            except (ValueError, UnicodeDecodeError):
                continue
            if decoded.isprintable() and (len(decoded) > 1 or decoded.isalnum()):
                rewrites[match.start()] = (match.end(), decoded)
    if "&" in text:
        for match in _ENTITY.finditer(text):
            decoded = html.unescape(match.group(0))
            if decoded != match.group(0):
                rewrites[match.start()] = (match.end(), decoded)
    if "<" in text:
        for match in _MARKUP.finditer(text):
            rewrites.setdefault(match.start(), (match.end(), ""))
    if "_" in text or "^" in text:
        for match in _LATEX_GROUP.finditer(text):
            rewrites.setdefault(match.start(), (match.end(), match.group(1) or match.group(2)))
    if "\\" in text:
        for match in _BACKSLASH_ESCAPE.finditer(text):
            code = int(match.group(1) or match.group(2), 16)
            if code <= 0x10FFFF:
                rewrites.setdefault(match.start(), (match.end(), chr(code)))
        for match in _LATEX_FRACTION.finditer(text):
            rewrites.setdefault(match.start(), (match.end(), "\x00frac"))
        for match in _LATEX_COMMAND.finditer(text):
            name = match.group(1)
            replacement = _LATEX_OPERATORS.get(name, "") if name else ""
            rewrites.setdefault(match.start(), (match.end(), replacement))
    return rewrites


def _fraction_braces(text: str, start: int) -> tuple[int, int] | None:
    """After ``\\frac`` at ``start``: the offsets of the closing brace of the numerator group
    and the opening brace of the denominator group ("{112}{2}"), or None."""
    if text[start : start + 1] != "{":
        return None
    depth = 0
    for index in range(start, min(len(text), start + 200)):
        char = text[index]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                following = index + 1
                while following < len(text) and text[following] == " ":
                    following += 1
                return (index, following) if text[following : following + 1] == "{" else None
    return None


@functools.lru_cache(maxsize=512)
def canonical_view(text: str) -> CanonicalView:
    """``text`` as a reader sees it (see the module docstring), with the map back to the
    original offsets. Linear in the length of ``text``; cached by value."""
    if _is_plain(text):
        return CanonicalView(text, tuple(range(len(text) + 1)))
    rewrites = _decoded_escapes(text)
    latex = "\\" in text or "$" in text or "{" in text
    fraction_bar: set[int] = set()
    confusables = _confusables() if not text.isascii() else {}
    kept: list[str] = []
    origin: list[int] = []
    index, previous_was_digit, previous_superscript = 0, False, False
    override: list[tuple[int, int]] = []  # (start in kept, depth) of open bidi overrides

    def emit(view: str, at: int) -> None:
        nonlocal previous_was_digit
        for char in view:
            if char == " " and kept and kept[-1] == " ":
                continue  # a run of spacing is one space
            kept.append(char)
            origin.append(at)
        if view:
            previous_was_digit = view[-1].isdigit()

    while index < len(text):
        rewrite = rewrites.get(index)
        if rewrite is not None:
            end, replacement = rewrite
            if replacement == "\x00frac":
                braces = _fraction_braces(text, end)
                if braces is not None:
                    fraction_bar.add(braces[0])
                    fraction_bar.update(range(braces[0] + 1, braces[1]))
                index = end
                continue
            for position, char in enumerate(replacement):
                # A decoded entity or escape is read like any other character.
                at = index + min(position, end - index - 1)
                emit(char if char.isascii() else _char_view(char, confusables), at)
            index = end
            continue
        char = text[index]
        if index in fraction_bar:
            if text[index] == "}":
                emit("/", index)
            index += 1
            continue
        if char == _OVERRIDE_START:
            override.append((len(kept), index))
            index += 1
            continue
        if char == _OVERRIDE_END or char in _LINE_BREAKS:
            if override:
                _reverse_from(kept, origin, override.pop()[0])
            if char == _OVERRIDE_END:
                index += 1
                continue
        if latex and char in _LATEX_SPECIALS:
            index += 1
            continue
        if char.isascii():
            if char == "\t":
                char = " "
            emit(char, index)
            previous_superscript = False
        else:
            view = _char_view(char, confusables)
            superscript = char in _SUPERSCRIPT_DIGITS
            if superscript and previous_was_digit and not previous_superscript:
                view = "^" + view  # "10²" is ten squared, not 102
            previous_superscript = superscript
            emit(view, index)
        index += 1
    while override:
        _reverse_from(kept, origin, override.pop()[0])
    origin.append(len(text))
    return CanonicalView("".join(kept), tuple(origin))


def _reverse_from(kept: list[str], origin: list[int], start: int) -> None:
    """A bidi override's content is displayed right to left: the view reads it so."""
    kept[start:] = kept[start:][::-1]
    origin[start:] = origin[start:][::-1]


def canonical_text(text: str) -> str:
    """Only the view's text (for readers that need no offsets)."""
    return canonical_view(text).text


def _latin_letter(char: str, confusables: dict[str, str]) -> str | None:
    """The ASCII letter ``char`` imitates or is a compatibility form of (a Cyrillic "і", a
    Greek "ο", a full-width "ｇ", a mathematical "𝐠"), "" for an invisible character or a
    combining mark, else None."""
    if char.isascii():
        return char
    if char in BLANK_CHARACTERS or unicodedata.category(char) in _DROPPED_CATEGORIES:
        return ""
    for candidate in (confusables.get(char, ""), unicodedata.normalize("NFKC", char)):
        if len(candidate) == 1 and candidate.isascii() and candidate.isalpha():
            return candidate
    return None


def _in_word(char: str) -> bool:
    return (
        char.isalpha()
        or char in BLANK_CHARACTERS
        or unicodedata.category(char) in _DROPPED_CATEGORIES
    )


@functools.lru_cache(maxsize=512)
def latin_letters(text: str) -> str:
    """``text`` with each word written in look-alike letters ("іgnore" with a Cyrillic "і",
    "ｓｙｓｔｅｍ", "ig\u200dnore") spelled in the ASCII letters a reader sees; a word with a
    letter that imitates no ASCII letter stays as written, and so does everything that is not
    a word. Why words, not characters: a Russian or Greek sentence keeps its own words (at most
    a short one made only of look-alikes, "как", reads in Latin letters, which no English
    pattern is made of), while an injection spelled in look-alikes cannot hide."""
    if text.isascii():
        return text
    confusables = _confusables()
    pieces: list[str] = []
    index = 0
    while index < len(text):
        if not _in_word(text[index]):
            pieces.append(text[index])
            index += 1
            continue
        end = index
        while end < len(text) and _in_word(text[end]):
            end += 1
        word = text[index:end]
        letters = [_latin_letter(char, confusables) for char in word]
        pieces.append(word if None in letters else "".join(letters))  # type: ignore[arg-type]
        index = end
    return "".join(pieces)
