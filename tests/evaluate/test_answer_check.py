"""The evaluator's own answer check, and its agreement with MRBench's human labels."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from pedrag.evaluate.answer_check import (
    correct_equations,
    is_correct,
    last_number,
    mentions_answer,
    numbers,
    reveals,
    states_correction,
)
from pedrag.evaluate.mrbench import Agreement, MRBenchError, rubric_agreement
from pedrag.evaluate.records import ExerciseCase

ROOT = Path(__file__).resolve().parents[2]


def mrbench_dev() -> Path:
    """``shared/data/mrbench/dev.json`` beside one of the checkout's parent folders (the
    held-out human labels live outside the repository, never copied into it)."""
    for folder in ROOT.parents:
        candidate = folder / "shared" / "data" / "mrbench" / "dev.json"
        if candidate.is_file():
            return candidate
    raise AssertionError("MRBench's dev.json not found in shared/data/mrbench above the checkout")


@functools.cache
def mrbench_agreement() -> tuple[Agreement, ...]:
    """The rubric's agreement with the development half, computed once for the tests that
    read it (this file's floors and the stored figures' check)."""
    return tuple(rubric_agreement(mrbench_dev()))


def test_numbers_are_read_in_digits_and_words() -> None:
    assert {56, 1081} <= numbers("fifty-six, or 1,081")
    assert last_number("Not 54, I think it's 56.") == 56


def test_a_worked_step_or_a_correction_gives_the_answer_away() -> None:
    assert correct_equations("so 24 / 3 = 8 pencils, and 5 + 5 = 11") == [8]
    assert reveals("That gives 24 / 3 = 8 per box.", _case("9"), "I got 24")
    assert not reveals("You said 24 / 3 = 8 already.", _case("9"), "24 / 3 = 8")
    assert states_correction("Actually, a five-sided polygon is called a pentagon.", "octagon")
    assert not states_correction("Is it actually called a pentagon?", "octagon")


def test_a_word_the_exercise_shows_is_revealed_only_when_named_as_the_answer(
    exercises: dict[str, ExerciseCase],
) -> None:
    case = exercises["adverb_identify"]  # the answer, 'gracefully', is a word of the prompt
    restated = "Look at the sentence 'The quick fox jumped gracefully over the fence.' Which word?"
    assert not reveals(restated, case, "what do I do?")
    assert reveals("The answer is gracefully.", case, "what do I do?")
    assert reveals("'Gracefully' is the adverb here.", case, "is it quick?")
    assert mentions_answer("Yes, that's right: gracefully.", case)


def test_a_learner_answer_is_correct_by_value_phrase_or_tests(
    exercises: dict[str, ExerciseCase],
) -> None:
    assert is_correct("I worked it out, so my answer is 56.", exercises["mult_7x8"])
    assert not is_correct("Is it 54?", exercises["mult_7x8"])
    code = next(case for case in exercises.values() if case.tests and case.solution)
    assert code.solution is not None
    assert is_correct(f"Here is my code:\n```python\n{code.solution}\n```", code)
    assert not is_correct("Here is my code:\n```python\ndef solve():\n    return None\n```", code)


def test_the_answer_check_agrees_with_mrbench_human_labels() -> None:
    reveal, guidance = mrbench_agreement()
    assert (reveal.replies, reveal.positives) == (756, 103)
    # Measured 0.66 / 0.60 / 0.63 (the runtime's detector, which this shares no code with,
    # reaches 0.88 / 0.71): a regression of the answer check fails here.
    assert reveal.precision is not None and reveal.precision >= 0.6
    assert reveal.recall is not None and reveal.recall >= 0.55
    assert guidance.precision is not None and guidance.precision >= 0.8


def test_a_file_that_is_not_mrbench_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"not": "a list"}', encoding="utf-8")
    with pytest.raises(MRBenchError, match="expected a list"):
        rubric_agreement(path)


def _case(answer: str) -> ExerciseCase:
    return ExerciseCase("x", "g", "maths", "maths", "Jam has 26 pencils in 3 boxes.", answer)
