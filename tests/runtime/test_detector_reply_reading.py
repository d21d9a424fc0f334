"""The detector's per-reply reading, trimmed in issue 30's twelfth round (brief Q5): each quick
path is compared with the reading it replaces, kept here as the oracle, on generated texts
built from the very words it looks for. A quick path that ever disagrees would change a
verdict."""

from __future__ import annotations

import base64
import binascii
import string
from collections.abc import Iterator
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from pedrag.runtime.detect.answer import (
    _BASE_LITERAL,
    _BASE_NAMED,
    _DIGIT,
    _DIGIT_NUMBER,
    _FRACTION,
    _LABEL_BEFORE,
    _LABEL_WORDS,
    _ORDINAL_DIGITS,
    _ORDINAL_WORDS,
    _SCIENTIFIC,
    _label_before,
    _may_hold_tens,
    _may_name_a_base,
    find_numbers,
    other_readings,
)
from pedrag.runtime.detect.canonical import canonical_text
from pedrag.runtime.detect.code import (
    _ANY_LANGUAGE_CODE,
    _FUNCTION_HEADER,
    _may_be_code_in_any_language,
    _may_hold_a_function_header,
    find_code,
)
from pedrag.runtime.detect.detector import AnswerKey, CodeMode
from pedrag.runtime.detect.encoded import (
    _NEVER_TEXT_FIRST,
    _Context,
    _decode_base64,
    _printable,
    _target_word_pattern,
    _too_short,
)
from pedrag.runtime.detect.spellings import _word_tokens, find_spellings, spelling_index

VALUES = (Fraction(56), Fraction(46_311), Fraction(7), Fraction(12), Fraction(1, 2))


def _find_spellings_by_first_letter(text: str, value: Fraction) -> Iterator[tuple[int, int, str]]:
    """Generated spellings as read before the round: every token tokenised and lower-cased
    with its span, each trying every spelling that shares its first letter."""
    index = spelling_index(value)
    if index.by_prefix:
        spans, tokens = _word_tokens(text)
        for first, token in enumerate(tokens):
            candidates = index.by_prefix.get(token[:1])
            if not candidates:
                continue
            for spelling in candidates:
                joined = ""
                for cursor in range(first, len(tokens)):
                    joined += tokens[cursor]
                    if not spelling.compact.startswith(joined):
                        break
                    if len(joined) == len(spelling.compact):
                        yield spans[first][0], spans[cursor][1], spelling.language
                        break
    for pattern, language in index.unspaced:
        for match in pattern.finditer(text):
            yield match.start(), match.end(), language


def _pieces() -> list[str]:
    """Spellings of the values, whole and cut into pieces (a piece is a token's start, a
    spelling spread over tokens), in the cases a reply writes, and ordinary words."""
    pieces = {"the", "answer", "is", "a", "and", "five", "six", "fifty", "İ", "ß", "Straße"}
    for value in VALUES:
        for group in spelling_index(value).by_prefix.values():
            for spelling in group[:6]:
                compact = spelling.compact
                for cased in (compact, compact.upper(), compact.capitalize()):
                    pieces.update((cased, cased[: len(cased) // 2], cased[len(cased) // 2 :]))
    return sorted(pieces)


PIECES = _pieces()
GAPS = [" ", "-", ", ", "\n", "", "_", ". ", " and "]


@st.composite
def texts(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from(GAPS)), max_size=8))
    return canonical_text("".join(piece + gap for piece, gap in parts))


@settings(max_examples=600, deadline=None)
@given(texts(), st.sampled_from(VALUES))
def test_reading_only_the_tokens_that_begin_a_spelling_finds_every_spelling(
    text: str, value: Fraction
) -> None:
    find_spellings.cache_clear()
    assert list(find_spellings(text, value)) == list(_find_spellings_by_first_letter(text, value))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40), st.sampled_from(VALUES))
def test_the_quick_spelling_reading_agrees_on_any_text(text: str, value: Fraction) -> None:
    find_spellings.cache_clear()
    assert list(find_spellings(text, value)) == list(_find_spellings_by_first_letter(text, value))


def test_the_generated_texts_reach_spellings_spread_over_tokens_in_every_case() -> None:
    """The pieces do reach the matches: a spelling whole, cut over two tokens, upper-cased."""
    assert [language for *_, language in find_spellings("it is zesenvijftig.", Fraction(56))]
    assert find_spellings("ZESEN VIJFTIG", Fraction(56))[0][:2] == (0, 13)
    assert find_spellings("the answer is a number", Fraction(56)) == ()


# --- the answer reader's quick tests: each a substring every match of its pattern holds ------

# Label words, bases, tens words, digits of several scripts, and the letters case folding
# matches to ASCII ones ("ſ" to "s", "ı" to "i", "K" to "k"), so the non-ASCII side is reached.
READER_PIECES = [
    *_LABEL_WORDS, "Step", "STEPS", "question #", "#", "no.", "number", "ſtep", "ſ", "ı", "K",
    "hex", "HEX", "binary", "bınary", "octal", "base 7", "Base-12", "ff", "0x38", "0b11", "0o7",
    "twenty", "Fifty", "fıfty", "NINETY", "first", "sixth", "5.6e1", "5.6 x 10^1", "56th",
    "١٢", "٣", "7", "56", "1/2", "LVI", "the answer", "is", "city", "type", "the", "a",
    "twenty-first", "NINETY ninth", "fıfty-sixth", "ff in hex", "7 in base 8", "1010 as binary",
    "111 in bınary", "chapter XII", "step 4", "ſtep 4", "question #", "Exercise no. ",
]  # fmt: skip
READER_GAPS = [" ", "", "-", ": ", "\n", " in ", " as ", "(", "_", ". "]


@st.composite
def reader_texts(draw: st.DrawFn) -> str:
    parts = draw(
        st.lists(
            st.tuples(st.sampled_from(READER_PIECES), st.sampled_from(READER_GAPS)), max_size=8
        )
    )
    return "".join(piece + gap for piece, gap in parts)


@settings(max_examples=500, deadline=None)
@given(reader_texts())
def test_a_window_without_a_label_word_or_hash_is_no_label(text: str) -> None:
    for start in range(len(text) + 1):
        before = text[max(0, start - 24) : start]
        assert _label_before(text, start) == bool(_LABEL_BEFORE.search(before))


@settings(max_examples=800, deadline=None)
@given(st.one_of(reader_texts(), st.text(max_size=30)))
def test_the_other_spellings_quick_tests_never_skip_a_pattern_that_matches(text: str) -> None:
    if _DIGIT.search(text) is None:
        for pattern in (_BASE_LITERAL, _SCIENTIFIC, _ORDINAL_DIGITS, _FRACTION, _DIGIT_NUMBER):
            assert pattern.search(text) is None
    if not _may_name_a_base(text):
        assert _BASE_NAMED.search(text) is None
    if not _may_hold_tens(text):
        assert _ORDINAL_WORDS.search(text) is None


def test_the_quick_tests_read_what_case_folding_reads_outside_ascii() -> None:
    """Where only case folding makes the match, the text is not ASCII and the pattern runs."""
    assert _label_before("ſtep ", 5) and _BASE_NAMED.search("111000 in bınary")
    assert _may_name_a_base("111000 in bınary") and not _may_name_a_base("111000 in binarx")
    assert other_readings("the answer is fifty-sixth") == ((Fraction(56), 14, 25, "ordinal"),)
    assert [m.value for m in find_numbers("question #4 has 56 parts; step 7")] == [56]


# --- the code pass's quick tests: a substring every match of its pattern holds ---------------

CODE_PIECES = [
    "def", "total", "f", "xs", "(", ")", ":", "->", "<-", "=", "=>", "{", "}", ";", "lambda",
    "function", "fn", "func", "int", "String", "vector<int>", "const", "let", "rec", "var",
    "async", "return", "x", "sum", "foldl", "foldr", "map", "List.", "(defun", "(define", "(+)",
    "`div`", "c(", "In Haskell", "in python", "in c++", "is", "the", "answer", "*", "+",
    "const f = x =>", "let g = async y =>", "h = lambda y:", "in lisp: xs <- [", "in elm: go x ->",
    "in rust: impl X {", "def f(x):", "int main() {", "function g(a) {",
]  # fmt: skip
CODE_GAPS = [" ", "", "\n", ": ", ", ", " = ", "  ", "\t"]


@st.composite
def code_texts(draw: st.DrawFn) -> str:
    parts = draw(
        st.lists(st.tuples(st.sampled_from(CODE_PIECES), st.sampled_from(CODE_GAPS)), max_size=10)
    )
    return "".join(piece + gap for piece, gap in parts)


@settings(max_examples=800, deadline=None)
@given(st.one_of(code_texts(), st.text(max_size=30)))
def test_the_code_pass_quick_tests_never_skip_a_pattern_that_matches(text: str) -> None:
    if not _may_hold_a_function_header(text):
        assert _FUNCTION_HEADER.search(text) is None
    if not _may_be_code_in_any_language(text):
        assert _ANY_LANGUAGE_CODE.search(text) is None


def test_the_code_texts_reach_both_patterns() -> None:
    """The pieces do make matches: a header without a parenthesis, code in any language."""
    assert _FUNCTION_HEADER.search("const f = x => x") and _may_hold_a_function_header("x => x")
    assert _FUNCTION_HEADER.search("f = lambda x: x")
    assert _ANY_LANGUAGE_CODE.search("in haskell: f = foldr (+) 0")
    assert [f.rule_id for f in find_code("sq = lambda x: x * x", CodeMode.STRICT)] == [
        "complete-function"
    ]


# --- the encoded pass: a run whose first byte cannot start UTF-8 text is not decoded ----------


def _decode_base64_always(run: str) -> str | None:
    """The base64 reading before the round: every run long enough decoded and read as text."""
    compact = "".join(run.split())
    if _too_short(compact):
        return None
    padded = compact.rstrip("=")
    padded += "=" * (-len(padded) % 4)
    try:
        data = base64.b64decode(padded.translate(str.maketrans("-_", "+/")), validate=True)
    except (binascii.Error, ValueError):
        return None
    return _printable(data)


def _base64_of(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


BASE64_RUNS = [
    _base64_of(text)
    for text in ("56", "fifty-six", "return x", "é ok", "日本", "\u0080x", "ÿÿ", "a\nb", "Next")
]


@settings(max_examples=1500, deadline=None)
@given(
    st.one_of(
        st.text(alphabet="ghqvwzaAZ09+/-_=fFgG", min_size=4, max_size=16),
        st.sampled_from(BASE64_RUNS),
        st.builds(
            lambda run, cut: run[:cut] + "\n" + run[cut:],
            st.sampled_from(BASE64_RUNS),
            st.integers(0, 8),
        ),
    )
)
def test_a_run_is_refused_unread_only_where_decoding_refuses_it(run: str) -> None:
    assert _decode_base64(run) == _decode_base64_always(run)


def test_the_refused_first_characters_are_the_ones_no_text_starts_with() -> None:
    """UTF-8 text of any first character, base64-encoded (standard and urlsafe), starts with
    every character of the alphabet outside the refused set and with none inside it."""
    # One character for every byte that starts UTF-8 (1-2 bytes, then each 3- and 4-byte lead)
    codes = [*range(1, 0x800), *range(0x800, 0xD000, 0x1000), 0xD000, 0xE000, 0xF000]
    codes += [0x10000, 0x40000, 0x80000, 0xC0000, 0x100000]
    encoded = [(chr(code) + "ok").encode() for code in codes]
    first = {base64.b64encode(data).decode()[0] for data in encoded}
    first |= {base64.urlsafe_b64encode(data).decode()[0] for data in encoded}
    alphabet = set(string.ascii_letters + string.digits + "+/-_")
    assert first.isdisjoint(_NEVER_TEXT_FIRST)
    assert first | _NEVER_TEXT_FIRST == alphabet


def _may_hold_a_target_each(context: _Context, text: str) -> bool:
    """The target-word test before the round: each target's pattern searched in turn."""
    targets = [context.step_value] if context.step_value else []
    if context.answer is not None:
        targets += [context.answer.answer, *context.answer.accept]
    for target in targets:
        pattern = _target_word_pattern(target)
        if pattern is None or pattern.search(text.lower()):
            return True
    return False


TARGET_KEYS = [
    AnswerKey("56", accept=("fifty-six",)),
    AnswerKey("56", accept=("fifty-six", "LVI", "0x38")),
    AnswerKey("chloroplast", accept=("chloroplasts",)),
    AnswerKey("1/2", accept=("0.5", "one half")),
]


@settings(max_examples=800, deadline=None)
@given(
    st.sampled_from(TARGET_KEYS),
    st.sampled_from([None, "8", "seven"]),
    st.lists(st.sampled_from([*PIECES[:40], "fifty", "six", "Chloroplast", "half"]), max_size=6),
)
def test_a_number_s_spellings_searched_once_hold_a_target_where_each_did(
    key: AnswerKey, step: str | None, words: list[str]
) -> None:
    text = " ".join(words)
    context = _Context(key, None, step, None)
    assert context.may_hold_a_target(text) == _may_hold_a_target_each(context, text)


def test_the_target_word_test_still_tells_a_number_word_from_other_words() -> None:
    context = _Context(TARGET_KEYS[0], None, None, None)
    assert context.may_hold_a_target("it is fifty-six") and context.may_hold_a_target(
        "ZESENVIJFTIG"
    )
    assert not context.may_hold_a_target("the chloroplast holds chlorophyll")
