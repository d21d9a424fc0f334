"""Red team round 6: no phrasing a learner chooses changes trusted state.

Round 5 left five faults: an answer taken back after it ("56? no") was graded as said; the
tutor's words quoted on a text exercise ("the hint says carbon dioxide") were the learner's
answer; a trace of the code before the answer ("x is 5 and then it prints 7") was a list of
two numbers; a hint asking for a value without a calculation ("Add the tens to 38 first. What
do you get?") recorded none, so the learner who did that step had an attempt counted; and a
slip in words ("seven times four is 26") went unseen. Each rule is tested over its family of
phrasings. The labelled rows are in tests/data/grading/messages.yaml (round 6).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pedrag.runtime.detect.detector import AnswerKey
from pedrag.runtime.learning.grader import grade
from pedrag.runtime.learning.material import Material, after_reply, asked_steps
from pedrag.runtime.learning.working import first_slip
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor

MULT = AnswerKey(
    "56",
    accept=("fifty-six",),
    solution="7 x 8 = (7 x 4) x 2 = 28 x 2 = 56",
    prompt="What is 7 times 8?",
)
GAS = AnswerKey(
    "carbon dioxide",
    accept=("CO2",),
    prompt="Which gas do plants take in from the air for photosynthesis?",
)
ACCUMULATE = AnswerKey(
    "result += n",
    accept=("result = result + n",),
    prompt="Which line inside the loop adds each number n to the running total result?",
)
EXPAND = AnswerKey("2x + 6", prompt="Expand 2(x + 3).")
SOLVE = AnswerKey("x = 4", prompt="Solve 2x + 3 = 11.", solution="2x = 8, x = 4")
VAR_UPDATE = AnswerKey(
    "7",
    accept=("seven",),
    prompt="What does this code print? x = 5, then x = x + 2, then print(x)",
    solution="x = 5\nx = x + 2  # the right-hand side is worked out first\nprint(x)\n",
)
FOR_SUM = AnswerKey(
    "12",
    accept=("twelve",),
    prompt="What does this code print? total = 0, then for n in [2, 4, 6]: total += n, "
    "then print(total) after the loop",
    solution="total = 0\nfor n in [2, 4, 6]:\n    total += n  # 2, then 6, then 12\nprint(total)\n",
)
VAR_CONCAT = AnswerKey(
    "Hi Ada",
    prompt="What does this code print? name = 'Ada', then greeting = 'Hi ' + name, then "
    "print(greeting)",
    solution="name = 'Ada'\ngreeting = 'Hi ' + name\nprint(greeting)\n",
)

# -- 1. an answer taken back -------------------------------------------------------------------

TAKEN_BACK = ["{a}? no", "{a}, no", "{a} no", "{a}. Nope.", "{a}... nah", "{a}, scratch that"]
TAKEN_BACK += ["{a}, no wait", "{a}? hmm, no", "{a}. never mind", "{a} - no", "{a}? no no"]


@pytest.mark.parametrize("shape", TAKEN_BACK)
@pytest.mark.parametrize(
    ("key", "answer"),
    [
        (MULT, "56"),
        (MULT, "54"),
        (MULT, "it's fifty-six"),
        (MULT, "7 x 8 = 56"),
        (GAS, "carbon dioxide"),
        (GAS, "oxygen"),
        (ACCUMULATE, "result += n"),
        (VAR_UPDATE, "it prints 7"),
        (EXPAND, "2x + 6"),  # the expression reader too
        (EXPAND, "2x + 5"),
    ],
)
def test_an_answer_taken_back_commits_to_nothing(key: AnswerKey, answer: str, shape: str) -> None:
    # the answer alone is graded: the "no" after it is what takes it back
    assert grade(answer, key).graded
    result = grade(shape.format(a=answer), key)
    assert (result.verdict, result.candidate) == ("none", None), result.reason


@pytest.mark.parametrize(
    ("message", "verdict"),
    [
        ("56, no?", "correct"),  # a tag asking for agreement
        ("56? or no", "correct"),  # asks whether it is
        ("no, 56", "correct"),  # "no" before the answer answers the tutor
        ("no. 54", "wrong"),
        ("56, no wait, 54", "wrong"),  # a plain correction picks the number after it
        ("not 56", "none"),
    ],
)
def test_a_no_that_takes_nothing_back_leaves_the_answer(message: str, verdict: str) -> None:
    assert grade(message, MULT).verdict == verdict


# -- 2. the tutor's words quoted back ----------------------------------------------------------

QUOTING = ["you said", "the hint says", "the tutor said", "the hint said that", "you just wrote"]
QUOTING += ["the question says", "ok, the hint says", "so you said it was"]


@pytest.mark.parametrize("quote", QUOTING)
@pytest.mark.parametrize(
    ("key", "words"),
    [(GAS, "carbon dioxide"), (GAS, "oxygen"), (ACCUMULATE, "result += n"), (MULT, "56")],
)
def test_the_tutors_words_quoted_are_not_the_learners_answer(
    key: AnswerKey, words: str, quote: str
) -> None:
    assert grade(f"{quote} {words}", key).verdict == "none"
    # what the learner then says is graded, whatever was quoted before it
    assert grade(f"{quote} {words}, so it's {words}", key).verdict == grade(words, key).verdict
    assert grade(f"{quote} {words} but I think oxygen", GAS).candidate == "oxygen"
    # after a colon, the learner's own words again ("you asked which gas: oxygen" went
    # ungraded as a remark while "...: carbon dioxide" was correct)
    for answer, verdict in (("carbon dioxide", "correct"), ("oxygen", "wrong")):
        result = grade(f"{quote} which gas: {answer}", GAS)
        assert (result.verdict, result.candidate) == (verdict, answer), result.reason


def test_an_answer_quoted_in_the_exercises_own_form_is_quoted() -> None:
    assert grade("you said x = 4", SOLVE).verdict == "none"
    assert grade("you said x = 4, so x = 4", SOLVE).verdict == "correct"
    assert grade("you said x = 4, so x = 5", SOLVE).verdict == "wrong"


@pytest.mark.parametrize(
    "tag", ["{a}, right?", "{a}, correct?", "is {a} right?", "is {a} correct?"]
)
@pytest.mark.parametrize(
    ("key", "right", "wrong"),
    [
        (MULT, "56", "54"),
        (EXPAND, "2x + 6", "2x + 5"),
        (GAS, "carbon dioxide", "oxygen"),
        (ACCUMULATE, "result += n", "result = n"),
    ],
)
def test_asking_whether_an_answer_is_right_grades_it_tentatively_in_every_reader(
    key: AnswerKey, right: str, wrong: str, tag: str
) -> None:
    for answer, verdict in ((right, "correct"), (wrong, "wrong")):
        result = grade(tag.format(a=answer), key)
        assert (result.verdict, result.candidate) == (verdict, answer), result.reason


# -- words around a text answer ------------------------------------------------------------------

PAST = AnswerKey("went", prompt="What is the past tense of 'go'?")
AROUND = [
    "{a} obviously",
    "definitely {a}",
    "{a} for sure",
    "{a} lol",
    "{a} hmm",
    "I'd go with {a}",
    "I'll say {a}",
    "let me guess, {a}",
    "pretty sure it's {a}",
    "my answer: {a}",
    "final answer: {a}",
    "{a} final answer",
    "{a} is my answer",
    "{a} is the answer",
    "{a} it is",
    "is {a} it?",
    "{a} i hope",
    "hopefully {a}",
    "idk {a}",
    "{a} kinda",
    "something like {a}",
    "{a} - I guess",
    "- {a}",
    "**{a}**",
    "`{a}`",
    "{a} :)",
    "going with {a}",
    "my guess is {a}",
    "guess: {a}",
    "ans: {a}",
    "it should be {a}",
    "it'd be {a}",
    "the answer would be {a}",
    "{a} is my guess",
    "{a} (final answer)",
    "{a} - final",
    "{a} please",
    "{a}. Am I right?",
    "{a}, is that it?",
    "if I had to guess, {a}",
    "({a})",
    "that gives {a}",
]


@pytest.mark.parametrize("shape", AROUND)
@pytest.mark.parametrize(
    ("key", "right", "wrong"),
    [
        (GAS, "carbon dioxide", "nitrogen"),
        (PAST, "went", "goed"),
        (ACCUMULATE, "result += n", "result -= n"),
        (VAR_CONCAT, "Hi Ada", "Hi Bob"),
    ],
)
def test_words_around_a_text_answer_grade_the_right_and_the_wrong_answer_alike(
    key: AnswerKey, right: str, wrong: str, shape: str
) -> None:
    """Before, whether such a message was graded at all depended on whether its answer was
    right: "I'd go with carbon dioxide" was correct and "I'd go with nitrogen" a remark;
    "nitrogen obviously" was wrong and "carbon dioxide obviously" a list; "- result += n" was
    wrong, its bullet read as an operator."""
    for answer, verdict in ((right, "correct"), (wrong, "wrong")):
        result = grade(shape.format(a=answer), key)
        assert (result.verdict, result.candidate) == (verdict, answer), result.reason


@pytest.mark.parametrize(
    "remark",
    [
        "is that right?",
        "hopefully",
        "should be fine",
        "my guess is as good as yours",
        "the answer should be obvious",
        "try harder",
        "I get it",
        "it should be easy",
        "haha",
        "correct?",
    ],
)
def test_a_remark_with_those_words_is_no_answer(remark: str) -> None:
    # stripping the words around an answer must not leave a remark's rest as one: an attempt
    assert grade(remark, GAS).verdict == "none"


def test_dots_trailing_off_before_a_number_are_no_decimal_point() -> None:
    assert (grade("...54", MULT).verdict, grade("...56", MULT).verdict) == ("wrong", "correct")


# -- 3. a trace of the code before the answer --------------------------------------------------

TRACES = [
    (VAR_UPDATE, "x is 5"),
    (VAR_UPDATE, "x = 5"),
    (VAR_UPDATE, "x starts at 5"),
    (FOR_SUM, "total is 6"),
    (FOR_SUM, "total is 2 then 6"),
    (FOR_SUM, "total is 6 after the second pass"),
    (FOR_SUM, "n is 2 then 4 then 6"),  # the items of the list it loops over
    (VAR_CONCAT, "name is Ada"),
    (VAR_CONCAT, "name is 'Ada'"),
]
JOINS = ["{trace} and then it prints {a}", "{trace} so it prints {a}", "{trace}, then {a}"]
JOINS += ["{trace}. It prints {a}", "{trace} and it prints {a}", "{trace}, so {a}"]


@pytest.mark.parametrize("join", JOINS)
@pytest.mark.parametrize(("key", "trace"), TRACES)
def test_a_trace_before_the_answer_leaves_the_answer_graded(
    key: AnswerKey, trace: str, join: str
) -> None:
    assert grade(trace, key).verdict == "none"  # the trace alone is a step (round 5)
    wrong = "Hi Bob" if key is VAR_CONCAT else "9"
    right = grade(join.format(trace=trace, a=key.answer), key)
    assert (right.verdict, right.candidate) == ("correct", key.answer), right.reason
    assert grade(join.format(trace=trace, a=wrong), key).verdict == "wrong"


def test_a_value_the_code_never_gives_is_no_trace() -> None:
    # "x is 9" states a value x never takes: with the answer after it, two candidates
    assert grade("x is 9 and then it prints 7", VAR_UPDATE).verdict == "none"
    assert grade("x is 9", VAR_UPDATE).verdict == "wrong"


# -- 4. a hint that asks for a value without a calculation -------------------------------------


@pytest.fixture(scope="module")
def tutor() -> Tutor:
    return Tutor(store=MemoryStore())


def _exercise(tutor: Tutor, exercise_id: str) -> Any:
    return next(e for e in tutor.curriculum.exercises if e.id == exercise_id)


@pytest.mark.parametrize(
    ("exercise_id", "hint", "value"),
    [
        ("add_38_47", 1, "78"),  # "Add the tens to 38 first. What do you get?"
        ("add_27_56", 1, "77"),  # "Add the tens to 27 first. What total do you reach?"
        ("add_46_29", 1, "66"),
        ("add_58_36", 1, "88"),
        ("add_125_68", 1, "185"),
        ("long_mult_52x18", 1, "520"),  # "Multiplying 52 by 10 is quick. What is it?"
        ("div_84_7", 1, "14"),  # "Take away ten sevens first. How much of 84 is left?"
    ],
)
def test_a_hint_asking_for_a_value_records_the_solution_step_it_asks_for(
    tutor: Tutor, exercise_id: str, hint: int, value: str
) -> None:
    exercise = _exercise(tutor, exercise_id)
    material = Material.from_exercise(exercise)
    text = exercise.hints[hint]
    said = after_reply({"hints": hint}, f"Try this. {text}", {"hint": text}, material)
    assert value in asked_steps(said)  # was (): no value recorded
    assert set(asked_steps(said)) <= set(material.results)  # only the solution's own steps
    assert grade(value, _key(exercise), asked=asked_steps(said)).verdict == "none"
    assert grade(exercise.answer, _key(exercise), asked=asked_steps(said)).verdict == "correct"


def test_a_value_a_misconception_declares_wrong_is_never_read_from_the_solution(
    tutor: Tutor,
) -> None:
    exercise = _exercise(tutor, "div_144_8")  # its misconception: "64" (what is left) as answer
    material = Material.from_exercise(exercise)
    for text in exercise.hints:
        said = after_reply({}, text, {"hint": text}, material)
        assert "64" not in asked_steps(said)
        assert grade("64", _key(exercise), asked=asked_steps(said)).verdict == "wrong"
    # a hint's own calculation is what it asks, whatever a misconception declares
    exercise = _exercise(tutor, "mult_12x5")  # "What is 10 times 5?"; a misconception's "50"
    text = exercise.hints[1]
    said = after_reply({}, text, {"hint": text}, Material.from_exercise(exercise))
    assert asked_steps(said) == ("50",)


def test_a_hint_asking_no_value_records_none(tutor: Tutor) -> None:
    for exercise_id, hint in (("order_ops_3_4_5", 1), ("photo_organelle", 1), ("var_update", 1)):
        exercise = _exercise(tutor, exercise_id)
        text = exercise.hints[hint]
        material = Material.from_exercise(exercise)
        assert asked_steps(after_reply({}, text, {"hint": text}, material)) == ()


def _key(exercise: Any) -> AnswerKey:
    return AnswerKey(
        exercise.answer,
        accept=tuple(exercise.accept),
        solution=exercise.solution,
        prompt=exercise.prompt,
    )


def test_the_step_the_tens_hint_asks_for_is_no_attempt(tutor: Tutor) -> None:
    session = tutor.start("socratic", "add_38_47", seed=0)
    for message in ["I don't know", "no idea", "still stuck", "I'm lost"]:
        reply = tutor.turn(session, message).tutor
    assert "Add the tens to 38 first. What do you get?" in reply
    result = tutor.turn(session, "78")
    assert result.audit["grade"]["verdict"] == "none"
    assert int(session.state.metrics.get("wrong_answers", 0)) == 0  # was 1
    assert result.tutor.startswith("78 is right, but it is a step on the way")
    assert tutor.turn(session, "85").audit["grade"]["verdict"] == "correct"


# -- 5. a slip written in words ----------------------------------------------------------------

_ONES = "zero one two three four five six seven eight nine ten eleven twelve".split()
_TEENS = "thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()


def _words(number: int) -> str:
    """An independent speller for 0-99 (the reader under test uses text2num)."""
    if number <= 12:
        return _ONES[number]
    if number < 20:
        return _TEENS[number - 13]
    tens, ones = divmod(number, 10)
    return _TENS[tens - 2] + (f"-{_ONES[ones]}" if ones else "")


@given(
    a=st.integers(2, 9),
    b=st.integers(2, 9),
    off=st.integers(-5, 5),
    verb=st.sampled_from(["is", "makes", "equals"]),
    operator=st.sampled_from(["times", "multiplied by"]),
)
def test_a_slip_in_words_is_found_as_one_in_symbols(
    a: int, b: int, off: int, verb: str, operator: str
) -> None:
    stated = a * b + off
    if stated < 0:
        return
    worded = f"{_words(a)} {operator} {_words(b)} {verb} {_words(stated)}"
    symbols = f"{a}*{b}={stated}"
    assert bool(first_slip(worded)) == bool(first_slip(symbols)) == (off != 0)
    if off:
        assert first_slip(worded) == f"{a} * {b} = {stated}"  # quoted as read


def test_a_slip_in_symbols_is_still_quoted_as_written() -> None:
    assert first_slip("7x4=26") == "7 x 4 = 26"
    assert first_slip("seven times four is twenty-eight, then 28 x 2 = 54") == "28 x 2 = 54"
    assert first_slip("seven fours are 28 and 28 doubled is 56") == ""
