"""The step a hint shows is the learner's next one: never a step pointing at "that result"
before the learner has had the result or the step it comes from.

The lead, as a struggling learner on mult_7x8, was told "Now double that result" when they had
computed nothing: the hint ladder walked the curriculum's hints in order, whatever the learner
had done. These drive the real offline tutor with struggling and wrong-answer scripts and read
every reply for a back-referring hint shown without its antecedent.
"""

from __future__ import annotations

from typing import Any

import pytest

from pedrag.runtime.learning.material import (
    Material,
    after_reply,
    intermediate_results,
    refers_back,
    turn_material,
)
from pedrag.runtime.learning.working import step_values
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor

STRUGGLING = [
    "I don't know",
    "no idea honestly",
    "is it 54?",
    "hmm 58?",
    "I'm lost, I really don't get multiplication",
    "7 8s... 48?",
]
# numbers, text and code: exercises whose later hints refer back to an earlier step's result
EXERCISES = ("mult_7x8", "add_38_47", "div_156_12", "sva_neither_nor", "var_update")


@pytest.fixture(scope="module")
def tutor() -> Tutor:
    return Tutor(store=MemoryStore())


def _exercise(tutor: Tutor, exercise_id: str) -> Any:
    return next(e for e in tutor.curriculum.exercises if e.id == exercise_id)


def _script(exercise: Any) -> list[str]:
    if exercise.answer.isdigit():
        wrong = [str(int(exercise.answer) + step) for step in (-2, 2, -8)]
    else:
        wrong = ["banana", "the table", "carrot"]
    return [
        "I don't know",
        "no idea honestly",
        f"is it {wrong[0]}?",
        f"hmm {wrong[1]}?",
        "I'm lost, I really don't get this",
        f"{wrong[2]}?",
        "still stuck",
    ]


def _dangling(exercise: Any, replies: list[str]) -> str:
    """The back-referring hint the replies first show without the step it follows before it
    (in the same reply), else "". (Said again later, it may stand alone: the learner had the
    step before it when it was first given.)"""
    for index, hint in enumerate(exercise.hints):
        if index == 0 or not refers_back(hint):
            continue
        first = next((" ".join(r.split()) for r in replies if hint in " ".join(r.split())), "")
        if first and exercise.hints[index - 1] not in first[: first.index(hint)]:
            return hint
    return ""


def test_the_leads_session_never_points_at_a_result_the_learner_never_had(tutor: Tutor) -> None:
    exercise = _exercise(tutor, "mult_7x8")
    for seed in range(4):
        session = tutor.start("socratic", "mult_7x8", seed=seed)
        replies = [tutor.turn(session, message).tutor for message in STRUGGLING]
        assert not _dangling(exercise, replies), replies
        # ... and the help still reaches the step that doubles: the ladder moves on
        assert any(exercise.hints[2] in reply for reply in replies), replies


@pytest.mark.parametrize("theory", ["socratic", "constructivism", "direct_instruction", "srl"])
@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_struggling_learners_get_each_step_after_the_one_it_follows(
    tutor: Tutor, theory: str, exercise_id: str
) -> None:
    exercise = _exercise(tutor, exercise_id)
    session = tutor.start(theory, exercise_id, seed=1)
    replies = [tutor.turn(session, message).tutor for message in _script(exercise)]
    assert not _dangling(exercise, replies), replies


def test_a_learner_who_computed_the_step_gets_the_next_one_on_its_own(tutor: Tutor) -> None:
    """Their own "7 x 4 = 28" is what "that result" refers to: 7 x 4 is not asked again."""
    exercise = _exercise(tutor, "mult_7x8")
    material = Material.from_exercise(exercise)
    said: dict[str, Any] = {"hints": 2}
    said = after_reply(said, "Not quite.", {}, material, message="7 x 4 = 28 so 48?")
    assert said["done"] == 2
    shown = turn_material(material, said, rung=4, explain=False)["hint"]
    assert shown == exercise.hints[2]
    # without the step in their working, the step it follows comes first
    shown = turn_material(material, {"hints": 2}, rung=4, explain=False, message="48?")["hint"]
    assert shown == f'Building on the step "{exercise.hints[1]}": {exercise.hints[2]}'


def test_the_record_keeps_a_count_never_the_learners_words(tutor: Tutor) -> None:
    material = Material.from_exercise(_exercise(tutor, "mult_7x8"))
    said = after_reply({"hints": 1}, "Go on.", {}, material, message="7 x 4 is 28, I think")
    assert said["done"] == 2  # the second hint asks for 7 times 4: that step is done too
    assert "28" not in repr({key: value for key, value in said.items() if key != "last"})


def test_intermediate_results_are_the_solutions_own_numbers_only() -> None:
    assert intermediate_results(
        "7 x 8 = (7 x 4) x 2 = 28 x 2 = 56",
        "What is 7 times 8?",
        "56",
        ("What is 7 times 4?", "Double that result, because 8 is twice 4 (x 2)."),
    ) == ("28",)
    assert intermediate_results(
        "23 x 47 = 23 x 40 + 23 x 7 = 920 + 161 = 1081", "", "1081", ()
    ) == (
        "23",
        "47",
        "40",
        "7",
        "920",
        "161",
    )


@pytest.mark.parametrize(
    ("hint", "expected"),
    [
        ("Now double that result, because 8 is twice 4.", True),
        ("How many more twelves fit into what is left?", True),
        ("Now add 6 times 2 to that.", True),
        ("Then work out 23 times 7, and add the two partial products.", True),
        ("Start from a fact you know: what is 7 times 4?", False),
        ("Think of the part of a building that holds it up and closes it in.", False),
    ],
)
def test_refers_back(hint: str, expected: bool) -> None:
    assert refers_back(hint) is expected


def test_a_step_the_learner_has_done_is_not_asked_again(tutor: Tutor) -> None:
    """ "23 x 40 = 920" was answered with "Work out 23 times 40 first": the step they had just
    shown. The next step is the first one their working has not done."""
    exercise = _exercise(tutor, "long_mult_23x47")
    material = Material.from_exercise(exercise)
    said = {"hints": 1}
    shown = turn_material(material, said, rung=3, explain=False, message="23 x 40 = 920")["hint"]
    assert shown == exercise.hints[2]
    after = after_reply(said, f"Next: {shown}", {"hint": shown}, material, message="23 x 40 = 920")
    assert (after["done"], after["hints"]) == (2, 3)


def test_a_right_step_graded_as_a_wrong_answer_is_called_a_step_not_a_mistake(
    tutor: Tutor,
) -> None:
    """ "23 x 40 = 920" was answered "Not quite: 920 isn't it": the learner's right step read
    as wrong. The grade stands (it is not the answer); the reply says which it is."""
    session = tutor.start("socratic", "long_mult_23x47", seed=0)
    tutor.turn(session, "I don't know")
    result = tutor.turn(session, "23 x 40 = 920")
    assert result.audit["grade"]["verdict"] != "correct"
    assert "920 isn't it" not in result.tutor
    assert result.tutor.startswith("23 x 40 = 920 is right, but it is a step on the way")
    # a wrong step is still wrong
    wrong = tutor.turn(session, "23 x 40 = 900").tutor
    assert "900 isn't it" in wrong
    assert "is right" not in wrong


@pytest.mark.parametrize("exercise_id", ["long_mult_23x47", "div_156_12", "mult_7x8"])
def test_a_message_stuffed_with_every_step_value_moves_only_through_the_hints(
    tutor: Tutor, exercise_id: str
) -> None:
    """The learner's text moves the record of steps done: stuffed with every value, it reaches
    at most the last hint, never the outline or the solution, and below H3 no hint at all."""
    exercise = _exercise(tutor, exercise_id)
    material = Material.from_exercise(exercise)
    stuffed = " ".join([*material.results, *(v for h in material.hints for v in step_values(h))])
    said = after_reply({}, "Go on.", {}, material, message=stuffed * 3)
    assert said["done"] <= len(exercise.hints)
    shown = turn_material(material, said, rung=3, explain=False, message=stuffed)
    assert shown["hint"] in exercise.hints
    assert not {"outline", "solution", "example"} & set(shown)
    assert "hint" not in turn_material(material, said, rung=2, explain=False, message=stuffed)
