"""Folding text to plain lower-case ASCII: the one rule the detector's word targets and the
grader's text answers compare words by.

Runtime, shared by the detector (`pedrag.runtime.detect.answer`) and the answer reader
(`pedrag.runtime.learning.answer_reader`). Takes any text; gives it decomposed (NFKD), with
whatever is not ASCII dropped (accents, so "Crème" and "creme" compare equal) and lower-cased.

Why one place: the detector and the grader must agree on when two spellings are the same words,
or a reply the grader accepts as the answer slips past the detector. The other normalisations
are different rules on purpose and stay with their stage: the detector's reader view
(`pedrag.runtime.detect.canonical`: confusables, invisible characters, offsets kept) and its
letters-only fold for the pre-classifier's word patterns (`canonical.latin_letters`), the
per-character fold that keeps the detector's spans aligned (`answer._ascii_folded`, no case
change), the number-word table (`number_words._fold_table`, letters only), the answer reader's
NFKC with dashes unified (symbols kept for maths), and the grader's case-folded comparison of a
message with an accepted spelling.
"""

from __future__ import annotations

import functools
import unicodedata


def ascii_fold(text: str) -> str:
    """``text`` in NFKD with its non-ASCII characters dropped, lower-cased."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()


@functools.lru_cache(maxsize=4096)
def stem(word: str) -> str:
    """The Snowball English stem of ``word`` ("carrying" and "carried" -> "carri"): how the
    detector's text targets and the course material's terms compare inflected words."""
    import snowballstemmer

    return str(snowballstemmer.stemmer("english").stemWord(word))
