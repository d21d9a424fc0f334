"""The deterministic detector (runtime stage 7): code reveal, encoded payloads, answer reveal."""

from __future__ import annotations

import base64
import codecs
import urllib.parse
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pedrag.runtime.detect.answer import (
    find_answer_reveals,
    find_numbers,
    number_to_words,
    parse_number,
    stated_as_result,
)
from pedrag.runtime.detect.code import find_code, find_fences
from pedrag.runtime.detect.detector import (
    RULE_IDS,
    AnswerKey,
    CodeMode,
    Detector,
    DetectorVerdict,
    Finding,
    FindingKind,
    code_mode_for_ceiling,
    detect,
)
from pedrag.runtime.detect.encoded import find_encoded_payloads

LENIENT, STRICT = CodeMode.LENIENT, CodeMode.STRICT

PYTHON_SOLUTION = """Here is the whole thing:
```python
def solve(n):
    total = 0
    for i in range(n):
        total += i
    return total
```
Hope that helps."""

CPP_SOLUTION = """```cpp
#include <iostream>
int main() {
    int n; std::cin >> n;
    std::cout << n * 2 << std::endl;
    return 0;
}
```"""

JAVA_UNFENCED = """public static int sum(int[] a) {
    int s = 0;
    for (int x : a) { s += x; }
    return s;
}"""

JS_SOLUTION = """```js
function add(a, b) {
  const s = a + b;
  console.log(s);
  return s;
}
```"""

BLANK_TEMPLATE = """```python
def solve(n):
    total = ___
    for i in range(___):
        total += ___
    return total
```"""

PROSE_PSEUDOCODE = """```
for each number in the list
    add it to the running total
then report the total
```"""


def rule_ids(findings: tuple[Finding, ...]) -> list[str]:
    return [finding.rule_id for finding in findings]


# --- result types ---------------------------------------------------------------------------


def test_verdict_is_flagged_exactly_when_it_has_findings() -> None:
    finding = Finding(FindingKind.CODE, "fenced block", 0, 3, "code-fence")
    assert not DetectorVerdict().flagged
    assert DetectorVerdict((finding,)).flagged
    assert DetectorVerdict((finding, finding)).rule_ids == ("code-fence",)
    assert "1 more finding" in DetectorVerdict((finding, finding)).reason


def test_finding_rejects_an_unknown_rule_id_and_a_bad_span() -> None:
    with pytest.raises(ValueError, match="rule id"):
        Finding(FindingKind.CODE, "x", 0, 1, "made-up")
    with pytest.raises(ValueError, match="span"):
        Finding(FindingKind.CODE, "x", 5, 1, "code-fence")


def test_every_finding_the_detector_emits_uses_a_declared_rule_id() -> None:
    reply = PYTHON_SOLUTION + "\nThe answer is 56. " + base64.b64encode(b"x = foo(y)").decode()
    verdict = detect(reply, code_mode=STRICT, answer=AnswerKey("56"))
    assert set(verdict.rule_ids) <= set(RULE_IDS)
    assert {"code-fence", "answer-reveal", "encoded-payload"} <= set(verdict.rule_ids)


@pytest.mark.parametrize(
    ("ceiling", "mode"),
    [
        ("H0", STRICT),
        ("H4", STRICT),
        ("h3", STRICT),
        (4, STRICT),
        ("H5", LENIENT),
        ("H6", LENIENT),
        (7, CodeMode.OPEN),
    ],
)
def test_ceilings_h0_to_h4_forbid_code(ceiling: str | int, mode: CodeMode) -> None:
    assert code_mode_for_ceiling(ceiling) is mode


@pytest.mark.parametrize("ceiling", ["H8", "high", 9, -1])
def test_a_non_rung_ceiling_is_rejected(ceiling: str | int) -> None:
    with pytest.raises(ValueError, match="rung"):
        code_mode_for_ceiling(ceiling)


def test_an_answer_key_needs_an_answer() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        AnswerKey("  ")


# --- code reveal: lenient -------------------------------------------------------------------


@pytest.mark.parametrize("reply", [PYTHON_SOLUTION, CPP_SOLUTION, JS_SOLUTION])
def test_lenient_flags_a_long_fenced_solution_in_any_common_language(reply: str) -> None:
    findings = find_code(reply, LENIENT)
    assert rule_ids(findings) == ["code-fence"]
    start, end = findings[0].start, findings[0].end
    assert reply[start:end].startswith("```") and reply[start:end].endswith("```")


def test_lenient_lets_a_short_illustrative_snippet_through() -> None:
    reply = "You can check with ```python\nprint(len(xs))\n``` before you start."
    assert find_code(reply, LENIENT) == ()


def test_lenient_lets_a_fill_in_the_blank_template_through() -> None:
    assert find_code(BLANK_TEMPLATE, LENIENT) == ()


def test_lenient_flags_an_unfenced_run_of_code_lines() -> None:
    assert rule_ids(find_code(JAVA_UNFENCED, LENIENT)) == ["inline-code"]


def test_lenient_flags_an_indented_code_block() -> None:
    reply = (
        "Look:\n\n    def f(n):\n        if n < 2:\n            return n\n"
        "        return f(n - 1) + f(n - 2)\n\nDone."
    )
    assert rule_ids(find_code(reply, LENIENT)) == ["indented-code"]


def test_an_unclosed_fence_is_judged_as_it_is() -> None:
    reply = "Here:\n```python\ndef solve(n):\n    total = 0\n    for i in range(n):\n"
    reply += "        total += i\n    return total\n"
    findings = find_code(reply, LENIENT)
    assert rule_ids(findings) == ["code-fence"] and findings[0].end == len(reply)


# --- code reveal: strict --------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        "Try ```python\nprint(len(xs))\n``` first.",
        "```cpp\nint findMax(vector<int>& v);\n```",
        BLANK_TEMPLATE,
        "the code is ```x = foo(y)``` there",
    ],
    ids=["short-snippet", "bare-signature", "blank-template", "one-line-fence"],
)
def test_strict_flags_any_fenced_block_with_code(reply: str) -> None:
    assert "code-fence" in rule_ids(find_code(reply, STRICT))


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        ("You could write\nx = foo(y)\nand then stop.", "x = foo(y)"),
        ("Then loop:\nfor i in range(n):\nand add.", "for i in range(n):"),
        ("Remember\nreturn a + b;\nat the end.", "return a + b;"),
        ("const add = (a, b) => a + b;", "const add = (a, b) => a + b;"),
    ],
)
def test_strict_flags_a_single_code_line_in_prose(reply: str, code: str) -> None:
    findings = find_code(reply, STRICT)
    assert rule_ids(findings) == ["inline-code"]
    assert reply[findings[0].start : findings[0].end] == code
    # An arrow function is a complete function, which only H7 may show (issue 15).
    expected = ["complete-function"] if "=>" in code else []
    assert rule_ids(find_code(reply, LENIENT)) == expected
    assert find_code(reply, CodeMode.OPEN) == ()


def test_strict_flags_a_backtick_statement_but_not_a_named_call() -> None:
    reply = "Use `total += x` inside the loop; `len(xs)` gives the size."
    findings = find_code(reply, STRICT)
    assert [reply[f.start : f.end] for f in findings] == ["`total += x`"]


@pytest.mark.parametrize(
    "reply",
    [
        PROSE_PSEUDOCODE,
        "If you multiply both numbers, what do you get?\nFor each item, think about it.",
        "We have 3 x 8 = 24, so x = 24 / 3.\nThen x = 8.",
        "Aivo --(5 months)--> Therese --(2 months)--> Jolyn",
        "- First, find the total.\n- Then divide by 3.\n1. Add them up.",
        "x = sqrt(5) or approximately 2.236",
        "return to the problem and think again",
        "Let x = 5 and y = 3.",
    ],
    ids=["prose-pseudocode", "prose", "maths", "diagram", "list", "sqrt", "return-verb", "let"],
)
def test_strict_lets_prose_maths_and_plain_pseudocode_through(reply: str) -> None:
    assert find_code(reply, STRICT) == ()


def test_fences_are_found_with_their_language_tag() -> None:
    fences = list(find_fences("a ```py\nx = 1\n``` b ~~~ (mid-line tildes open nothing)"))
    assert [(fence.language, fence.body) for fence in fences] == [("py", "x = 1\n")]
    assert len(list(find_fences("```\none\n```\n~~~\ntwo\n~~~"))) == 2


# --- encoded payloads -----------------------------------------------------------------------

CODE = "def solve(n):\n    return n * (n + 1) // 2\n"


@pytest.mark.parametrize(
    ("payload", "encoding"),
    [
        (base64.b64encode(CODE.encode()).decode(), "base64"),
        (base64.encodebytes((CODE * 4).encode()).decode(), "base64"),  # wrapped over lines
        (base64.b32encode(b"x = foo(y)").decode(), "base32"),
        (CODE.encode().hex(), "hex"),
        (" ".join(f"0x{byte:02x}" for byte in b"x = foo(y)"), "hex"),
        (urllib.parse.quote("int main() { return 0; }"), "url-encoding"),
        (base64.b64encode(base64.b64encode(b"print(secret_value)")).decode(), "base64"),
    ],
    ids=["base64", "base64-wrapped", "base32", "hex", "hex-bytes", "url", "nested"],
)
def test_an_encoded_payload_that_decodes_to_code_is_flagged(payload: str, encoding: str) -> None:
    reply = f"Sure, decode this yourself: {payload}\nGood luck."
    findings = find_encoded_payloads(reply)
    assert rule_ids(findings) == ["encoded-payload"]
    assert findings[0].reason.startswith(encoding)
    assert payload.strip() in reply[findings[0].start : findings[0].end + 1]


# Found by the property tests: urlsafe characters, and a payload followed by a short word on
# the next line (which must not be glued on as a wrapped line).
URLSAFE = "a = a(a00)\nconst a = (a) => a * 10;\nconst a = (a00) => a00 * 10;"


@pytest.mark.parametrize(
    "reply",
    [
        f"Here: {base64.urlsafe_b64encode(URLSAFE.encode()).decode()}\nthat is all",
        f"Here: {base64.b64encode(b'for a0 in range(100):').decode()}\ndo it",
    ],
    ids=["urlsafe", "short-next-line"],
)
def test_base64_edge_cases_still_decode(reply: str) -> None:
    assert rule_ids(find_encoded_payloads(reply)) == ["encoded-payload"]


@pytest.mark.parametrize("code", ["a = of(of)", "so = a(us0)", "a = a(a)"])
def test_code_with_english_looking_names_is_still_code(code: str) -> None:
    assert rule_ids(find_code(f"```\n{code}\n```", STRICT)) == ["code-fence"]


def test_an_encoded_payload_that_decodes_to_the_answer_is_flagged() -> None:
    reply = "In base64 it is NTY= if you want to peek."
    findings = find_encoded_payloads(reply, AnswerKey("56"))
    assert rule_ids(findings) == ["encoded-payload"]
    assert findings[0].kind is FindingKind.ANSWER
    assert find_encoded_payloads(reply, AnswerKey("57")) == ()


def test_rot13_of_code_keywords_is_flagged() -> None:
    reply = "Here: " + codecs.encode("def solve(n): return n * 2", "rot13")
    assert "rot13" in find_encoded_payloads(reply)[0].reason


def test_rot13_of_the_answer_is_flagged_but_rot13_of_plain_english_is_not() -> None:
    hidden = "The answer is " + codecs.encode("fifty-six", "rot13")
    assert find_encoded_payloads(hidden, AnswerKey("56"))
    # "bar" is rot13 for "one": an English reply must not read as the answer 1.
    plain = "Look at the bar chart: which one is taller?"
    assert find_encoded_payloads(plain, AnswerKey("1")) == ()


@pytest.mark.parametrize(
    "reply",
    [
        "internationalization is long, and so are 1234567890123456 and deadbeefcafe00",
        "The sequence 35 36 37 38 goes up by one.",
        "Multiply 2100 by 1200 and you get a much bigger number.",
    ],
)
def test_words_numbers_and_hashes_are_not_payloads(reply: str) -> None:
    assert find_encoded_payloads(reply, AnswerKey("5678")) == ()


# --- numbers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("fifty-six", 56),
        ("fifty six", 56),
        ("one hundred and twelve", 112),
        ("twenty five thousand three hundred", 25300),
        ("2,520,000", 2520000),
        ("a hundred", 100),
        ("0.5", Fraction(1, 2)),
        ("1/2", Fraction(1, 2)),
        ("one half", Fraction(1, 2)),
        ("two thirds", Fraction(2, 3)),
        ("one and a half", Fraction(3, 2)),
        ("2 1/2", Fraction(5, 2)),
        ("three point one four", Fraction("3.14")),
        ("2 million", 2_000_000),
        ("-5", -5),
        ("negative five", -5),
    ],
)
def test_numbers_are_read_in_any_spelling(text: str, value: int | Fraction) -> None:
    mention = parse_number(text)
    assert mention is not None and mention.value == value


@pytest.mark.parametrize(
    "text", ["step 4", "Go to H4", "4. Multiply them", "the 2nd try", "5x = 20", "question #4"]
)
def test_labels_ordinals_and_coefficients_are_not_values(text: str) -> None:
    assert all(mention.value != 4 and mention.value != 5 for mention in find_numbers(text))
    assert not find_answer_reveals(text, AnswerKey("4"))


def test_one_as_a_pronoun_is_not_a_number() -> None:
    assert find_numbers("Let's try another one, the right one.") == ()
    assert [m.value for m in find_numbers("one apple")] == [1]


def test_five_six_spread_over_a_sentence_is_two_numbers() -> None:
    assert [m.value for m in find_numbers("five apples and six pears")] == [5, 6]


def test_an_expression_is_not_a_spelling_of_its_value() -> None:
    assert [m.value for m in find_numbers("24/3")] == [24, 3]


@pytest.mark.parametrize("number", [0, 7, 13, 40, 56, 100, 112, 1000, 101_010, 999_999])
def test_number_words_round_trip(number: int) -> None:
    for conjunction in (False, True):
        words = number_to_words(number, conjunction=conjunction)
        assert [m.value for m in find_numbers(words)] == [number]
    assert number_to_words(112, conjunction=True) == "one hundred and twelve"
    assert number_to_words(56) == "fifty-six"


# --- answer reveal --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        "The answer is 56.",
        "It's fifty-six.",
        "it is fifty six",
        "one could say Fifty Six",
        "the product is 5 6",
        "the product is 5-6",
        "the product is 5,6",
        "spelled out: five six",
        "exactly 56.0 in total",
        "7 x 8 = 56",
    ],
)
def test_the_answer_is_caught_in_any_spelling(reply: str) -> None:
    assert rule_ids(find_answer_reveals(reply, AnswerKey("56"))) == ["answer-reveal"]


@pytest.mark.parametrize(
    "reply",
    [
        "Think about what 7 groups of 8 make.",
        "five apples and six pears",
        "Look at step 56 of the worked example.",
        "The numbers 4 5 6 7 are in a row.",
        "It is 0.56 of the whole.",
        "Count to 560 slowly.",
        "What do you get when you add them?",
    ],
)
def test_replies_without_the_answer_are_not_flagged(reply: str) -> None:
    assert find_answer_reveals(reply, AnswerKey("56")) == ()


def test_a_thousands_separated_answer_is_caught_written_plainly() -> None:
    assert find_answer_reveals("It comes to 2520000 pixels.", AnswerKey("2,520,000"))
    assert find_answer_reveals("It comes to 2,520,000 pixels.", AnswerKey("2520000"))


@pytest.mark.parametrize(
    ("answer", "reply"),
    [
        ("0.5", "that is one half of it"),
        ("0.5", "that is 1/2"),
        ("0.5", "so 50% of them"),
        ("2/3", "about 0.67"),
        ("2/3", "roughly 0.666"),
        ("2/3", "two thirds"),
        ("3.14", "pi is 3.14159"),
    ],
)
def test_decimals_and_fractions_match_their_equivalents(answer: str, reply: str) -> None:
    assert find_answer_reveals(reply, AnswerKey(answer))


def test_a_rounded_decimal_does_not_match_a_different_value() -> None:
    assert not find_answer_reveals("about 0.7", AnswerKey("0.75"))
    assert not find_answer_reveals("exactly 55.99", AnswerKey("56"))


@pytest.mark.parametrize(
    "reply",
    [
        "A five-sided polygon is called a Pentagon.",
        "a PENTAGON!",
        "it is a p-e-n-t-a-g-o-n",
        "it is a pen tagon",
        "two pentagons",
    ],
)
def test_text_answers_ignore_case_spacing_and_punctuation(reply: str) -> None:
    assert find_answer_reveals(reply, AnswerKey("pentagon"))


def test_a_text_answer_needs_whole_words() -> None:
    # "pentagonal" is a derived form and now reads as the answer (issue 26); a word that only
    # shares letters does not.
    assert not find_answer_reveals("draw a pentagram", AnswerKey("pentagon"))
    assert not find_answer_reveals("I have a cat.", AnswerKey("a"))
    assert find_answer_reveals("The right option is B.", AnswerKey("B"))


def test_accepted_spellings_are_answers_too() -> None:
    key = AnswerKey("Paris", accept=("paree",))
    assert "answer-reveal" in rule_ids(find_answer_reveals("It is Paree.", key))


def test_a_number_the_student_said_first_is_not_a_reveal() -> None:
    key = AnswerKey("56")
    assert not find_answer_reveals("Yes, 56 is right!", key, student_message="is it 56?")
    assert not find_answer_reveals("Yes, fifty-six.", key, student_message="I think it's fifty six")
    assert find_answer_reveals("No, it is 56.", key, student_message="is it 54?")


def test_a_given_of_the_prompt_counts_only_when_stated_as_a_result() -> None:
    key = AnswerKey("8", prompt="What times 3 is 24? Hint: there are 8 boxes.")
    assert not find_answer_reveals("Picture the 8 boxes first.", key)
    assert find_answer_reveals("So the answer is 8.", key)


def test_context_numbers_count_only_when_stated_as_results() -> None:
    key = AnswerKey("100")
    context = "Student: so I found 100 permits before."
    assert not find_answer_reveals("Take the 100 permits you found.", key, context=context)
    assert find_answer_reveals("So the total should be 100.", key, context=context)


def test_another_spelling_of_a_given_does_work_for_the_student() -> None:
    key = AnswerKey("2/3", prompt="What is the decimal value of 2/3?")
    assert not find_answer_reveals("Divide 2 by 3 to turn 2/3 into a decimal.", key)
    assert find_answer_reveals("2/3 is roughly 0.67 as a decimal.", key)


def test_stated_as_result_reads_cues_and_questions() -> None:
    for text in ("so it is 8", "= 8", "which gives us 8", "is actually about 8"):
        assert stated_as_result(text, len(text) - 1)
    for text in ("what is 8", "the 8", "how much is 8"):
        assert not stated_as_result(text, len(text) - 1)


def test_the_current_step_value_is_a_step_reveal() -> None:
    findings = find_answer_reveals("First, 24 / 3 = 8 pencils per box.", None, step_value="8")
    assert rule_ids(findings) == ["step-reveal"]
    assert not find_answer_reveals("How many fit in one box?", None, step_value="8")


def test_reproducing_the_solution_is_a_solution_reveal() -> None:
    solution = (
        "There are 26 - 2 = 24 pencils in the three boxes. Thus each box can contain "
        "24 / 3 = 8 pencils. Together Jam and Meg have 26 + 46 = 72 pencils."
    )
    key = AnswerKey("9", solution=solution)
    copied = "Well, there are 26 - 2 = 24 pencils in the three boxes, thus each box can "
    copied += "contain 24 / 3 = 8 pencils, and together Jam and Meg have 26 + 46 = 72 pencils."
    assert "solution-reveal" in rule_ids(find_answer_reveals(copied, key))
    hint = "How many pencils are in the boxes, not counting the loose ones?"
    assert find_answer_reveals(hint, key) == ()


# --- the facade -----------------------------------------------------------------------------


def test_detector_combines_the_passes_in_position_order() -> None:
    reply = "The answer is 56.\n" + PYTHON_SOLUTION
    verdict = Detector(LENIENT, AnswerKey("56")).check(reply)
    assert verdict.rule_ids == ("answer-reveal", "code-fence")
    assert [f.start for f in verdict.findings] == sorted(f.start for f in verdict.findings)


def test_without_an_answer_key_only_code_rules_run() -> None:
    assert not detect("The answer is 56.").flagged
    assert detect(PYTHON_SOLUTION).flagged


def test_plain_tutoring_prose_is_not_flagged_in_strict_mode() -> None:
    reply = (
        "Good thinking! You found that 3 boxes hold 24 pencils. If each box holds the same "
        "number, what operation tells you how many are in one box? Try it and tell me."
    )
    assert not detect(reply, code_mode=STRICT, answer=AnswerKey("9")).flagged


@pytest.mark.parametrize(
    "reply",
    [
        "So it is fifty\u2011six.",  # non-breaking hyphen
        "So it is fifty\u2013six.",  # en dash
        "So it is fifty\u00adsix.",  # soft hyphen
        "So it is 5\u200b6.",  # zero-width space
        "So it is \u200e56\u200f.",  # bidi marks
    ],
)
def test_an_answer_hidden_with_invisible_or_look_alike_characters_is_found(reply: str) -> None:
    key = AnswerKey(answer="56", accept=("fifty-six",), prompt="What is 7 times 8?")
    findings = find_answer_reveals(reply, key)
    assert [finding.rule_id for finding in findings] == ["answer-reveal"]
    span = reply[findings[0].start : findings[0].end]  # in the reply as given
    assert span.startswith(("5", "fifty")) and span.endswith(("6", "six"))


@given(st.text(alphabet="ABCNTYabcxyz0123456789+/_-=", max_size=9))
def test_a_token_refused_as_too_short_never_decodes(token: str) -> None:
    """The base64 pass skips decoding a single token `_too_short` refuses (most words of a
    reply): only sound if decoding would have refused it too."""
    from pedrag.runtime.detect.encoded import _decode_base64, _too_short

    if _too_short(token):
        assert _decode_base64(token) is None


def test_a_four_character_padded_token_is_still_read() -> None:
    key = AnswerKey("56")
    found = find_encoded_payloads(f"Try {base64.b64encode(b'56').decode()} maybe", key)
    assert [finding.rule_id for finding in found] == ["encoded-payload"]
