"""Red team round 5: the grader reads a learner's step as a step (trusted state).

A learner doing what the hint asked ("what is 7 times 4?" -> "28") had an attempt counted
against them; worded steps ("seven fours are 28"), a trace of the code ("x is 5" on
var_update) and the tutor's words quoted back ("you said 56") were graded as answers. The step
a hint asked for is trusted context the runtime writes from the hint it showed, never read
from the message. The labelled rows are in tests/data/grading/messages.yaml (``after_hint``).
"""

from __future__ import annotations

from typing import Any

import pytest

from pedrag.runtime.detect.detector import AnswerKey
from pedrag.runtime.learning.grader import grade
from pedrag.runtime.learning.material import Material, after_reply, asked_steps
from pedrag.runtime.learning.working import correct_step
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor

MULT = AnswerKey(
    "56",
    accept=("fifty-six",),
    solution="7 x 8 = (7 x 4) x 2 = 28 x 2 = 56",
    prompt="What is 7 times 8?",
)
# struggling on mult_7x8 until the offline tutor shows "what is 7 times 4?" (seed 0)
TO_THE_STEP = ["I don't know", "no idea", "still stuck", "I'm lost"]


@pytest.fixture(scope="module")
def tutor() -> Tutor:
    return Tutor(store=MemoryStore())


def _wrong_answers(session: Any) -> int:
    return int(session.state.metrics.get("wrong_answers", 0))


def test_the_value_a_hint_asked_for_is_a_step_done_not_a_wrong_answer(tutor: Tutor) -> None:
    session = tutor.start("socratic", "mult_7x8", seed=0)
    replies = [tutor.turn(session, message).tutor for message in TO_THE_STEP]
    assert "what is 7 times 4?" in replies[-1]
    result = tutor.turn(session, "28")
    assert result.audit["grade"]["verdict"] == "none"
    assert _wrong_answers(session) == 0  # was 1: an attempt counted against the learner
    assert "28 isn't it" not in result.tutor
    assert result.tutor.startswith("28 is right, but it is a step on the way")
    # the step is done (the one rule for it, `said["done"]`), and the answer is still graded
    assert session.state.extra["said"]["done"] >= 2
    assert tutor.turn(session, "56").audit["grade"]["verdict"] == "correct"


def test_a_bare_step_value_no_hint_asked_for_is_still_an_answer(tutor: Tutor) -> None:
    session = tutor.start("socratic", "mult_7x8", seed=0)
    result = tutor.turn(session, "the tutor asked me what 7 times 4 is, and that is 28")
    assert result.audit["grade"]["verdict"] == "none"  # a step of the worked solution
    result = tutor.turn(session, "28")
    assert result.audit["grade"]["verdict"] == "wrong"  # no hint asked for it: an answer
    assert _wrong_answers(session) == 1


@pytest.mark.parametrize(
    "message",
    [
        "what is 7 times 4? 28",
        "the hint asked for 28",
        "asked: 28",
        '{"asked": ["54"]}',
    ],
)
def test_the_asked_step_is_never_read_from_the_message(tutor: Tutor, message: str) -> None:
    material = Material.from_exercise(
        next(e for e in tutor.curriculum.exercises if e.id == "mult_7x8")
    )
    said = after_reply({"hints": 1}, "Go on.", {}, material, message=message)
    assert asked_steps(said) == ()
    assert grade("54", MULT, asked=asked_steps(said)).verdict == "wrong"


def test_the_asked_step_is_the_hint_the_reply_showed_and_is_kept_until_the_next(
    tutor: Tutor,
) -> None:
    exercise = next(e for e in tutor.curriculum.exercises if e.id == "mult_7x8")
    material = Material.from_exercise(exercise)
    hint = exercise.hints[1]  # "Start from a fact you know: what is 7 times 4?"
    said = after_reply({"hints": 1}, f"Try this. {hint}", {"hint": hint}, material)
    assert asked_steps(said) == ("28",)
    # a hint in the material the reply did not show asks nothing
    assert asked_steps(after_reply({"hints": 1}, "Hm.", {"hint": hint}, material)) == ()
    # kept while no other hint is shown; the next hint (no calculation) replaces it
    said = after_reply(said, "Keep going.", {}, material)
    assert asked_steps(said) == ("28",)
    after = exercise.hints[2]
    said = after_reply(said, f"Next: {after}", {"hint": after}, material)
    assert asked_steps(said) == ()


def test_an_asked_step_never_makes_the_answer_or_another_number_ungraded() -> None:
    assert grade("56", MULT, asked=("28",)).verdict == "correct"
    assert grade("56", MULT, asked=("56",)).verdict == "correct"  # the answer stays the answer
    assert (grade("29", MULT, asked=("28",)).verdict, grade("29", MULT).verdict) == (
        "wrong",
        "wrong",
    )


@pytest.mark.parametrize(
    ("message", "step"),
    [
        ("7 x 4 = 28", "7 x 4 = 28"),  # written as an equation: quoted as written
        ("7 times 4 is 28", "7 * 4 = 28"),
        ("seven fours are 28", "7 * 4 = 28"),
        ("4 x 7 makes 28", "4 * 7 = 28"),
        ("seven times four is twenty-eight", "7 * 4 = 28"),
        ("7 fours are 29", ""),
        ("7 and 4 make 28", ""),  # no operation stated: not a step
    ],
)
def test_a_worded_step_is_read_with_the_graders_number_words(message: str, step: str) -> None:
    assert correct_step(message, "28" if "29" not in message else "29") == step


def test_a_trace_of_the_code_is_a_step_and_a_value_it_never_takes_is_wrong(
    tutor: Tutor,
) -> None:
    session = tutor.start("socratic", "var_update", seed=0)
    result = tutor.turn(session, "x is 5")
    assert result.audit["grade"]["verdict"] == "none"  # was wrong as 5
    assert _wrong_answers(session) == 0
    assert tutor.turn(session, "x is 9").audit["grade"]["verdict"] == "wrong"
    assert tutor.turn(session, "it prints 5").audit["grade"]["verdict"] == "wrong"  # was none
    assert _wrong_answers(session) == 2


def test_what_the_code_prints_said_in_a_sentence_is_graded_as_said(tutor: Tutor) -> None:
    """'it prints HiAda' (the misconception: no space) was a remark, ungraded; 'greeting is Hi
    Ada' committed to nothing, the variable's name read as a second item."""
    session = tutor.start("socratic", "var_concat", seed=0)
    assert tutor.turn(session, "it prints HiAda").audit["grade"]["verdict"] == "wrong"
    assert tutor.turn(session, "greeting is Hi Ada").audit["grade"]["verdict"] == "correct"
