"""The detector's quick scans of issue 30 goal 2 (a warm turn under 2 ms): a text answer's token
scan that passes over tokens starting nothing, the range reader that asks for bound cues once
per text, and the arithmetic reader's magnitude test on integers. Each is compared with the
reading it replaces, kept here as the oracle, on generated texts built near its edges: a quick
scan that ever disagreed would change a verdict."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from pedrag.runtime.detect.answer import (
    _CHAINED,
    _LOWER_BOUND,
    _UPPER_BOUND,
    _ascii_folded,
    _bound_before,
    _find_words,
    _leet_spellings,
    _pinned_ranges,
    _short_answer_is_standalone,
    find_numbers,
)
from pedrag.runtime.detect.arithmetic import MAX_MAGNITUDE, _small
from pedrag.runtime.detect.code import (
    _BACKTICK_SPAN,
    _BLOCK_SIGNALS,
    _NEEDS,
    _SIGNALS,
    _code_free,
    _is_prose,
    code_line_signals,
)
from pedrag.runtime.detect.folding import stem
from pedrag.runtime.detect.text_answer import (
    MIN_LETTERS,
    MIN_TYPO_LETTERS,
    _acrostic,
    _nato,
    allowed_edits,
    find_phrase_variants,
    find_text_variants,
)


def _find_words_every_token(text: str, words: Sequence[str]) -> Iterator[tuple[int, int]]:
    """The text answer's scan as it was before the quick path: every token visited."""
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
    for index in range(len(tokens)):
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


TARGETS = [
    ["pentagon"], ["pen", "tagon"], ["carbon", "dioxide"], ["b"], ["ab"], ["cell"],
    ["box"], ["a", "b", "c"], ["mitochondria"], ["the", "cell", "wall"], ["x1"],
]  # fmt: skip
WORD_PIECES = [
    "pentagon", "Pentagon", "PENTAGONS", "pentagones", "pen", "tagon", "tagons", "p", "e", "n",
    "ta", "gon", "carbon", "dioxide", "dioxides", "carbondioxide", "b", "B", "ab", "AB", "cell",
    "cells", "cellses", "box", "boxes", "boxs", "a", "c", "mito", "chondria", "mitochondria",
    "the", "wall", "walls", "x1", "x", "1", "p3nt4g0n", "c3ll", "word", "answer", "é", "ﬁ",
]  # fmt: skip
WORD_GAPS = [" ", "-", "", "'", "(", ")", '"', ". ", "\n", "_", "/", "’"]


def joined(pieces: list[str], gaps: list[str], most: int) -> st.SearchStrategy[str]:
    """Texts of up to ``most`` pieces, each followed by a gap."""
    parts = st.lists(st.tuples(st.sampled_from(pieces), st.sampled_from(gaps)), max_size=most)
    return parts.map(lambda drawn: "".join(piece + gap for piece, gap in drawn))


@settings(max_examples=2500, deadline=None)
@given(joined(WORD_PIECES, WORD_GAPS, 9), st.sampled_from(TARGETS))
def test_the_text_answer_scan_passing_over_tokens_finds_what_visiting_every_token_finds(
    text: str, words: list[str]
) -> None:
    assert list(_find_words(text, words)) == list(_find_words_every_token(text, words))


def test_the_generated_word_texts_reach_every_kind_of_match() -> None:
    """Whole words, a plural, letters run together across tokens and a short answer in
    capitals: the texts above reach each branch the quick path must keep."""
    assert list(_find_words("the carbon dioxides here", ["carbon", "dioxide"])) == [(4, 19)]
    assert set(_find_words("two pentagons", ["pentagon"])) == {(4, 13)}
    assert set(_find_words("a pen tagon", ["pentagon"])) == {(2, 11)}
    assert list(_find_words("it is B", ["b"])) == [(6, 7)]
    assert list(_find_words("a pen tagon", ["pen", "tagon"])) == [(2, 11)]


def _pinned_ranges_every_pair(text: str, mentions: Sequence) -> Iterator[tuple]:
    """The range reader as it was before the quick path: both bounds read for every pair."""
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


RANGE_PIECES = [
    "55", "57", "56", "5.5", "56.5", "fifty-five", "more than", "greater than", "over", "above",
    "at least", "no less than", ">", ">=", "≥", "less than", "under", "below", "at most",
    "no more than", "<", "<=", "≤", "and", "x", "it is", "the number", "between", "hover",
    "thunder", "Over", "LESS THAN", ":", "=",
]  # fmt: skip
RANGE_GAPS = [" ", "", ", ", " x ", "\n", ": "]


@settings(max_examples=2500, deadline=None)
@given(joined(RANGE_PIECES, RANGE_GAPS, 10))
def test_the_range_reader_asking_for_cues_once_reads_the_ranges_every_pair_reads(
    text: str,
) -> None:
    mentions = find_numbers(text)
    assert list(_pinned_ranges(text, mentions)) == list(_pinned_ranges_every_pair(text, mentions))


def test_the_range_texts_reach_pinned_and_unpinned_ranges() -> None:
    for text in ("more than 55 and less than 57", "55 < x < 57", "less than 57 and over 55"):
        assert [reading[0] for reading in _pinned_ranges(text, find_numbers(text))] == [56]
    text = "more than 55 and 57"  # one cue only: no range
    assert list(_pinned_ranges(text, find_numbers(text))) == []


@settings(max_examples=2000, deadline=None)
@given(
    st.one_of(
        st.fractions(),
        st.integers(min_value=-(10**17), max_value=10**17).map(Fraction),
        st.tuples(st.integers(), st.integers(min_value=1, max_value=10**6)).map(
            lambda pair: Fraction(pair[0], pair[1])
        ),
        st.sampled_from([MAX_MAGNITUDE, -MAX_MAGNITUDE, MAX_MAGNITUDE + Fraction(1, 10**9)]),
        st.none(),
    )
)
def test_the_magnitude_test_on_integers_is_the_fraction_comparison(value: Fraction | None) -> None:
    assert _small(value) == (value is not None and abs(value) <= MAX_MAGNITUDE)


def _code_line_signals_every_pattern(line: str, *, in_block: bool = False) -> tuple[str, ...]:
    """The code-line reader as it was before the quick reject: every pattern scanned."""
    stripped = line.strip()
    if not in_block and "`" in stripped:
        stripped = _BACKTICK_SPAN.sub(" x ", stripped).strip()
    if not stripped:
        return ()
    bullet = re.match(r"^(?:[-*+]|\d+[.)])\s+", stripped)
    if bullet and not stripped.startswith(("--", "++", "*=")):
        stripped = stripped[bullet.end() :]
    signals = [name for name, pattern in _SIGNALS if pattern.search(stripped)]
    if in_block:
        signals += [name for name, pattern in _BLOCK_SIGNALS if pattern.search(stripped)]
        if signals == ["comment"]:
            return ()
    if signals and _is_prose(_code_free(stripped)):
        return ()
    return tuple(signals)


CODE_PIECES = [
    "x", "total", "a.b", "obj.method", "(", ")", "{", "}", "[", "]", "=", "==", "!=", "!", "&",
    "&&", "|", "||", "+", "++", "-", "--", "---", ":", "::", "<", "<<", ">", ">>", "=>", "->",
    ";", ",", ".", "print", "return", "for i in range(3)", "if", "while", "def f", "int", "the",
    "answer", "is", "what", "step", "7", "56", "'s'", '"q"', "#", "//", "`code`", "- ", "1. ",
    "let's", "i", "KQ==",
]  # fmt: skip
CODE_GAPS = [" ", "", "  ", "\t"]


def code_lines() -> st.SearchStrategy[str]:
    return joined(CODE_PIECES, CODE_GAPS, 12)


@settings(max_examples=3000, deadline=None)
@given(code_lines(), st.booleans())
def test_the_code_line_reader_skipping_patterns_finds_the_signals_every_pattern_finds(
    line: str, in_block: bool
) -> None:
    assert code_line_signals(line, in_block=in_block) == _code_line_signals_every_pattern(
        line, in_block=in_block
    )


@settings(max_examples=3000, deadline=None)
@given(st.one_of(code_lines(), st.text(alphabet="ab.({}) =!&|+-:<>_;", max_size=24)))
def test_a_line_a_skipped_pattern_matches_holds_a_substring_it_needs(line: str) -> None:
    for name, pattern in _SIGNALS:
        if name in _NEEDS and pattern.search(line):
            assert any(needed in line for needed in _NEEDS[name]), (name, line)


def test_the_code_lines_reach_each_skipped_pattern() -> None:
    assert "operator" in code_line_signals("if a == b && c")
    assert "method-call" in code_line_signals("obj.method(x)")
    assert "brace" in code_line_signals("while (x) {")


def _find_text_variants_per_reply(folded: str, compact: str) -> Iterator[tuple[int, int]]:
    """The text-variant reader as it was, each word's verdict kept for one reply only."""
    if len(compact) < MIN_LETTERS or not compact.isalpha():
        return
    from rapidfuzz.distance import Levenshtein

    edits = allowed_edits(len(compact))
    root = stem(compact)
    backwards = compact[::-1] if compact[::-1] != compact else ""
    matches = [(m.group(0).lower(), m.start(), m.end()) for m in re.finditer("[A-Za-z]+", folded)]
    alone: dict[str, bool] = {}

    def spells(word: str) -> bool:
        if word == compact:
            return False
        if word == backwards:
            return True
        if word[0] == compact[0] and len(word) >= len(root):
            if len(word) > len(compact) and word.startswith(compact):
                return True
            if len(compact) >= MIN_TYPO_LETTERS and stem(word) == root:
                return True
        return bool(
            edits
            and abs(len(word) - len(compact)) <= edits
            and Levenshtein.distance(word, compact, score_cutoff=edits) <= edits
        )

    for index, (word, start, end) in enumerate(matches):
        found = alone.get(word)
        if found is None:
            found = alone[word] = spells(word)
        if found:
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
            if Levenshtein.distance(joined, compact, score_cutoff=edits) <= edits:
                yield start, matches[following][2]
                break
    yield from _nato(matches, compact)
    yield from _acrostic(folded, compact)


VARIANT_ANSWERS = ["chloroplast", "pentagon", "level", "cell", "mitochondria", "abba", "photon"]
VARIANT_PIECES = [
    "chloroplast", "cholroplast", "chloroplst", "chloroplasts", "chloroplastic", "tsalporolhc",
    "chloro", "plast", "chl", "roplast", "pentagon", "pentagons", "pentagn", "nogatnep", "pent",
    "agon", "level", "levels", "cell", "cells", "llec", "call", "mitochondrion", "mitochondria",
    "abba", "photon", "photons", "photonic", "nohtop", "Charlie", "Hotel", "Lima", "Oscar",
    "Papa", "the", "plant", "is", "a",
]  # fmt: skip
VARIANT_GAPS = [" ", "", "-", "_", "\n", ". ", "  "]


@settings(max_examples=2500, deadline=None)
@given(joined(VARIANT_PIECES, VARIANT_GAPS, 10), st.sampled_from(VARIANT_ANSWERS))
def test_the_text_variants_with_word_verdicts_kept_across_replies_are_the_per_reply_ones(
    text: str, compact: str
) -> None:
    # Twice: the second reading answers from the verdicts the first one kept.
    for _ in range(2):
        assert list(find_text_variants(text, compact)) == list(
            _find_text_variants_per_reply(text, compact)
        )


def test_the_variant_texts_reach_each_kind_of_word_verdict() -> None:
    for word in ("cholroplast", "tsalporolhc", "chloroplastic", "chloroplasts"):
        assert list(find_text_variants(f"the {word} here", "chloroplast")) == [(4, 4 + len(word))]
    assert list(find_text_variants("the chloroplast", "chloroplast")) == []  # the exact rules'
