"""A text answer written so a reader still reads it: a typo, a derived form, backwards, spelled
with the NATO alphabet, or as the first letters of lines.

Runtime stage 7, part of the answer pass (issue 26, item 5). Takes the ASCII-folded canonical
view of a reply (one character per character of the view, so spans carry over) and the
answer's letters run together ("chloroplast"), or, for an answer of several words, its words
(:func:`find_phrase_variants`: a typo in a long enough word, or the whole backwards). Gives the
spans that spell it:

- a word within a small edit distance (``rapidfuzz``'s optimal string alignment: a letter
  added, dropped or changed, or two neighbours swapped, is one edit; one edit from six
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
from collections.abc import Callable, Iterator

from pedrag.runtime.detect.folding import stem

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


def find_text_variants(folded: str, compact: str) -> Iterator[tuple[int, int]]:
    """Spans of ``folded`` (ASCII, the reply's view) that spell ``compact`` (lower-case
    letters) in one of the ways the module docstring lists."""
    if len(compact) < MIN_LETTERS or not compact.isalpha():
        return
    edits = allowed_edits(len(compact))
    matches = [(m.group(0).lower(), m.start(), m.end()) for m in _WORD.finditer(folded)]
    for index, (word, start, end) in enumerate(matches):
        if _spells(word, compact):
            yield start, end
            continue
        if not edits or len(word) >= len(compact) or not compact.startswith(word[:2]):
            continue
        joined = word
        for following in range(index + 1, min(index + 3, len(matches))):
            gap = folded[matches[following - 1][2] : matches[following][1]]
            if len(gap) > 2:
                break
            joined += matches[following][0]
            if len(joined) > len(compact) + edits:
                break
            if _within(joined, compact, edits):
                yield start, matches[following][2]
                break
    yield from _nato(matches, compact)
    yield from _acrostic(folded, compact)


def find_phrase_variants(folded: str, words: list[str]) -> Iterator[tuple[int, int]]:
    """Spans of ``folded`` that spell an answer of several words (lower-case, each all
    letters) with a typo in some of them ("carbon dioxid", "glucose and oxigen"), or written
    backwards as a whole ("edixoid nobrac").

    Each word is held to its own length's budget (:func:`allowed_edits`; two letters swapped
    count as one edit, the commonest slip of a typist: "dioxdie"), not the phrase to
    the budget of all its letters: a short word must be exact, so "the sum" does not read as
    "the sun", nor one word alone as the phrase ("result" for "result n"). An answer with a
    word that is not all letters (code, a formula) is left to the exact rules."""
    size = len(words)
    if size < 2 or not all(word.isalpha() for word in words):
        return
    budgets = [allowed_edits(len(word)) for word in words]
    compact = "".join(words)
    backwards = compact[::-1] if len(compact) >= MIN_LETTERS else "\0"
    first, first_budget, last = words[0], budgets[0], words[-1]
    shortest, longest = len(first) - first_budget, len(first) + first_budget
    tokens = _WORD.findall(folded.lower())  # the view is ASCII: lower() keeps its length
    # Where a match can start (most replies: nowhere), found before any span is read.
    starts = [
        index
        for index, token in enumerate(tokens)
        if token == first
        or (
            first_budget
            and shortest <= len(token) <= longest
            # one edit leaves the first or the last letter as it was
            and (first_budget > 1 or token[0] == first[0] or token[-1] == first[-1])
            and _within(token, first, first_budget)
        )
        or backwards.startswith(token)
    ]
    if not starts:
        return
    spans = [match.span() for match in _WORD.finditer(folded)]

    def adjacent(begin: int, final: int) -> bool:
        return all(len(folded[spans[k][1] : spans[k + 1][0]]) <= 2 for k in range(begin, final))

    def near(token: str, word: str, budget: int) -> bool:
        return token == word or (
            budget > 0 and abs(len(token) - len(word)) <= budget and _within(token, word, budget)
        )

    for index in starts:
        window = tokens[index : index + size]
        if len(window) == size and window != words:  # the exact rules read the answer's words
            plural = window[:-1] == words[:-1] and window[-1] in (last + "s", last + "es")
            if (
                not plural
                and all(map(near, window, words, budgets))
                and adjacent(index, index + size - 1)
            ):
                yield spans[index][0], spans[index + size - 1][1]
                continue
        if backwards.startswith(tokens[index]):
            joined, cursor = tokens[index], index
            while len(joined) < len(compact) and cursor + 1 < len(tokens):
                cursor += 1
                if not adjacent(cursor - 1, cursor):
                    break
                joined += tokens[cursor]
            if joined == backwards:
                yield spans[index][0], spans[cursor][1]


@functools.lru_cache(maxsize=8192)  # a reply's words recur from reply to reply
def _spells(word: str, compact: str) -> bool:
    """Whether ``word`` alone spells ``compact`` in one of the module's ways (the exact word
    is the exact rules' to read)."""
    if word == compact:
        return False  # the exact rules read it
    if word == compact[::-1]:
        return True  # backwards (a palindrome is the exact word, above)
    edits = allowed_edits(len(compact))
    if word[0] == compact[0] and len(word) >= len(root := stem(compact)):
        if len(word) > len(compact) and word.startswith(compact):
            return True  # "chloroplastic"
        if len(compact) >= MIN_TYPO_LETTERS and stem(word) == root:
            return True
    return bool(edits and abs(len(word) - len(compact)) <= edits and _within(word, compact, edits))


def _within(written: str, meant: str, edits: int) -> bool:
    """Whether ``written`` is at most ``edits`` edits from ``meant``, a swap of two
    neighbouring letters counting as one ("cholroplast"): the distance a reader forgives."""
    return _osa_distance()(written, meant, score_cutoff=edits) <= edits


@functools.cache  # imported on first use (not at the detector's import), then one lookup
def _osa_distance() -> Callable[..., int]:
    from rapidfuzz.distance import OSA

    return OSA.distance  # type: ignore[no-any-return]


def _nato(matches: list[tuple[str, int, int]], compact: str) -> Iterator[tuple[int, int]]:
    letters = [(_NATO.get(word), start, end) for word, start, end in matches]
    if sum(letter is not None for letter, _, _ in letters) < len(compact):
        return
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
