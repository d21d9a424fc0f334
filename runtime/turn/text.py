"""Text crossing into the runtime: the student's message and the model's reply, made safe to
store, print and check.

Runtime, the turn's boundary. Two readings of one text:

- :func:`clean_text` — for storing and printing: control characters (except tab, newline and
  carriage return), ANSI escape sequences and unpaired surrogates replaced by U+FFFD;
  :func:`safe_text` also removes credentials from URLs (:func:`redact_credentials`).
- :func:`detection_view` — for the answer detector: the text as a reader sees it, with a map
  back to the original offsets. Compatibility forms folded (NFKD: superscript, circled,
  full-width and keycap digits, ligatures, Roman-numeral signs), combining marks, variation
  selectors and invisible format characters (zero-width space and joiners, bidi marks, soft
  hyphen) removed, hyphen look-alikes made "-", Unicode confusables (UTS #39, from the
  ``confusable_homoglyphs`` package's copy of the Unicode data) mapped to the ASCII letter or
  digit they imitate ("сhloroplast" with a Cyrillic "с" reads "chloroplast"), runs of %XX escapes
  decoded, and simple inline markup (``<sub>``, ``<sup>``, ``\\text{}``) dropped.

Why: the text a turn handles ends up in the audit record, in the transcript the student sees and
in the trace an instructor reads with ``pedrag audit``. A NUL cannot be stored (PostgreSQL's
JSONB refuses it, so the store refuses it everywhere) and would fail the whole turn; an unpaired
surrogate cannot be written as UTF-8 and would crash the terminal output; an ANSI escape
sequence could rewrite what the instructor's terminal shows of the audit trail. Replacing them,
rather than dropping them, keeps a visible mark that something was there. And a detector that
reads code points rather than what a reader sees is beaten by one inserted zero-width space.
"""

from __future__ import annotations

import functools
import re
import unicodedata

REPLACEMENT = "\ufffd"

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
_UNSAFE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with ANSI escape sequences, control characters (but ``\\t``, ``\\n``,
    ``\\r``) and unpaired surrogates each replaced by one U+FFFD."""
    if text.isascii() and text.isprintable():
        return text
    return _UNSAFE.sub(REPLACEMENT, _ANSI.sub(REPLACEMENT, text))


_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@:]*(?::[^\s/@]*)?@")


def redact_credentials(text: str) -> str:
    """``text`` with the user and password of every URL in it removed
    (``https://user:secret@host/v1`` -> ``https://***@host/v1``)."""
    return _URL_CREDENTIALS.sub(r"\1***@", text) if "@" in text else text


def safe_text(text: str) -> str:
    """What may be stored or printed: :func:`clean_text` of :func:`redact_credentials`."""
    return clean_text(redact_credentials(text))


# --- the detector's view ----------------------------------------------------------------------

# Hyphens a model may write instead of "-": hyphen, non-breaking hyphen, figure dash, en dash,
# minus sign, small and full-width hyphen-minus. The em dash stays: it separates clauses. The
# soft hyphen is invisible (Cf) and goes, like a zero-width space.
_HYPHENS = frozenset("\u2010\u2011\u2012\u2013\u2212\ufe63\uff0d")
_DROPPED_CATEGORIES = frozenset({"Mn", "Me", "Cf"})
_SUPERSCRIPT_DIGITS = frozenset("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")
# A run of %XX escapes; not right after a digit, where "%" is a percent sign ("50%20").
_PERCENT_RUN = re.compile(r"(?<![0-9])(?:%[0-9A-Fa-f]{2})+")
_MARKUP = re.compile(
    r"</?(?:sub|sup|b|i|em|strong|span|code|tt|u|small|big|mark)\s*>"
    r"|\\(?:text|mathrm|mathbf|mathit|operatorname|textbf|textit|mbox)\s*\{"
    r"|\\[,;:! ]|\$",
    re.IGNORECASE,
)
_LATEX_GROUP = re.compile(r"(?<=[A-Za-z0-9])[_^]\{([A-Za-z0-9]{1,8})\}|(?<=[A-Za-z])_([0-9])")


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


def _char_view(char: str, confusables: dict[str, str]) -> str:
    if char in _HYPHENS:
        return "-"
    if unicodedata.category(char) in _DROPPED_CATEGORIES:
        return ""
    if char in confusables:  # before NFKD, which can turn a look-alike into another letter
        return confusables[char]
    decomposed = unicodedata.normalize("NFKD", char)
    kept = []
    for part in decomposed:
        if unicodedata.category(part) in _DROPPED_CATEGORIES:
            continue
        if part in _HYPHENS:
            part = "-"
        kept.append(part if part.isascii() else confusables.get(part, part))
    return "".join(kept)


def detection_view(text: str) -> tuple[str, list[int]]:
    """``text`` as a reader sees it (see the module docstring), with, for each character of
    the view, the index in ``text`` it came from (and ``len(text)`` at the end). Linear in
    the length of ``text``."""
    if text.isascii() and "%" not in text and "<" not in text and "\\" not in text:
        if "$" not in text and "_" not in text and "^" not in text:
            return text, [*range(len(text) + 1)]
    # Spans the view rewrites as a whole: %XX runs (decoded when printable ASCII) and markup.
    rewrites: dict[int, tuple[int, str]] = {}
    for match in _PERCENT_RUN.finditer(text):
        try:
            decoded = bytes.fromhex(match.group(0).replace("%", "")).decode("ascii")
        except (ValueError, UnicodeDecodeError):
            continue
        if decoded.isprintable() and (len(decoded) > 1 or decoded.isalnum()):
            rewrites[match.start()] = (match.end(), decoded)
    for match in _MARKUP.finditer(text):
        rewrites.setdefault(match.start(), (match.end(), ""))
    for match in _LATEX_GROUP.finditer(text):
        rewrites.setdefault(match.start(), (match.end(), match.group(1) or match.group(2)))
    confusables = _confusables() if not text.isascii() else {}
    kept: list[str] = []
    origin: list[int] = []
    index, previous_was_digit, previous_superscript = 0, False, False
    closing_braces = 0
    while index < len(text):
        rewrite = rewrites.get(index)
        if rewrite is not None:
            end, replacement = rewrite
            if text[index] == "\\" and text[end - 1 : end] == "{":
                closing_braces += 1  # "\text{56}": the group's closing brace goes too
            kept.append(replacement)
            step = (end - index) // max(1, len(replacement))
            origin.extend(index + k * step for k in range(len(replacement)))
            index = end
            previous_was_digit = bool(replacement) and replacement[-1].isdigit()
            continue
        char = text[index]
        if char == "}" and closing_braces:
            closing_braces -= 1
            index += 1
            continue
        if char.isascii():
            view = char
        else:
            view = _char_view(char, confusables)
            superscript = char in _SUPERSCRIPT_DIGITS
            if superscript and previous_was_digit and not previous_superscript:
                view = "^" + view  # "10²" is ten squared, not 102
            previous_superscript = superscript
        if view:
            kept.append(view)
            origin.extend([index] * len(view))
            previous_was_digit = view[-1].isdigit()
            if char.isascii():
                previous_superscript = False
        index += 1
    origin.append(len(text))
    return "".join(kept), origin


_WORD_TOKEN = re.compile(r"\w+")


def as_written(candidate: str, message: str) -> str:
    """``candidate`` (a normalised reading of the learner's answer, e.g. lower-cased with its
    operators dropped) as the learner wrote it in ``message``: the shortest stretch of the
    message holding its words in order, case and symbols kept ("6CO2 + 6H2O -> C6H12O6 +
    6O2", not "6co2 6h2o - c6h12o6 6o2"). ``candidate`` itself when the message does not hold
    them (issue 27: the learner's own text echoed exactly as written)."""
    words = [word.lower() for word in _WORD_TOKEN.findall(candidate)]
    if not words:
        return candidate
    tokens = list(_WORD_TOKEN.finditer(message))
    best: tuple[int, int] | None = None
    for start in range(len(tokens)):
        if tokens[start].group(0).lower() != words[0]:
            continue
        position, index = start, 0
        while position < len(tokens) and index < len(words):
            if tokens[position].group(0).lower() == words[index]:
                index += 1
            position += 1
        if index == len(words):
            span = (tokens[start].start(), tokens[position - 1].end())
            if best is None or span[1] - span[0] < best[1] - best[0]:
                best = span
    return message[best[0] : best[1]] if best is not None else candidate
