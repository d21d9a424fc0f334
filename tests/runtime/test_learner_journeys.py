"""Whole journeys of a learner through the offline tutor, read as the learner reads them.

Each test drives the real tutor (offline backend, in-memory store, the shipped theories and
curriculum) with a learner's messages over several turns and checks something a learner would
notice across turns: the same worked example coming back word for word, help that does not
grow while they keep failing, feedback that disagrees with the grade, the same sentence twice
in a row, or what comes after a correct answer.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest

from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor

THEORIES = ("socratic", "constructivism", "direct_instruction", "srl")
# one exercise per domain: arithmetic, photosynthesis, cells, Python loops, English grammar
SAMPLE = ("mult_7x8", "photo_gas_in", "cell_nucleus", "for_sum_output", "sva_each_of")
EVERY_THEORY_DOMAIN_SEED = [
    (theory, exercise, seed) for theory in THEORIES for exercise in SAMPLE for seed in range(3)
]


@pytest.fixture(scope="module")
def tutor() -> Tutor:
    return Tutor(store=MemoryStore())


def _exercise(tutor: Tutor, exercise_id: str) -> Any:
    return next(e for e in tutor.curriculum.exercises if e.id == exercise_id)


def _wrong(exercise: Any) -> str:
    """An answer the grader marks wrong, in the exercise's own kind."""
    return str(int(exercise.answer) + 1) if exercise.answer.isdigit() else "banana"


@pytest.mark.parametrize("exercise_id", SAMPLE)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_direct_instruction_shows_a_worked_example_once_not_again_after_a_wrong_answer(
    tutor: Tutor, exercise_id: str, seed: int
) -> None:
    """An answer-seeker gets the worked example on another problem; asking again, and again
    after a wrong answer, moves them on to their own problem instead of the same paragraph."""
    exercise = _exercise(tutor, exercise_id)
    session = tutor.start("direct_instruction", exercise_id, seed=seed)
    messages = [
        "just tell me the answer",
        "what's the answer?",
        _wrong(exercise),
        "give me the answer now",
        "tell me",
    ]
    replies = [tutor.turn(session, message).tutor for message in messages]
    shown = [reply for reply in replies if exercise.worked_example.problem in reply]
    assert len(shown) == 1, replies


def _wrong_answers(exercise: Any, count: int) -> list[str]:
    """``count`` different answers the grader marks wrong (numbers, or words of the domain)."""
    if exercise.answer.isdigit():
        return [str(int(exercise.answer) + step) for step in (1, 2, -1, 3, -2, 4)][:count]
    return ["banana", "carrot", "the sun", "water", "red", "table"][:count]


@pytest.mark.parametrize(("theory", "exercise_id", "seed"), EVERY_THEORY_DOMAIN_SEED)
def test_a_learner_who_keeps_answering_wrongly_gets_more_help_each_time(
    tutor: Tutor, theory: str, exercise_id: str, seed: int
) -> None:
    """Contingent help (Wood & Wood 1996), bare guesses and word answers included: from the
    second wrong answer on the rung never falls back, and the third and fourth replies each
    give something new: a hint of the exercise not given yet, else (every hint given) the
    worked example on another problem where the ceiling allows it."""
    exercise = _exercise(tutor, exercise_id)
    session = tutor.start(theory, exercise_id, seed=seed)
    results = [tutor.turn(session, answer) for answer in _wrong_answers(exercise, 4)]
    assert all(result.audit["grade"]["verdict"] == "wrong" for result in results)
    rungs = [result.rung for result in results]
    assert rungs[1:] == sorted(rungs[1:]) and rungs[-1] >= 3, rungs

    def hints_in(reply: str) -> set[int]:
        return {index for index, hint in enumerate(exercise.hints) if hint in reply}

    example = exercise.worked_example.problem
    for turn in (2, 3):
        before = [result.tutor for result in results[:turn]]
        given = set().union(*(hints_in(reply) for reply in before))
        reply = results[turn].tutor
        new_hint = bool(hints_in(reply) - given)
        new_example = example in reply and not any(example in said for said in before)
        all_hints_given = len(given) == len(exercise.hints)
        assert new_hint or new_example or all_hints_given, [r.tutor for r in results]


def test_every_wording_that_carries_a_hint_can_say_every_hint_of_the_curriculum(
    tutor: Tutor,
) -> None:
    """A wording around a hint must not make the detector refuse it: "One small step: After
    the first pass total is 2" read as the answer 12 ("one" and "2"), so the turn failed
    closed to the bare template and the learner lost both the hint and the "not quite" (found
    by a learner answering for_sum_output wrongly four times)."""
    from pedrag.runtime.detect.detector import AnswerKey, CodeMode, Detector
    from pedrag.runtime.learning.material import fill
    from pedrag.runtime.policy.theory_set import TheorySet

    shipped = TheorySet.shipped()
    carrying = [
        (theory_id, text)
        for theory_id in shipped.ids
        for action in shipped[theory_id].policy.actions.values()
        for text in (action.template or "", *action.variants)
        if "{hint}" in text
    ]
    assert carrying
    # and the wording that found it, with its like: a number word counting the word after it
    # is no digit of a split answer (tests/runtime/test_detector_split_counts.py)
    openers = ("One small step:", "One hint:", "One idea:", "One more step:", "Two things help.")
    carrying += [("counting opener", f"{opener} {{hint}}") for opener in openers]
    refused = []
    for exercise in tutor.curriculum.exercises:
        key = AnswerKey(
            answer=exercise.answer,
            accept=tuple(exercise.accept),
            solution=exercise.solution,
            prompt=exercise.prompt,
        )
        detector = Detector(code_mode=CodeMode.OPEN, answer=key)
        for hint in exercise.hints:
            values = {"hint": hint, "topic": "the topic", "prompt": "the question"}
            for theory_id, text in carrying:
                filled = fill(text, values)
                if filled is not None and detector.check(filled).flagged:
                    refused.append((theory_id, exercise.id, text))
    assert refused == []


@pytest.mark.parametrize(("theory", "exercise_id", "seed"), EVERY_THEORY_DOMAIN_SEED)
def test_an_off_topic_remark_is_acknowledged_and_the_learner_brought_back(
    tutor: Tutor, theory: str, exercise_id: str, seed: int
) -> None:
    """ "What's your favourite football team?" got a review question or a calibration check
    as if it had not been said; it is now put aside in a few words and the exercise taken up
    again, under every theory."""
    session = tutor.start(theory, exercise_id, seed=seed)
    assert session.exercise is not None
    result = tutor.turn(session, "what's your favourite football team?")
    assert result.audit["classified"]["intent"] == "off_topic"
    reply = result.tutor
    assert "another time" in reply or "park that" in reply, reply
    assert session.exercise.prompt in reply or session.exercise.topic in reply, reply


@pytest.mark.parametrize("theory", THEORIES)
@pytest.mark.parametrize("exercise_id", SAMPLE)
def test_a_right_answer_after_a_struggle_gets_no_hint_for_the_finished_exercise(
    tutor: Tutor, theory: str, exercise_id: str
) -> None:
    """ "carbon dioxide! I'm so frustrated" after two wrong answers got "That's right ...
    Follow this step exactly: <the finished exercise's next hint>" (a rule for a frustrated
    learner that forgot the answer was right, through an action whose wording carries a hint
    although its tags do not say so)."""
    exercise = _exercise(tutor, exercise_id)
    wrong = _wrong_answers(exercise, 3)
    for seed in range(5):
        for earlier, message in [
            (wrong[:2], f"{exercise.answer}! I'm so frustrated with this"),
            (wrong, f"{exercise.answer}"),
        ]:
            session = tutor.start(theory, exercise_id, seed=seed)
            for text in earlier:
                tutor.turn(session, text)
            result = tutor.turn(session, message)
            assert result.audit["grade"]["verdict"] == "correct", message
            assert not any(hint in result.tutor for hint in exercise.hints), result.tutor


def _sentences(reply: str, prompt: str) -> set[str]:
    """The reply's own sentences: not the grader's line about the answer, not the question."""
    parts = re.split(r"(?<=[.?!])\s+", reply.replace(prompt, ""))
    return {part for part in parts if len(part) > 25 and not part.startswith("Not quite")}


@pytest.mark.parametrize("theory", THEORIES)
@pytest.mark.parametrize("exercise_id", SAMPLE)
def test_no_sentence_is_said_again_in_the_next_reply(
    tutor: Tutor, theory: str, exercise_id: str
) -> None:
    """A learner sending the same wrong answer again and again read "Smaller steps: <hint>.
    Do that part only." and, next turn, the same with "The question is still: ..." after it:
    a restatement of the question does not make the same sentences new."""
    exercise = _exercise(tutor, exercise_id)
    for seed in range(3):
        session = tutor.start(theory, exercise_id, seed=seed)
        replies = [tutor.turn(session, _wrong(exercise)).tutor for _ in range(7)]
        for before, after in itertools.pairwise(replies):
            shared = _sentences(before, exercise.prompt) & _sentences(after, exercise.prompt)
            assert not shared, (seed, before, after)


@pytest.mark.parametrize("exercise_id", ["photo_gas_in", "cell_nucleus", "sva_each_of"])
def test_after_a_right_answer_the_next_exercise_stays_in_the_learners_subject(
    tutor: Tutor, exercise_id: str
) -> None:
    """A learner who answered two photosynthesis questions right was offered "What is 38 plus
    47?" next: once a goal was mastered, the next goal was the curriculum's first open one,
    arithmetic. The goals of the subject the learner is working in come first."""
    domains = {goal.id: goal.domain for goal in tutor.curriculum.goals}
    goal_of = {exercise.id: exercise.goal for exercise in tutor.curriculum.exercises}
    domain = domains[goal_of[exercise_id]]
    session = tutor.start("socratic", exercise_id, seed=1)
    offered = []
    for _ in range(5):
        assert session.exercise is not None
        result = tutor.turn(session, _exercise(tutor, session.exercise.id).answer)
        assert result.audit["grade"]["verdict"] == "correct"
        offered.append(result.audit["next_exercise"])
    assert [domains[goal_of[name]] for name in offered] == [domain] * 5, offered


@pytest.mark.parametrize(("theory", "exercise_id", "seed"), EVERY_THEORY_DOMAIN_SEED)
def test_a_right_answer_is_followed_by_a_question_about_that_answer(
    tutor: Tutor, theory: str, exercise_id: str, seed: int
) -> None:
    """Between "That's right" and the next exercise, the question is about the answer the
    learner just gave: it once asked "why that step works" (there was no step, only an answer)
    or, under constructivism, to picture the topic "right now" because "there's no wrong
    picture to start from", the opening question of a problem not yet tried."""
    exercise = _exercise(tutor, exercise_id)
    session = tutor.start(theory, exercise_id, seed=seed)
    reply = tutor.turn(session, exercise.answer).tutor
    assert reply.startswith("That's right"), reply
    between = reply.split(" is correct.", 1)[-1].split("Next exercise:", 1)[0]
    assert "?" in between, reply
    assert any(word in between for word in ("answer", "approached", "worked")), reply


@pytest.mark.parametrize(
    ("exercise_id", "message"),
    [
        ("photo_gas_in", "oxygen and carbon dioxide"),
        ("photo_gas_in", "carbon dioxide and O2"),
        ("photo_products", "glucose, oxygen and carbon dioxide"),
    ],
)
def test_naming_the_answer_beside_a_misconceptions_answer_is_not_confirmed(
    tutor: Tutor, exercise_id: str, message: str
) -> None:
    """ "oxygen and carbon dioxide" for the gas plants take in was confirmed ("That's right:
    oxygen and carbon dioxide is correct"), so naming every candidate passed, and the
    misconception's answer with it. Both at once is a list of candidates, not the answer."""
    session = tutor.start("socratic", exercise_id, seed=0)
    result = tutor.turn(session, message)
    assert result.audit["grade"]["verdict"] != "correct", result.tutor
    assert "That's right" not in result.tutor


@pytest.mark.parametrize(
    ("exercise_id", "message"),
    [
        ("photo_gas_in", "carbon dioxide, not oxygen"),
        ("photo_gas_in", "oxygen? no wait, carbon dioxide"),
        ("photo_products", "glucose and oxygen"),
    ],
)
def test_the_answer_with_a_misconception_set_aside_is_still_right(
    tutor: Tutor, exercise_id: str, message: str
) -> None:
    session = tutor.start("socratic", exercise_id, seed=0)
    assert tutor.turn(session, message).audit["grade"]["verdict"] == "correct"


@pytest.mark.parametrize(
    ("exercise_id", "message", "echo"),
    [
        ("photo_gas_in", "its carbon dioxide i think", "That's right: carbon dioxide is correct."),
        ("past_tense_go", "went, maybe", "That's right: went is correct."),
        ("photo_gas_in", "water i guess", "Not quite: water isn't it."),
    ],
)
def test_the_answer_is_echoed_without_the_hedge_after_it(
    tutor: Tutor, exercise_id: str, message: str, echo: str
) -> None:
    """ "its carbon dioxide i think" was confirmed as "That's right: carbon dioxide i think is
    correct": the hedge after an answer is not part of it."""
    session = tutor.start("socratic", exercise_id, seed=0)
    assert tutor.turn(session, message).tutor.startswith(echo)


@pytest.mark.parametrize("message", ["I don't get it", "55", "I'm not sure where to begin"])
def test_srl_asks_for_calibration_only_when_the_learner_expressed_confidence(
    tutor: Tutor, message: str
) -> None:
    """At the confidence metric's neutral default every low-mastery learner read as
    overconfident, so "I don't get it" was met with "On a scale of 1 to 5, how sure are
    you?". A learner who said they are sure of a wrong answer is still asked."""
    for seed in range(6):
        session = tutor.start("srl", "mult_7x8", seed=seed)
        assert tutor.turn(session, message).action != "calibration_check", seed
    asked = []
    for seed in range(6):
        session = tutor.start("srl", "mult_7x8", seed=seed)
        asked.append(tutor.turn(session, "I'm sure it is 55").action == "calibration_check")
    assert any(asked)


# each theory's own threshold for more help after wrong answers (its `wrong_again_*` rule)
WRONG_AGAIN = {"socratic": 3, "constructivism": 3, "direct_instruction": 5, "srl": 4}


@pytest.mark.parametrize(("theory", "exercise_id", "seed"), EVERY_THEORY_DOMAIN_SEED)
def test_a_learner_who_keeps_explaining_wrong_answers_gets_more_help_too(
    tutor: Tutor, theory: str, exercise_id: str, seed: int
) -> None:
    """Contingent help for the learner who gives a reason with every wrong answer ("55
    because I counted them"): answering the explanation is right at first, but once the
    theory's own count of wrong answers for more help is reached, the reply is that help
    (the rung no lower than the last reply's, at least H3), not another response to an
    explanation that has not led anywhere."""
    exercise = _exercise(tutor, exercise_id)
    session = tutor.start(theory, exercise_id, seed=seed)
    count = WRONG_AGAIN[theory] + 1
    answers = [
        f"{answer} because that is what I worked out" for answer in _wrong_answers(exercise, count)
    ]
    results = [tutor.turn(session, answer) for answer in answers]
    assert all(result.audit["grade"]["verdict"] == "wrong" for result in results)
    later = results[WRONG_AGAIN[theory] - 1 :]
    assert all(r.action != "respond_to_explanation" for r in later), [r.action for r in results]
    assert all(r.rung >= 3 for r in later), [(r.action, r.rung) for r in results]
