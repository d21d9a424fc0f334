"""The grader on its labelled suite (tests/data/grading/messages.yaml, issue 24): every message
gets the verdict a teacher gives it and commits to the answer the learner wrote; no message
that is not a correct answer is graded correct."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml

from pedrag.runtime.detect.detector import AnswerKey
from pedrag.runtime.learning.answer_reader import candidate_values, is_candidate_list
from pedrag.runtime.learning.grader import grade

SUITE = yaml.safe_load(
    (Path(__file__).parent.parent / "data" / "grading" / "messages.yaml").read_text("utf-8")
)
ROWS = [(exercise, *row) for exercise, rows in SUITE["messages"].items() for row in rows]


AFTER_HINT = [tuple(row) for row in SUITE["after_hint"]]


def _grade(exercise: str, message: str, asked: tuple[str, ...] = ()) -> Any:
    spec = SUITE["exercises"][exercise]
    key = AnswerKey(
        answer=spec["answer"],
        accept=tuple(spec.get("accept", ())),
        solution=spec.get("solution"),
        prompt=spec["prompt"],
    )
    return grade(
        message,
        key,
        tolerance=spec.get("tolerance"),
        units=tuple(spec.get("units", ())),
        asked=asked,
    )


def test_the_suite_is_large_enough_and_covers_every_category() -> None:
    assert len(ROWS) >= 200
    categories = {row[4] for row in ROWS}
    assert {
        "numbers",
        "words",
        "fractions",
        "expressions",
        "worked",
        "tentative",
        "negations",
        "questions",
        "lists",
        "typos",
        "wrong_text",
    } <= categories


@pytest.mark.parametrize(("exercise", "message", "verdict", "committed", "category"), ROWS)
def test_a_labelled_message_gets_its_verdict(
    exercise: str, message: str, verdict: str, committed: str | None, category: str
) -> None:
    result = _grade(exercise, message)
    assert (result.verdict, result.candidate) == (verdict, committed), result.reason


@pytest.mark.parametrize(
    ("exercise", "asked", "message", "verdict", "committed", "category"), AFTER_HINT
)
def test_a_message_after_a_hint_gets_its_verdict(
    exercise: str,
    asked: list[str],
    message: str,
    verdict: str,
    committed: str | None,
    category: str,
) -> None:
    """The step the last hint asked for comes from the runtime (``asked``), never the words."""
    result = _grade(exercise, message, tuple(asked))
    assert (result.verdict, result.candidate) == (verdict, committed), result.reason


@pytest.mark.parametrize(
    ("message", "values"),
    [
        ("L LI LII", [50, 51, 52]),
        ("0x30 0x31 0x32", [48, 49, 50]),
        ("5.5e1, 5.6e1", [55, 56]),
        ("fifty-five, fifty-six or fifty-seven", [55, 56, 57]),
        ("\u22127 or 7", [-7, 7]),
        ("25% or 0,5", [Fraction(1, 4), Fraction(1, 2)]),
    ],
)
def test_a_candidate_list_is_a_list_in_every_spelling(message: str, values: list[Any]) -> None:
    # The plain functions the detector's candidate-list check is to call (one reader for both).
    assert list(candidate_values(message)) == values
    assert is_candidate_list(message)
    assert not is_candidate_list("28 doubled is 56")


@pytest.mark.parametrize(
    "message",
    [
        "I think it is 54. Or maybe it is 56.",
        "a) 54 b) 56",
        "x = 4 or x = 5",
        "between 55 and 57",
        "is it one of 50, 51, 52?",
    ],
)
def test_an_offer_of_candidates_is_a_list(message: str) -> None:
    assert is_candidate_list(message)


@pytest.mark.parametrize(
    "message",
    [
        "That's correct 220 + 23 = 243. So she used 243 post-it notes and since she started "
        "with 80 she bought a package of 117 post-it notes.",
        "I used the equation 0.1x = $50 and then divided both sides by 0.1 to get x = 500.",
        "So there are 100 students in total, 56 boys and 44 girls, each class would have 25 boys",
    ],
)
def test_working_with_several_numbers_offers_no_list(message: str) -> None:
    # The detector's "the student already said it" rule asks this: a learner's working names
    # numbers in prose, and the tutor may repeat them (MRBench's annotators agree).
    assert not is_candidate_list(message)
