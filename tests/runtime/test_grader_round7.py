"""Red team round 7: the grader's reading is the one every other reader of a message uses.

Round 6 left four faults: an answer taken back ("oxygen? no") committed to nothing but was
still diagnosed as the misconception its words name; a bare trace of a loop's values before a
count ("10, 7, 4, 1, -2 so 5 lines") was a list of candidates, because one of the values is
the answer's too; a trace of a text answer's values that goes wrong ("i is 2 then 5 then 9")
was graded as its last value alone; and an expression answer was never tentative ("is it 2x +
6?"), read with another module's private pattern. The labelled rows are in
tests/data/grading/messages.yaml (round 7).
"""

from __future__ import annotations

from typing import Any

import pytest

from pedrag.runtime.detect.detector import AnswerKey
from pedrag.runtime.learning.grader import answer_words_signal, grade
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor

GAS = AnswerKey(
    "carbon dioxide",
    accept=("CO2",),
    prompt="Which gas do plants take in from the air for photosynthesis?",
)
MULT = AnswerKey("56", prompt="What is 7 times 8?", solution="7 x 8 = (7 x 4) x 2 = 28 x 2 = 56")
EXPAND = AnswerKey("2x + 6", prompt="Expand 2(x + 3).")


@pytest.fixture(scope="module")
def tutor() -> Tutor:
    return Tutor(store=MemoryStore())


def _exercise(tutor: Tutor, exercise_id: str) -> Any:
    return next(e for e in tutor.curriculum.exercises if e.id == exercise_id)


# -- 1. a retraction diagnoses nothing -----------------------------------------------------------

OXYGEN = "Plants do not take in oxygen"  # photo_gas_in's misconception for the answer "oxygen"


@pytest.mark.parametrize(
    "message",
    ["oxygen? no", "oxygen, scratch that", "oxygen. never mind", "not oxygen", "you said oxygen"],
)
def test_an_answer_the_learner_does_not_stand_by_is_not_diagnosed(
    tutor: Tutor, message: str
) -> None:
    session = tutor.start("socratic", "photo_gas_in", seed=0)
    result = tutor.turn(session, message)
    assert result.audit["grade"]["verdict"] == "none"
    assert OXYGEN not in result.tutor  # was: "That looks like a common mix-up: Plants do not..."


@pytest.mark.parametrize("message", ["oxygen", "oxygen?", "I think oxygen", "oxygen, not CO2"])
def test_an_answer_said_is_diagnosed(tutor: Tutor, message: str) -> None:
    session = tutor.start("socratic", "photo_gas_in", seed=0)
    assert OXYGEN in tutor.turn(session, message).tutor


@pytest.mark.parametrize(
    ("message", "key", "signal"),
    [
        ("oxygen? no", GAS, False),
        ("oxygen", GAS, True),
        ("not oxygen", GAS, False),
        ("the hint says oxygen", GAS, False),
        ("what is oxygen?", GAS, True),  # a question about a term disowns nothing
        ("54? no", MULT, False),
        ("not 54", MULT, False),
        ("54", MULT, True),
        ("2x + 5, scratch that", EXPAND, False),
        ("2x + 5", EXPAND, True),
    ],
)
def test_the_diagnosis_reads_answer_words_as_the_grader_does(
    message: str, key: AnswerKey, signal: bool
) -> None:
    assert answer_words_signal(grade(message, key), "attempt") is signal
    assert not answer_words_signal(grade(message, key), "solution_demand")
