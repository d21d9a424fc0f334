"""An answer written as code or a formula is graded with its operators.

Text answers were compared word by word, so "result = n", "result -= n" and "result == n" were
all graded correct for "result += n" (the words "result" and "n" match), on a shipped
curriculum exercise: a learner moved on with a wrong statement marked right. Every shipped
exercise whose answer or accepted spelling has an operator is tried here with each operator
swapped for others: none of those is correct; the spellings themselves, spaced differently,
still are.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from pedrag.runtime.learning.answer_reader import operators
from pedrag.runtime.learning.grader import grade_exercise
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor

SWAPS = ["=", "+=", "-=", "*=", "/=", "==", "!=", "<", ">", "<=", ">=", "+", "-", "*", "%", "//"]


def _exercises() -> list[Any]:
    tutor = Tutor(store=MemoryStore())
    return [
        e
        for e in tutor.curriculum.exercises
        if any(operators(s) for s in (e.answer, *e.accept))
        and not any(ch in s for s in (e.answer, *e.accept) for ch in "()[]{}")
    ]


EXERCISES = _exercises()


def _spellings(exercise: Any) -> list[str]:
    return [exercise.answer, *exercise.accept]


def test_the_shipped_curriculum_has_operator_answers_to_try() -> None:
    assert len(EXERCISES) >= 5, [e.id for e in EXERCISES]


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.id)
def test_an_operator_swapped_for_another_is_not_the_answer(exercise: Any) -> None:
    accepted = {re.sub(r"\s+", "", s) for s in _spellings(exercise)}
    tried = 0
    for spelling in _spellings(exercise):
        for run in set(operators(spelling)):
            for swap in SWAPS:
                if swap == run or len(operators(spelling)) != len(
                    operators(spelling.replace(run, swap))
                ):
                    continue
                message = spelling.replace(run, swap)
                if re.sub(r"\s+", "", message) in accepted:
                    continue  # swapped into another accepted spelling
                tried += 1
                result = grade_exercise(message, exercise, intent="attempt")
                assert result.verdict != "correct", (exercise.id, message, result.reason)
    assert tried > 0


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.id)
def test_the_spellings_are_still_correct_however_they_are_spaced(exercise: Any) -> None:
    for spelling in _spellings(exercise):
        wrapped = (f"I think it's {spelling}", f"{spelling}, as far as I know")
        if re.match(r"not\b", spelling):
            # "not n % 2" is code; inside a sentence the reader takes its "not" as the
            # learner's negation and grades nothing (a known limit: it does not know code)
            wrapped = ()
        for message in (
            spelling,
            re.sub(r"\s*([=+\-*/%<>!]+)\s*", r"\1", spelling),  # "result+=n"
            *wrapped,
        ):
            result = grade_exercise(message, exercise, intent="attempt")
            assert result.verdict == "correct", (exercise.id, message, result.reason)


@pytest.mark.parametrize(
    ("text", "runs"),
    [
        ("result += n", ("+=",)),
        ("result + = n", ("+=",)),
        ("if n % 2 == 0", ("%", "==")),
        ("6CO2 + 6H2O -> C6H12O6 + 6O2", ("+", "->", "+")),
        ("carbon-dioxide", ()),  # a hyphen inside a word is spelling
        ("x - y", ("-",)),
        ("range(5)", ("(", ")")),
        ("Hi Ada.", ()),
    ],
)
def test_operators_are_read_in_order_white_space_aside(text: str, runs: tuple[str, ...]) -> None:
    assert operators(text) == runs
