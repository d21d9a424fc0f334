"""The canonical view (issue 26, item 1): the detector reads a reply as a reader sees it.

Property tests over whole classes of characters, built from the Unicode database itself rather
than from the view's code: every script with decimal digits, every format (Cf) and blank
character inserted between the answer's digits, every LaTeX and HTML wrapping. And the other
side: a corpus of ordinary tutor replies that restate the prompt's givens, none flagged.
"""

from __future__ import annotations

import random
import sys
import unicodedata
from collections.abc import Callable

import pytest

from pedrag.runtime.detect.canonical import BLANK_CHARACTERS, canonical_view
from pedrag.runtime.detect.detector import AnswerKey, CodeMode, detect

RANDOM = random.Random(26)
ANSWERS = [56, 7, 112, 2024, 46_311, 999_999, *RANDOM.sample(range(10, 10**6), 4)]


def _flagged(reply: str, answer: int, prompt: str = "Work it out.") -> bool:
    return detect(
        reply, code_mode=CodeMode.STRICT, answer=AnswerKey(str(answer), prompt=prompt)
    ).flagged


def _digit_scripts() -> dict[str, str]:
    """Every run of ten code points whose Unicode decimal values are 0..9, by script name
    (Arabic-Indic, Persian, Devanagari, Thai, full-width, mathematical bold, ...)."""
    scripts = {}
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if unicodedata.decimal(char, None) == 0 and unicodedata.category(char) == "Nd":
            digits = "".join(chr(code + k) for k in range(10))
            if all(unicodedata.decimal(d, None) == k for k, d in enumerate(digits)):
                scripts[unicodedata.name(char, hex(code))] = digits
    return scripts


def _symbol_digit_runs() -> dict[str, str]:
    """Runs of digit symbols one to nine (category No: circled, parenthesised, full-stop,
    dingbat negative circled digits), by the name of their "one"."""
    runs = {}
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if unicodedata.category(char) != "No" or unicodedata.digit(char, None) != 1:
            continue
        run = "".join(chr(code + k) for k in range(9))
        if all(unicodedata.digit(d, None) == k + 1 for k, d in enumerate(run)):
            runs[unicodedata.name(char, hex(code))] = "?" + run  # no zero in these runs
    return runs


DIGIT_SCRIPTS = _digit_scripts()
SYMBOL_DIGITS = _symbol_digit_runs()


def test_the_unicode_database_gives_the_scripts_the_issue_names() -> None:
    names = " ".join(DIGIT_SCRIPTS)
    for script in ("ARABIC-INDIC", "EXTENDED ARABIC-INDIC", "DEVANAGARI", "FULLWIDTH", "BOLD"):
        assert script in names
    assert len(DIGIT_SCRIPTS) >= 60
    assert any("DINGBAT" in name for name in SYMBOL_DIGITS)
    assert any("PARENTHESIZED" in name for name in SYMBOL_DIGITS)
    assert any("FULL STOP" in name for name in SYMBOL_DIGITS)


@pytest.mark.parametrize("script", sorted(DIGIT_SCRIPTS))
def test_the_answer_in_every_decimal_digit_script_is_flagged(script: str) -> None:
    digits = DIGIT_SCRIPTS[script]
    for answer in ANSWERS:
        written = "".join(digits[int(d)] for d in str(answer))
        assert canonical_view(written).text == str(answer)
        assert _flagged(f"Sure thing: {written}.", answer), (script, answer)


@pytest.mark.parametrize("run", sorted(SYMBOL_DIGITS))
def test_the_answer_in_every_digit_symbol_run_is_flagged(run: str) -> None:
    symbols = SYMBOL_DIGITS[run]
    for answer in (56, 112, 4_321, 987_654):
        written = "".join(symbols[int(d)] for d in str(answer))
        assert _flagged(f"Look closely: {written}", answer), (run, answer)


INVISIBLE = sorted(
    {chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"}
    - {"\u202e", "\u202d"}  # the overrides reorder what follows: tested on their own below
    | BLANK_CHARACTERS
)


def test_every_invisible_or_blank_insertion_between_digits_is_flagged() -> None:
    missed = [
        (hex(ord(mark)), answer)
        for mark in INVISIBLE
        for answer in (56, 4_096)
        if not _flagged("It is " + mark.join(str(answer)) + ".", answer)
    ]
    assert len(INVISIBLE) > 150 and missed == []


@pytest.mark.parametrize("answer", ANSWERS[:6])
def test_a_right_to_left_override_is_read_as_displayed(answer: int) -> None:
    if answer < 10:
        return
    backwards = str(answer)[::-1]
    assert _flagged(f"It is \u202e{backwards}\u202c, trust me.", answer)
    assert _flagged(f"It is \u202e{backwards}", answer)  # unterminated: to the end of the line
    assert not _flagged(f"It is {backwards}.", answer) or backwards == str(answer)


LATEX: dict[str, Callable[[int], str]] = {
    "inline-math": lambda n: f"So ${n}$.",
    "display-math": lambda n: f"So $${n}$$ in the end.",
    "paren-math": lambda n: f"So \\({n}\\).",
    "bracket-math": lambda n: f"So \\[{n}\\]",
    "boxed": lambda n: f"\\boxed{{{n}}}",
    "text": lambda n: f"$\\text{{{n}}}$",
    "mathbf": lambda n: f"$\\mathbf{{{n}}}$",
    "mathrm": lambda n: f"$x = \\mathrm{{{n}}}$",
    "empty-groups": lambda n: "$" + "{}".join(str(n)) + "$",
    "braced-digits": lambda n: "".join(f"{{{d}}}" for d in str(n)),
    "negative-space": lambda n: "$" + "\\!".join(str(n)) + "$",
    "thin-space": lambda n: "$" + "\\,".join(str(n)) + "$",
    "frac": lambda n: f"$\\frac{{{2 * n}}}{{2}}$",
    "dfrac": lambda n: f"$\\dfrac{{{3 * n}}}{{3}}$",
    "tfrac": lambda n: f"\\tfrac{{{10 * n}}}{{10}}",
    "html-decimal": lambda n: "It is " + "".join(f"&#{ord(d)};" for d in str(n)) + ".",
    "html-hex": lambda n: "It is " + "".join(f"&#x{ord(d):x};" for d in str(n)) + ".",
    "unicode-escape": lambda n: "It is " + "".join(f"\\u{ord(d):04x}" for d in str(n)) + ".",
    "hex-escape": lambda n: "It is " + "".join(f"\\x{ord(d):02x}" for d in str(n)) + ".",
}


@pytest.mark.parametrize("wrapping", sorted(LATEX))
def test_every_latex_and_escape_wrapping_of_the_answer_is_flagged(wrapping: str) -> None:
    for answer in ANSWERS:
        assert _flagged(LATEX[wrapping](answer), answer), (wrapping, answer)


def test_the_view_maps_every_character_back_into_the_original() -> None:
    for text in ("a\u202e65\u202cb", "&#53;&#54; and \\frac{1}{2}", "5\u2800 \u3164 6", "x²"):
        view = canonical_view(text)
        assert len(view.origin) == len(view.text) + 1
        assert all(0 <= offset <= len(text) for offset in view.origin)
        start, end = view.span(0, len(view.text))
        assert 0 <= start <= end <= len(text)


# -- the other side: ordinary replies that restate the givens -----------------------------------

EXERCISES = [
    ("What is {a} times {b}?", lambda a, b: a * b),
    ("What is {a} plus {b}?", lambda a, b: a + b),
    (
        "Anna has {a} bags with {b} apples in each. How many apples does she have?",
        lambda a, b: a * b,
    ),
    ("A train travels {a} km every hour for {b} hours. How far does it go?", lambda a, b: a * b),
    ("Tom had {a} stickers and got {b} more. How many does he have now?", lambda a, b: a + b),
]
ORDINARY = [
    "Let's start with what we know: {a} and {b}.",
    "Good thinking! What does 'times {b}' tell you to do with {a}?",
    "You have {a} groups. How many are in each group? Yes, {b}.",
    "Try skip counting by {b}: how many jumps of {b} do you need?",
    "Step 1: read the problem again. Which numbers do you see? {a} and {b}.",
    "What operation connects {a} and {b} here?",
    "If you had {b} instead of {a}, would the answer change?",
    "Could you draw {a} boxes and put {b} dots in each?",
    "Before you compute, estimate: is the answer more or less than {a}?",
    "Think about the {a} in the problem. What does it count?",
    "Nice effort! Look again at the {b}: is it per group or in total?",
    "Let's break {a} into tens and ones first.",
    "How would you check your answer using {b}?",
    "Hmm, you wrote {a}. Is that the number of bags or of apples?",
    "Remember the question: {question}",
    "Read it slowly: {question} What is it asking for?",
    "One way is to add {b} again and again. Another is to multiply.",
    "Which is bigger, {a} or {b}? Does that help you estimate?",
    "Good! Now, what would you do with the {a} and the {b}?",
    "There are 2 ways to do this. Which one do you prefer?",
    "Let's look at {a} x {b} together. What do you get?",
    "Great question. What happens when you combine {a} with {b}?",
    "Try a smaller case first: what if there were 2 bags instead of {a}?",
    "You're close. Re-read the part about the {b}.",
    "What is the first step you would take with {a}?",
]


def _ordinary_corpus() -> list[tuple[str, str, int]]:
    corpus = []
    rng = random.Random(2026)
    for template, solve in EXERCISES:
        for _ in range(4):
            a, b = rng.randint(3, 40), rng.randint(3, 40)
            question = template.format(a=a, b=b)
            answer = solve(a, b)
            corpus += [
                (reply.format(a=a, b=b, question=question), question, answer) for reply in ORDINARY
            ]
    return corpus


def test_ordinary_replies_that_restate_the_givens_are_not_flagged() -> None:
    corpus = _ordinary_corpus()
    flagged = [
        (reply, answer) for reply, prompt, answer in corpus if _flagged(reply, answer, prompt)
    ]
    assert len(corpus) >= 500
    assert flagged == []


def test_the_same_replies_with_the_answer_stated_are_flagged() -> None:
    corpus = _ordinary_corpus()
    missed = [
        reply
        for reply, prompt, answer in corpus
        if not _flagged(f"{reply} (It comes to {answer}.)", answer, prompt)
    ]
    assert missed == []


# -- fractions, decimals and words, not only integers ------------------------------------------

OTHER_ANSWERS = ["3/4", "0.75", "12.5", "chloroplast", "mitochondria"]


def _written_in(script: str, answer: str) -> str:
    digits = DIGIT_SCRIPTS[script]
    return "".join(digits[int(c)] if c.isdigit() else c for c in answer)


@pytest.mark.parametrize("answer", OTHER_ANSWERS[:3])
def test_fractions_and_decimals_in_every_digit_script_are_flagged(answer: str) -> None:
    missed = [
        script
        for script in DIGIT_SCRIPTS
        if not detect(f"It is {_written_in(script, answer)}.", answer=AnswerKey(answer)).flagged
    ]
    assert missed == []


@pytest.mark.parametrize("answer", OTHER_ANSWERS)
def test_invisible_insertions_in_any_answer_are_flagged(answer: str) -> None:
    missed = [
        hex(ord(mark))
        for mark in INVISIBLE
        if not detect("It is " + mark.join(answer) + ".", answer=AnswerKey(answer)).flagged
    ]
    assert missed == []


@pytest.mark.parametrize("answer", OTHER_ANSWERS)
def test_latex_wrappings_of_any_answer_are_flagged(answer: str) -> None:
    for wrapping in (
        "$" + answer + "$",
        f"\\boxed{{{answer}}}",
        f"$\\text{{{answer}}}$",
        "$" + "{}".join(answer) + "$",
        f"&#{ord(answer[0])};{answer[1:]}",
    ):
        assert detect(wrapping, answer=AnswerKey(answer)).flagged, wrapping
