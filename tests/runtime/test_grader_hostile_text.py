"""A learner's text reaches SymPy's parser through the grader (a step "a op b = c", an
expression answer): no text may make it raise or compute without bound. Before, "13 (12 x 13 =
156" raised TokenError out of the turn, ")(" IndexError, and "7^7^9 = 1" (7 to the power
40,353,607: each exponent under the limit, powers associate to the right), "7 ** 7 ** 9" and
"50e39999911" kept the turn's thread computing for minutes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pedrag.runtime.detect.detector import AnswerKey
from pedrag.runtime.learning import answer_reader
from pedrag.runtime.learning.answer_reader import MAX_VALUE_BITS, parse_expression
from pedrag.runtime.learning.grader import grade

_MULT = AnswerKey(answer="56", prompt="What is 7 times 8?")
_EXPAND = AnswerKey(answer="2x + 6", prompt="Expand 2(x + 3).")


def _bits(value: object) -> int:
    numerator, denominator = getattr(value, "p", 0), getattr(value, "q", 1)
    return max(int(abs(numerator)).bit_length(), int(denominator).bit_length())


@pytest.mark.parametrize(
    "message",
    ["13 (12 x 13 = 156", "12 x 13 = (156", "(^ = 3", ")( = 2", "- .6)/(-/-0..x = 1"],
)
def test_unbalanced_or_broken_working_grades_without_raising(message: str) -> None:
    result = grade(message, _MULT)
    assert result.verdict in {"correct", "wrong", "none"}


@pytest.mark.parametrize(
    "message", ["7^7^9 = 1", "7 ** 7 ** 9 = 3", "2^(60^60) = 1", "9^9^9 = 5", "(9^64)^64^2 = 1"]
)
def test_a_tower_of_powers_in_working_is_not_computed(message: str) -> None:
    # the step does not evaluate, so it is neither an answer's proof nor a hang
    reading = answer_reader.read_message(message)
    assert all(not holds for _, holds in reading.steps)
    assert grade(message, _MULT).verdict in {"wrong", "none"}


@pytest.mark.parametrize(
    "message", ["7^7^9", "7**7**9", "2^(60^60)", "50e39999911", "9e99x", "(1, 2)^3"]
)
def test_an_expression_answer_too_large_to_compute_is_not_an_expression(message: str) -> None:
    assert parse_expression(message) is None
    assert grade(message, _EXPAND).verdict != "correct"


@pytest.mark.parametrize(
    ("text", "value"),
    [("2^10", "1024"), ("(2^8)^2", "65536"), ("3*4^2", "48"), ("2^-2", "1/4"), ("x^2", "x**2")],
)
def test_ordinary_powers_still_evaluate(text: str, value: str) -> None:
    assert str(parse_expression(text)) == value


_PIECES = [*"0123456789+-*/^(). xye", "**", "99999", "e9", "e-", ")^(", "x^", ",", "j"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=14))
def test_any_arithmetic_text_parses_to_a_bounded_value_or_nothing(pieces: list[str]) -> None:
    parsed = parse_expression("".join(pieces))
    if parsed is not None and parsed.is_Rational:
        assert _bits(parsed) <= MAX_VALUE_BITS


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([*_PIECES, " = ", "=", "so", "because", "56"]), max_size=16))
def test_any_such_message_is_graded_without_raising(pieces: list[str]) -> None:
    message = "".join(pieces)
    assert grade(message, _MULT).verdict in {"correct", "wrong", "none"}
    assert grade(message, _EXPAND).verdict in {"correct", "wrong", "none", "error"}
