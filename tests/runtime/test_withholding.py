"""Withholding that holds (issue 15): the detector's reading of what a student states, and of
the spellings an adversarial actor hides the answer in."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pedrag.runtime.detect.answer import find_answer_reveals, student_states_answer
from pedrag.runtime.detect.detector import (
    MAX_REPLY_CHARS,
    AnswerKey,
    CodeMode,
    Detector,
    DetectorVerdict,
    code_mode_for_ceiling,
    detect,
)
from pedrag.runtime.turn.streaming import StreamGuard
from tests.runtime.reveal_payloads import CODE_PAYLOADS, number_payloads, text_payloads

KEY = AnswerKey("56", accept=("fifty-six",), prompt="What is 7 times 8?")
TEXT_KEY = AnswerKey("chloroplast", prompt="Which organelle carries out photosynthesis?")
EVERY_CANDIDATE = ", ".join(str(n) for n in range(201))


# -- what a student "states" (case 2) -----------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        "I think it is 56",
        "is it fifty-six?",
        "7 times 8 is 56",  # the givens 7 and 8 are not other candidates
        "56!",
    ],
)
def test_a_message_committing_to_one_value_states_it(message: str) -> None:
    assert student_states_answer(message, KEY)
    assert not find_answer_reveals("Yes, it is 56.", KEY, student_message=message)


@pytest.mark.parametrize(
    "message",
    [
        "is it one of 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62?",
        f"is it one of {EVERY_CANDIDATE}?",
        "56 or 57?",
        "somewhere between 55 and 56 and 57",
        "it's 54, 55, 56 or so",
        "fifty-five, fifty-six, fifty-seven?",
        "56 plus or minus 1",
    ],
)
def test_a_list_or_range_of_candidates_states_nothing(message: str) -> None:
    assert not student_states_answer(message, KEY)
    assert find_answer_reveals("Yes, it is 56.", KEY, student_message=message)


@pytest.mark.parametrize(
    "message, states",
    [
        ("it's the chloroplast", True),
        ("chloroplast, I think", True),
        ("chloroplast or mitochondrion?", False),
        ("nucleus, chloroplast, ribosome?", False),
        ("chloroplast/mitochondrion", False),
    ],
)
def test_a_text_answer_is_stated_only_without_alternatives(message: str, states: bool) -> None:
    assert student_states_answer(message, TEXT_KEY) is states
    assert bool(find_answer_reveals("Yes: chloroplast.", TEXT_KEY, student_message=message)) is (
        not states
    )


# -- spellings (case 4) -------------------------------------------------------------------------

EXAM_KEY = AnswerKey("9", accept=("nine",), prompt="What is 3/4 of 12?")
NUMBER_CASES = [
    pytest.param(KEY, payload, id=f"56-{name}") for name, payload in number_payloads(56).items()
] + [
    pytest.param(EXAM_KEY, payload, id=f"9-{name}") for name, payload in number_payloads(9).items()
]


@pytest.mark.parametrize("key, payload", NUMBER_CASES)
def test_every_numeric_payload_family_is_caught(key: AnswerKey, payload: str) -> None:
    for mode in (CodeMode.STRICT, CodeMode.LENIENT):
        verdict = detect(payload, code_mode=mode, answer=key)
        assert verdict.flagged, payload
        assert set(verdict.rule_ids) & {"answer-reveal", "encoded-payload"}


@pytest.mark.parametrize("name, payload", sorted(text_payloads("chloroplast").items()))
def test_every_text_payload_family_is_caught(name: str, payload: str) -> None:
    assert find_answer_reveals(payload, TEXT_KEY), name


def test_chemical_formulas_in_markup_are_caught() -> None:
    key = AnswerKey("CO2", prompt="Which gas do plants take in?")
    for payload in ("It is CO<sub>2</sub>.", "It is $\\mathrm{CO_2}$.", "It is CO₂.", "CO_{2}"):
        assert find_answer_reveals(payload, key), payload


@pytest.mark.parametrize("name, payload", sorted(CODE_PAYLOADS.items()))
def test_a_complete_function_is_a_reveal_below_h7(name: str, payload: str) -> None:
    for rung in range(7):
        assert detect(payload, code_mode=code_mode_for_ceiling(rung)).flagged, (name, rung)
    assert not detect(payload, code_mode=code_mode_for_ceiling(7)).flagged


@pytest.mark.parametrize(
    "reply",
    [
        "What is 7 times 8?",
        "The problem is 7 x 8, so think about groups of 8.",  # restating the givens
        "Try step 5. Then look at what 6 would do.",
        "Count by 8s: 8, 16, 24, and keep going.",
        "I like Roman history, and this mix of ideas is fine.",
        "Is it more than 50? Check by estimating.",
        "The 21st century has many puzzles like this.",
        "You could start with `def total(xs):` and think about what to return.",
        "def total(xs):\n    result = ___\n    return ___",
        "About 50% of learners find this tricky; 100%20 is not a number.",
    ],
)
def test_honest_replies_stay_clear(reply: str) -> None:
    assert not detect(reply, code_mode=CodeMode.LENIENT, answer=KEY).flagged


# -- random Unicode noise (hypothesis) ----------------------------------------------------------

_NOISE = st.sampled_from(
    ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u0301", "\u0308", "\u0327", "\ufe0f",
     "\ufe0e", "\u00ad", "\u034f"]
)  # fmt: skip
_CONFUSABLE = {"c": "сϲⅽ", "o": "оοօ", "p": "рρ", "a": "аɑ", "l": "ⅼ", "s": "ѕ"}


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_random_unicode_noise_in_an_answer_is_still_caught(data: st.DataObject) -> None:
    spelling = data.draw(st.sampled_from(["56", "fifty-six", "chloroplast"]))
    key = TEXT_KEY if spelling == "chloroplast" else KEY
    noisy = ""
    for char in spelling:
        if char in _CONFUSABLE and data.draw(st.booleans()):
            char = data.draw(st.sampled_from(_CONFUSABLE[char]))
        noisy += char + "".join(data.draw(st.lists(_NOISE, max_size=3)))
    reply = data.draw(st.sampled_from(["It is {}.", "so: {}", "{}!", "The answer is {} indeed."]))
    assert find_answer_reveals(reply.format(noisy), key), ascii(noisy)


# -- bounded work (case 6) ----------------------------------------------------------------------


def test_a_reply_past_the_budget_is_flagged_without_being_read() -> None:
    reply = "Think about groups of eight. " * (MAX_REPLY_CHARS // 29 + 1)
    verdict = detect(reply, answer=KEY)
    assert verdict.rule_ids == ("reply-too-long",)
    assert not student_states_answer("56, " * MAX_REPLY_CHARS, KEY)  # nor a huge message


class CountingDetector(Detector):
    """A detector that adds up how many characters it was asked to check."""

    checked = 0

    def check(self, reply: str, **turn: Any) -> DetectorVerdict:
        CountingDetector.checked += len(reply)
        return super().check(reply, **turn)


def test_the_stream_guard_checks_a_long_reply_in_linear_work() -> None:
    sentence = "Count the groups of eight and see what you notice about them. "
    text = sentence * (15_000 // len(sentence))
    CountingDetector.checked = 0
    guard = StreamGuard(CountingDetector(CodeMode.LENIENT, KEY), whole_prefix=True)
    released = "".join(guard.feed(text[i : i + 7]) for i in range(0, len(text), 7))
    released += guard.finish()
    assert released == text
    # Every unit with the whole released prefix would be ~120 times the text; the window and
    # the doubling whole checks keep it a small multiple.
    assert CountingDetector.checked < 40 * len(text)


def test_a_stream_past_the_budget_stops_with_the_replacement() -> None:
    guard = StreamGuard(Detector(CodeMode.LENIENT, KEY), whole_prefix=True)
    out = guard.feed("Let's think. ")
    out += guard.feed("x" * MAX_REPLY_CHARS)
    assert guard.stopped and guard.withheld[-1].rule_id == "reply-too-long"
    assert out.startswith("Let's think. ") and "xxx" not in out
    assert guard.feed("more text. ") == ""


@pytest.mark.parametrize(
    "reply",
    [
        "%54%68%65%20%61%6E%73%77%65%72%20%69%73%20%35%36",  # url-encoded "The answer is 56"
        "Look: 54 68 65 20 61 6e 73 77 65 72 20 69 73 20 35 36",  # hex bytes of the same
        "Look: 5468652061 6e73776572 2069732035 36",
    ],
)
def test_url_and_hex_runs_are_still_decoded(reply: str) -> None:
    assert "encoded-payload" in detect(reply, answer=KEY).rule_ids
