"""The detector's quick paths (issue 30: per-reply work bounded, verdicts unchanged): each is
compared with the reading it replaces, kept here as the oracle, on generated texts built to
sit near its edges. A quick path that ever disagrees would change a verdict."""

from __future__ import annotations

import base64
import codecs
import re
from collections.abc import Iterator
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pedrag.runtime.detect.answer import (
    _NUMBER_WORD,
    _NUMBER_WORD_FOLDED,
    _commits_to,
    _given_classes,
    _has_number_word,
    _occurrences,
    _reveals,
    _target,
    _ValuesOnTheTable,
    parse_number,
    stated_as_result,
)
from pedrag.runtime.detect.detector import AnswerKey
from pedrag.runtime.detect.encoded import (
    _BASE64_LONG_TOKEN,
    _BASE64_TOKEN,
    _ROT13_KEYWORDS,
    _WRAP,
    MAX_PAYLOAD_CHARS,
    _base64_candidates,
    _Candidate,
    _Context,
    _decode_base64,
    _rot13_findings,
    _target_words,
    _too_short,
    _url_runs,
)
from pedrag.runtime.detect.spellings import spelling_index


def _base64_candidates_every_token(text: str) -> Iterator[_Candidate]:
    """The base64 pass as it was before the quick path: every token visited in turn."""
    tokens = list(_BASE64_TOKEN.finditer(text))
    index = 0
    while index < len(tokens):
        group = [tokens[index]]
        while (
            index + len(group) < len(tokens)
            and len(group[-1].group(0)) >= 16
            and len(group[-1].group(0)) % 4 == 0
            and _WRAP.fullmatch(text, group[-1].end(), tokens[index + len(group)].start())
        ):
            group.append(tokens[index + len(group)])
        for size in range(len(group), 0, -1):
            start, end = group[0].start(), group[size - 1].end()
            if end - start > MAX_PAYLOAD_CHARS:
                continue
            if size > 1:
                if sum(len(token.group(0)) for token in group[:size]) % 4:
                    continue
            elif _too_short(group[0].group(0)):
                continue
            decoded = _decode_base64(text[start:end])
            if decoded:
                yield _Candidate(start, end, "base64", decoded)
                index += size
                break
        else:
            index += 1


def _encoded(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


_WRAPPED = _encoded("def total(xs):\n    return sum(xs)  # the answer is 56")
PIECES = [
    "a", "is", "the", "word", "answer", "together", "multiplication", "NTY=", "NTY", "NQ==",
    "ZmlmdHktc2l4", "ZmlmdHktc2l4=", "Zm9v", "Zm9vYmFy", "abc=", "ab==", "ab=", "a===",
    "x-y_z+w/v", "12345678", "QUJDRA", _encoded("56"), _encoded("fifty-six"),
    _encoded("return x"), _WRAPPED[:16], _WRAPPED[16:32], _WRAPPED[32:48], _WRAPPED[48:],
    _WRAPPED[:32], _WRAPPED, "SGVsbG8gd29ybGQh", "=", "==", "-", "/", "+", "_",
]  # fmt: skip
GAPS = [" ", "\n", " \n ", "\r\n", "\n\n", "\t\n\t", ". ", ", ", "", "=", "(", "\n \n"]


@st.composite
def texts(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from(GAPS)), max_size=10))
    return "".join(piece + gap for piece, gap in parts)


@settings(max_examples=1500, deadline=None)
@given(texts())
def test_the_base64_pass_visiting_only_long_tokens_finds_what_visiting_every_token_finds(
    text: str,
) -> None:
    assert list(_base64_candidates(text)) == list(_base64_candidates_every_token(text))


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="ABab09+/_-=. \n", max_size=40))
def test_the_base64_pass_agrees_on_any_text_of_its_alphabet(text: str) -> None:
    assert list(_base64_candidates(text)) == list(_base64_candidates_every_token(text))


def test_the_generated_texts_hold_wrapped_payloads_and_refused_words() -> None:
    """The pieces above do reach both paths: a wrapped payload joined over lines, a single
    padded token, and words refused as too short."""
    wrapped = "\n".join((_WRAPPED[:16], _WRAPPED[16:32], _WRAPPED[32:48], _WRAPPED[48:]))
    found = list(_base64_candidates(f"See {wrapped} now"))
    assert [(c.start, c.end) for c in found] == [(4, 4 + len(wrapped))]
    assert [c.decoded for c in _base64_candidates("try NTY= ok")] == ["56"]
    assert list(_base64_candidates("the word is together")) == []


@given(st.text(alphabet="ABCNTYabcxyz0123456789+/_-=", min_size=2, max_size=12))
def test_the_long_token_pattern_is_the_too_short_rule(token: str) -> None:
    """A token the quick path visits is exactly one `_too_short` lets through."""
    if _BASE64_TOKEN.fullmatch(token):
        assert bool(_BASE64_LONG_TOKEN.fullmatch(token)) == (not _too_short(token))
    assert re.fullmatch(r"[A-Za-z0-9+/_-]{2,}={0,2}", token) or not _BASE64_LONG_TOKEN.fullmatch(
        token
    )


def _rot13_code_lines_line_by_line(reply: str) -> list[tuple[int, int]]:
    """The rot13 code rule as it was before the quick path: every line rotated and read."""
    spans = []
    position = 0
    for line in reply.splitlines(keepends=True):
        rotated = codecs.encode(line, "rot13")
        keywords = set(_ROT13_KEYWORDS.findall(rotated)) - set(_ROT13_KEYWORDS.findall(line))
        if len(keywords) >= 2 and re.search(r"[(){};=:]", rotated):
            spans.append((position, position + len(line.rstrip("\n"))))
        position += len(line)
    return spans


ROT13_PIECES = [
    *(codecs.encode(word, "rot13") for word in ("def", "return", "print", "for", "if", "int")),
    "def", "return", "vs", "qrs", "(x):", "= 1;", "{", "}", "the", "answer", "Vs", "QRS",
    "erghea", "cevag", "sbe", "vag", "x", "main", "znva", "if", "else", "ryfr",
]  # fmt: skip
ROT13_GAPS = [" ", "\n", "\r\n", "\u2028", "\x0c", "(", ")", ";", "_", "", "\n\n", "="]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(ROT13_PIECES), st.sampled_from(ROT13_GAPS)), max_size=12))
def test_the_rot13_code_rule_skipping_texts_with_under_two_keywords_flags_the_same_lines(
    parts: list[tuple[str, str]],
) -> None:
    reply = "".join(piece + gap for piece, gap in parts)
    context = _Context(None, None, None, None)
    found = [(f.start, f.end) for f in _rot13_findings(reply, context)]
    assert found == _rot13_code_lines_line_by_line(reply)


def test_the_rot13_code_rule_still_flags_a_rotated_code_line() -> None:
    line = codecs.encode("def f(x): return x", "rot13")
    assert _rot13_code_lines_line_by_line(f"Hi\n{line}\nok") == [(3, 3 + len(line))]
    found = _rot13_findings(f"Hi\n{line}\nok", _Context(None, None, None, None))
    assert [(f.start, f.end) for f in found] == [(3, 3 + len(line))]


@pytest.mark.parametrize(
    "target", ["56", "fifty-six", "0.5", "1/2", "50%", "Pentagon", "carbon dioxide", "B", "?!"]
)
def test_the_kept_target_words_are_the_words_read_each_time(target: str) -> None:
    number = parse_number(target)
    if number is None:
        expected: frozenset[str] | None = frozenset(re.findall(r"[a-z]+", target.lower()))
    else:
        expected = spelling_index(number.value).words or None
    assert _target_words(target) == expected
    key = AnswerKey(target)
    context = _Context(key, None, None, None)
    for text in ("nothing here", target.lower(), "cinquante six", "the pentagon"):
        words = set(re.findall(r"[a-z]+", text.lower()))
        held = expected is None or bool(expected & words)
        assert context.may_hold_a_target(text) == held


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="%2Fa0 \nx", max_size=30))
def test_the_url_runs_skipping_texts_without_a_percent_sign_find_every_run(text: str) -> None:
    every_token = [
        (match.start(), match.group(0))
        for match in re.finditer(r"\S+", text)
        if "%" in match.group(0) and len(re.findall(r"%[0-9A-Fa-f]{2}", match.group(0))) >= 3
    ]
    assert list(_url_runs(text)) == every_token


NUMBER_WORD_PIECES = [
    "five", "Five", "FIVE", "fiftysix", "FiftySix", "seventeen", "hundred", "half", "quarter",
    "often", "someone", "written", "it's", "itsFIVE", "fiveS", "five's", "five'S", "Kelvin",
    "\u212a", "\u0130", "caf\u00e9", "x", "a", "tenth", "ten", "Ten", "nineteenth", "oneself",
]  # fmt: skip
NUMBER_WORD_GAPS = [" ", "", "-", "'", "'s", "'S", "\n", "9", ".", "\u00e9", "_"]


@settings(max_examples=2000, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(NUMBER_WORD_PIECES), st.sampled_from(NUMBER_WORD_GAPS)),
        max_size=6,
    )
)
def test_the_lower_cased_quick_test_never_misses_an_english_number_word(
    parts: list[tuple[str, str]],
) -> None:
    text = "".join(piece + gap for piece, gap in parts)
    assert _has_number_word(text) == bool(_NUMBER_WORD.search(text)), text


def test_the_quick_test_reads_camel_case_and_refuses_words_inside_words() -> None:
    assert _has_number_word("it'sFIVE") and _has_number_word("Five.")
    assert not _has_number_word("someone often written")
    assert not _NUMBER_WORD_FOLDED.search("itsfive")  # why a capital after a letter reads in full


def _reveals_message_first(
    reply: str, spellings: tuple[str, ...], student_message: str | None, givens: tuple[str, ...]
) -> list[tuple[int, int, str]]:
    """The answer rule as it was before the reply was read first: the student's message read
    for every target, whether or not the reply holds it."""
    found: dict[tuple[int, int], str] = {}
    given_values = _ValuesOnTheTable(givens, student_message)
    values_done: set[Fraction] = set()
    for spelling in dict.fromkeys(s for s in spellings if s and s.strip()):
        target = _target(spelling)
        if target.number is not None:
            if target.number.values() and target.number.value in values_done:
                continue
            values_done.add(target.number.value)
        if student_message and _commits_to(student_message, target, givens):
            continue
        given_classes = frozenset().union(*(_given_classes(text, spelling) for text in givens))
        for start, end, spelled in _occurrences(reply, target, given_values):
            if spelled in given_classes and not stated_as_result(reply, start):
                continue
            found.setdefault((start, end), spelled)
    return [(start, end, spelled) for (start, end), spelled in found.items()]


REVEAL_PIECES = [
    "56", "fifty-six", "5 6", "57", "7", "8", "7 times 8", "7 x 8", "is", "the answer is",
    "=", "or", "maybe", "I think", "between 55 and 57", "LVI", "0x38", "fifty", "six", "?",
    "Pentagon", "pentagons", "a", "so", "and", "first digit 5", "then 6", "tens", "ones",
]  # fmt: skip
KEYS = [("56", "fifty-six"), ("Pentagon",), ("0.5", "1/2"), ("8",)]


@settings(max_examples=800, deadline=None)
@given(
    st.lists(st.sampled_from(REVEAL_PIECES), max_size=8),
    st.one_of(st.none(), st.lists(st.sampled_from(REVEAL_PIECES), max_size=6)),
    st.sampled_from(KEYS),
    st.sampled_from([("What is 7 times 8?",), (), ("Name the shape with 5 sides.",)]),
)
def test_reading_the_reply_before_the_message_finds_the_same_reveals(
    reply: list[str], message: list[str] | None, spellings: tuple[str, ...], givens: tuple[str, ...]
) -> None:
    text = " ".join(reply)
    said = None if message is None else " ".join(message)
    expected = _reveals_message_first(text, spellings, said, givens)
    assert _reveals(text, spellings, student_message=said, givens=givens) == expected


def test_a_message_stating_the_answer_still_waives_a_reply_that_repeats_it() -> None:
    args = ("Yes, 56 is right.", ("56",))
    assert _reveals(*args, student_message="I think it's 56", givens=("What is 7 times 8?",)) == []
    assert _reveals(*args, student_message="no idea", givens=("What is 7 times 8?",)) != []


def _holds_a_target_word_by_sets(key: AnswerKey, text: str) -> bool:
    """``_Context.may_hold_a_target`` as it was: the text's words as a set, intersected with
    each target's words."""
    words = set(re.findall(r"[a-z]+", text.lower()))
    for target in (key.answer, *key.accept):
        vocabulary = _target_words(target)
        if vocabulary is None or vocabulary & words:
            return True
    return False


_TARGET_WORD_KEYS = (
    AnswerKey("56", accept=("fifty-six",)),
    AnswerKey("Pentagon"),
    AnswerKey("carbon dioxide", accept=("CO2",)),
    AnswerKey("?!"),
)


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(_TARGET_WORD_KEYS),
    st.lists(
        st.sampled_from(
            ["fifty", "six", "cinquante", "sechsundfünfzig", "pentagon", "Pentagons", "carbon",
             "dioxide", "xsix", "sixy", "SIX", "K", "\u212a", "é", " ", "-", "\n", "7", "a", "z"]
        ),
        max_size=8,
    ),
)  # fmt: skip
def test_the_target_word_pattern_holds_a_word_where_the_word_sets_meet(
    key: AnswerKey, pieces: list[str]
) -> None:
    text = "".join(pieces)
    context = _Context(key, None, None, None)
    assert context.may_hold_a_target(text) == _holds_a_target_word_by_sets(key, text)


def test_the_rot13_table_is_the_codecs_rot13() -> None:
    from pedrag.runtime.detect.encoded import _ROT13

    text = "".join(map(chr, range(0x250))) + "Ⅻ ｆｕｌｌ"
    assert text.translate(_ROT13) == codecs.encode(text, "rot13")


@pytest.mark.parametrize("run", ["TmV4dA==", "TmV4\ndA==", "Tm V4\u2003dA==", "TmV4\u00a0dA=="])
def test_a_base64_run_is_read_without_its_white_space_of_any_kind(run: str) -> None:
    assert _decode_base64(run) == _decode_base64(re.sub(r"\s+", "", run)) == "Next"
