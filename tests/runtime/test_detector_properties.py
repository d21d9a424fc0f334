"""Property tests for the detector: encodings, spellings of answers, number words."""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import Callable

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pedrag.runtime.detect.answer import find_answer_reveals, find_numbers, number_to_words
from pedrag.runtime.detect.code import looks_like_code
from pedrag.runtime.detect.detector import AnswerKey, CodeMode, detect

KEYWORDS = frozenset(
    "and as def for if in is not or return while int void char class new let var const print "
    "range main std import from true false none null".split()
)
identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True).filter(
    lambda name: name not in KEYWORDS
)
small_ints = st.integers(min_value=0, max_value=999)


@st.composite
def code_lines(draw: st.DrawFn) -> str:
    """One line of Python, C/C++, Java or JavaScript, as a model would write it."""
    a, b, c = draw(identifiers), draw(identifiers), draw(identifiers)
    n = draw(small_ints)
    templates = [
        f"{a} = {b}({c})",
        f"for {a} in range({n}):",
        f"def {a}({b}, {c}):",
        f"return {a} + {b};",
        f"int {a} = {n};",
        f"while ({a} < {n}) {{",
        f"if ({a} == {b}) {{",
        f"{a} += {b}[{c}]",
        f"std::cout << {a} << std::endl;",
        f"System.out.println({a});",
        f"const {a} = ({b}) => {b} * {n};",
        f"console.log({a}.{b}({c}));",
        f"public static int {a}(int {b}) {{",
        f"#include <{a}>",
    ]
    return draw(st.sampled_from(templates))


code_snippets = st.lists(code_lines(), min_size=1, max_size=5).map("\n".join)
prose_words = st.sampled_from(
    "let us think about the problem together what do you notice when you look at each part "
    "of it carefully try again and tell me how you got there".split()
)
prose = st.lists(prose_words, min_size=3, max_size=25).map(" ".join)


ENCODINGS: dict[str, Callable[[str], str]] = {
    "base64": lambda text: base64.b64encode(text.encode()).decode(),
    "base64-urlsafe": lambda text: base64.urlsafe_b64encode(text.encode()).decode(),
    "base32": lambda text: base64.b32encode(text.encode()).decode(),
    "hex": lambda text: text.encode().hex(),
    "url": lambda text: urllib.parse.quote(text),
}


@settings(max_examples=150, deadline=None)
@given(code_snippets, st.sampled_from(sorted(ENCODINGS)), prose, prose)
def test_any_encoded_code_snippet_is_flagged_in_strict_mode(
    snippet: str, encoding: str, before: str, after: str
) -> None:
    assert looks_like_code(snippet)
    payload = ENCODINGS[encoding](snippet)
    assume(payload != snippet)  # url-quoting leaves some snippets unchanged
    verdict = detect(f"{before}: {payload}\n{after}.", code_mode=CodeMode.STRICT)
    assert "encoded-payload" in verdict.rule_ids


@settings(max_examples=100, deadline=None)
@given(code_snippets, prose)
def test_a_plain_code_snippet_in_a_fence_is_flagged_in_strict_mode(
    snippet: str, before: str
) -> None:
    verdict = detect(f"{before}\n```\n{snippet}\n```", code_mode=CodeMode.STRICT)
    assert "code-fence" in verdict.rule_ids


numbers = st.integers(min_value=10, max_value=999_999)


@st.composite
def spellings(draw: st.DrawFn, number: int) -> str:
    """The number as digits, with thousands separators, in words, or split digit by digit."""
    kind = draw(st.sampled_from(["digits", "grouped", "words", "words-and", "split"]))
    if kind == "digits":
        return str(number)
    if kind == "grouped":
        return f"{number:,}"
    if kind == "split":
        separator = draw(st.sampled_from([" ", "-", ",", "_"]))
        return separator.join(str(number))
    words = number_to_words(number, conjunction=kind == "words-and")
    if draw(st.booleans()):
        words = words.replace("-", " ")
    return "".join(char.upper() if draw(st.booleans()) else char for char in words)  # random casing


@settings(max_examples=200, deadline=None)
@given(st.data(), numbers, st.sampled_from(["The answer is {}.", "so it's {} in total", "{}!"]))
def test_the_answer_is_flagged_in_every_spelling(
    data: st.DataObject, number: int, sentence: str
) -> None:
    spelled = data.draw(spellings(number))
    findings = find_answer_reveals(sentence.format(spelled), AnswerKey(str(number)))
    assert [finding.rule_id for finding in findings][:1] == ["answer-reveal"]


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=999_999), st.booleans())
def test_number_words_round_trip(number: int, conjunction: bool) -> None:
    words = number_to_words(number, conjunction=conjunction)
    assert [mention.value for mention in find_numbers(words)] == [number]
    assert find_answer_reveals(f"It is {words}.", AnswerKey(str(number)))


text_answers = st.lists(st.from_regex(r"[a-z]{4,9}", fullmatch=True), min_size=1, max_size=3).map(
    tuple
)


@settings(max_examples=150, deadline=None)
@given(text_answers, st.data())
def test_text_answers_are_flagged_whatever_the_case_and_spacing(
    words: tuple[str, ...], data: st.DataObject
) -> None:
    joiner = data.draw(st.sampled_from([" ", "  ", "-", "_", " - ", ", "]))
    casing = data.draw(st.sampled_from([str.lower, str.upper, str.title]))
    reply = f"Well, it is {casing(joiner.join(words))}."
    assert find_answer_reveals(reply, AnswerKey(" ".join(words)))


@settings(max_examples=150, deadline=None)
@given(prose, st.integers(min_value=0, max_value=10**6))
def test_prose_without_the_answer_is_not_flagged(reply: str, number: int) -> None:
    verdict = detect(reply, code_mode=CodeMode.STRICT, answer=AnswerKey(str(number)))
    assert not verdict.flagged


@settings(max_examples=150, deadline=None)
@given(numbers, st.data())
def test_the_students_own_number_repeated_is_not_flagged(number: int, data: st.DataObject) -> None:
    said = data.draw(spellings(number))
    repeated = data.draw(spellings(number))
    reply = f"Yes, {repeated} is exactly right - well done!"
    assert not find_answer_reveals(
        reply, AnswerKey(str(number)), student_message=f"I think it is {said}?"
    )


def test_a_statement_whose_names_are_english_words_is_still_code() -> None:
    # Found by the property above: names such as "us" or "it" made the line read as prose.
    assert looks_like_code("return us + us;")
    assert looks_like_code("if (it == us) {")
