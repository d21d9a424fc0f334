"""A text answer written so a reader still reads it: a typo, a derived form, backwards, spelled
with the NATO alphabet, or as the first letters of lines.

Runtime stage 7, part of the answer pass (issue 26, item 5). Takes the ASCII-folded canonical
view of a reply (one character per character of the view, so spans carry over) and the
answer's letters run together ("chloroplast"). Gives the spans that spell it:

- a word within a small edit distance (``rapidfuzz``'s Levenshtein: one edit from six
  letters, two from ten): "cholroplast", "chloroplst";
- two or three adjacent words that run together within that distance: "chl_roplast",
  "chloro plast";
- a derived form: the same Snowball stem (the stemmer the course index uses), or the answer
  followed by a suffix: "chloroplasts", "chloroplastic";
- the letters backwards: "tsalporolhc";
- NATO spelling: "Charlie Hotel Lima Oscar ...";
- an acrostic: the first letters of consecutive lines.

Why a floor of six letters for typos and four for the rest: a short word is one edit away from
many ordinary words ("cell" / "call"); those are left to the exact rules and the judge.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

MIN_TYPO_LETTERS = 6
MIN_LETTERS = 4
_WORD = re.compile(r"[A-Za-z]+")
_NATO = {
    "alpha": "a", "alfa": "a", "bravo": "b", "charlie": "c", "delta": "d", "echo": "e",
    "foxtrot": "f", "golf": "g", "hotel": "h", "india": "i", "juliet": "j", "juliett": "j",
    "kilo": "k", "lima": "l", "mike": "m", "november": "n", "oscar": "o", "papa": "p",
    "quebec": "q", "romeo": "r", "sierra": "s", "tango": "t", "uniform": "u", "victor": "v",
    "whiskey": "w", "whisky": "w", "xray": "x", "x-ray": "x", "yankee": "y", "zulu": "z",
}  # fmt: skip


def allowed_edits(length: int) -> int:
    """Edits a word of ``length`` letters may carry and still read as the answer."""
    if length < MIN_TYPO_LETTERS:
        return 0
    return 1 if length < 10 else 2


@functools.lru_cache(maxsize=256)
def _stem(word: str) -> str:
    import snowballstemmer

    return str(snowballstemmer.stemmer("english").stemWord(word))


def find_text_variants(folded: str, compact: str) -> Iterator[tuple[int, int]]:
    """Spans of ``folded`` (ASCII, the reply's view) that spell ``compact`` (lower-case
    letters) in one of the ways the module docstring lists."""
    if len(compact) < MIN_LETTERS or not compact.isalpha():
        return
    from rapidfuzz.distance import Levenshtein

    edits = allowed_edits(len(compact))
    stem = _stem(compact)
    backwards = compact[::-1]
    matches = [(m.group(0).lower(), m.start(), m.end()) for m in _WORD.finditer(folded)]
    for index, (word, start, end) in enumerate(matches):
        if word == compact:
            continue  # the exact rules read it
        if word == backwards and backwards != compact:
            yield start, end
            continue
        if len(word) >= len(compact) + 1 and word.startswith(compact):
            yield start, end  # "chloroplastic"
            continue
        if len(compact) >= MIN_TYPO_LETTERS and _stem(word) == stem:
            yield start, end
            continue
        if edits and abs(len(word) - len(compact)) <= edits:
            if Levenshtein.distance(word, compact, score_cutoff=edits) <= edits:
                yield start, end
                continue
        if edits:
            joined = word
            for following in range(index + 1, min(index + 3, len(matches))):
                gap = folded[matches[following - 1][2] : matches[following][1]]
                if len(gap) > 2:
                    break
                joined += matches[following][0]
                if len(joined) > len(compact) + edits:
                    break
                if Levenshtein.distance(joined, compact, score_cutoff=edits) <= edits:
                    yield start, matches[following][2]
                    break
    yield from _nato(matches, compact)
    yield from _acrostic(folded, compact)


def _nato(matches: list[tuple[str, int, int]], compact: str) -> Iterator[tuple[int, int]]:
    letters = [(_NATO.get(word), start, end) for word, start, end in matches]
    for index in range(len(letters) - len(compact) + 1):
        window = letters[index : index + len(compact)]
        if "".join(letter or "?" for letter, _, _ in window) == compact:
            yield window[0][1], window[-1][2]


def _acrostic(folded: str, compact: str) -> Iterator[tuple[int, int]]:
    """The first letters of consecutive non-empty lines."""
    lines = []
    position = 0
    for line in folded.split("\n"):
        first = _WORD.search(line)
        if first is not None:
            lines.append((first.group(0)[0].lower(), position, position + len(line)))
        position += len(line) + 1
    if len(lines) < len(compact):
        return
    initials = "".join(letter for letter, _, _ in lines)
    at = initials.find(compact)
    while at != -1:
        yield lines[at][1], lines[at + len(compact) - 1][2]
        at = initials.find(compact, at + 1)
