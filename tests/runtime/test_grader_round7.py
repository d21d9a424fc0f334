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

import inspect
from typing import Any

import pytest

from pedrag.runtime.detect.detector import AnswerKey
from pedrag.runtime.learning.grader import answer_words_signal, grade, grade_exercise
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


# -- 2. a bare trace of a loop's values, then the count ------------------------------------------

COUNTDOWN = ["10, 7, 4, 1", "10, 7, 4, 1, -2", "10 then 7 then 4 then 1", "n is 10, 7, 4, 1"]
COUNTED = ["{trace} so {n} lines", "{trace}, so {n}", "it prints {trace} so {n} lines"]
COUNTED += ["{trace}. That's {n} lines", "{trace} so the answer is {n}"]


@pytest.mark.parametrize("shape", COUNTED)
@pytest.mark.parametrize("trace", COUNTDOWN)
def test_a_trace_of_the_loops_values_leaves_the_count_graded(
    tutor: Tutor, trace: str, shape: str
) -> None:
    exercise = _exercise(tutor, "while_countdown")  # n takes 10, 7, 4, 1, then -2; 4 lines
    for count, verdict in (("4", "correct"), ("5", "wrong"), ("6", "wrong")):
        result = grade_exercise(shape.format(trace=trace, n=count), exercise)
        assert (result.verdict, result.candidate) == (verdict, count), result.reason


@pytest.mark.parametrize("trace", COUNTDOWN)
def test_a_trace_of_the_loops_values_alone_is_a_step(tutor: Tutor, trace: str) -> None:
    # "10, 7, 4, 1, -2" was correct as the 4 among the values
    assert grade_exercise(trace, _exercise(tutor, "while_countdown")).verdict == "none"


def test_values_the_code_never_gives_are_no_trace(tutor: Tutor) -> None:
    exercise = _exercise(tutor, "while_countdown")
    assert grade_exercise("10, 8, 6, 4 so 5 lines", exercise).verdict == "none"  # a list
    assert grade_exercise("9, 6 so 4", exercise).verdict == "none"
    assert grade_exercise("4 or 5", exercise).verdict == "none"


# -- 3. a trace of a text answer's values that goes wrong ----------------------------------------


@pytest.mark.parametrize(
    ("message", "echo"),
    [
        ("i is 2 then 5 then 9", "2 then 5 then 9"),  # was "9"
        ("i is 2 then 9", "2 then 9"),  # was "9"
        ("i is 2 then 6 then 18", "2 then 6 then 18"),  # was "6 then 18"
        ("i is 2 then 5 then 9?", "2 then 5 then 9"),
        ("2 then 5 then 9", "2 then 5 then 9"),  # the same sequence without the variable
    ],
)
def test_a_wrong_trace_of_the_printed_values_is_graded_and_echoed_whole(
    tutor: Tutor, message: str, echo: str
) -> None:
    result = grade_exercise(message, _exercise(tutor, "loop_range_output"))
    assert (result.verdict, result.candidate) == ("wrong", echo), result.reason


def test_a_trace_of_the_values_the_code_gives_is_still_a_step(tutor: Tutor) -> None:
    exercise = _exercise(tutor, "loop_range_output")
    assert grade_exercise("i is 2 then 5 then 8", exercise).verdict == "none"
    right = grade_exercise("i is 2 then 5, so it prints 2 5 8", exercise)
    assert (right.verdict, right.candidate) == ("correct", "2 5 8")
    # a number key reads the value after a trace as its one answer, as before
    total = grade_exercise("total is 2 then 6 then 13", _exercise(tutor, "for_sum_output"))
    assert (total.verdict, total.candidate) == ("wrong", "13")


# -- 4. an expression answer is tentative as a number answer is ----------------------------------

TENTATIVE = ["is it {a}?", "{a}?", "maybe {a}", "{a} I think", "I think it's {a}", "{a}, right?"]
TENTATIVE += ["probably {a}", "isn't it {a}?", "{a}, not sure", "could it be {a}?"]


@pytest.mark.parametrize("shape", TENTATIVE)
@pytest.mark.parametrize(
    ("key", "right", "wrong"), [(EXPAND, "2x + 6", "2x + 5"), (MULT, "56", "54")]
)
def test_an_answer_offered_tentatively_is_graded_as_one_in_every_reader(
    key: AnswerKey, right: str, wrong: str, shape: str
) -> None:
    for answer, verdict in ((right, "correct"), (wrong, "wrong")):
        result = grade(shape.format(a=answer), key)
        assert (result.verdict, result.candidate, result.tentative) == (verdict, answer, True)


@pytest.mark.parametrize("shape", ["{a}", "it's {a}", "{a}.", "the answer is {a}", "{a} obviously"])
@pytest.mark.parametrize(("key", "answer"), [(EXPAND, "2x + 6"), (MULT, "56")])
def test_an_answer_said_outright_is_not_tentative(key: AnswerKey, answer: str, shape: str) -> None:
    result = grade(shape.format(a=answer), key)
    assert (result.verdict, result.candidate, result.tentative) == ("correct", answer, False)


def test_the_grader_reads_no_private_name_of_the_reader() -> None:
    from pedrag.runtime.learning import grader

    assert "reader._" not in inspect.getsource(grader)  # was reader._LEAD_IN
