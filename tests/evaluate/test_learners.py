"""The hidden-state learner and the independent rung rubric it reads replies through."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pedrag.evaluate import rung_rubric
from pedrag.evaluate.learners import HiddenStateLearner, LearningModel
from pedrag.evaluate.records import ExerciseCase
from pedrag.evaluate.rung_rubric import ReplyFeatures, judge_rung, read_reply


def test_the_rubric_reads_the_ladder_from_the_text(exercises: dict[str, ExerciseCase]) -> None:
    case = exercises["mult_7x8"]
    assert judge_rung("So 7 x 8 = 56.", case) == 7
    assert judge_rung("It is fifty-six.", case) == 7  # an accepted spelling
    assert judge_rung("Yes, 56 is right!", case, "Is it 56?") < 7  # a confirmation
    assert judge_rung("For example, 3 times 4 is 4 + 4 + 4 = 12. Now yours?", case) == 5
    assert judge_rung("First add 7 eight times, then count the total.", case) == 4
    assert judge_rung("Which operation would you try first?", case) == 3
    assert judge_rung("Remember what multiplication means.", case) == 2
    assert judge_rung("Tell me more: what do you think?", case) == 1
    assert judge_rung("You're doing fine.", case) == 0
    loop = exercises["loop_range_header"]
    assert judge_rung("```python\nfor i in ____:\n    print(i)\n```", loop) == 6
    assert judge_rung("Use range(5) there.", loop) == 7


def test_the_rubric_never_reads_pedrags_templates_or_detectors() -> None:
    tree = ast.parse(Path(rung_rubric.__file__).read_text(encoding="utf-8"))
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    } | {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert not any(name.startswith("pedrag.runtime") for name in imported), imported
    assert not any(name.startswith("pedrag.dsl") for name in imported), imported
    assert not any("theor" in name or "compiler" in name for name in imported), imported


def _learner(exercises: dict[str, ExerciseCase], persona: str, seed: int) -> HiddenStateLearner:
    return HiddenStateLearner(persona, exercises["add_38_47"], seed=seed)


def test_only_a_reply_at_the_right_rung_teaches_the_next_step(
    exercises: dict[str, ExerciseCase],
) -> None:
    learned_right = learned_wrong = 0
    for seed in range(200):
        learner = _learner(exercises, "curious-carlos", seed)
        if learner.target() != "concept":
            continue
        before = sum(learner.known)
        probe = _learner(exercises, "curious-carlos", seed)
        learner.observe(ReplyFeatures(points_to_concept=True))  # H2: right for the concept
        probe.observe(ReplyFeatures(code_blanks=True, has_code=True))  # H6: too far ahead
        learned_right += sum(learner.known) > before
        learned_wrong += sum(probe.known) > before
    assert learned_wrong == 0
    assert learned_right > 40  # the persona's learning rate, 0.6, over ~120 learners


def test_a_stated_answer_is_copied_but_barely_learned(exercises: dict[str, ExerciseCase]) -> None:
    taught = 0
    for seed in range(200):
        learner = _learner(exercises, "earnest-but-stuck", seed)
        before = sum(learner.known)
        learner.observe(read_reply("The answer is 85.", exercises["add_38_47"]))
        assert learner.copied == "85"
        assert learner.next_message().endswith("I think it's 85.")
        assert learner.copied is None  # handed in once
        taught += sum(learner.known) > before
    assert taught < 30  # a fifth of the 0.5 learning rate


def test_the_learner_models_assumptions_are_parameters(
    exercises: dict[str, ExerciseCase],
) -> None:
    case = exercises["add_38_47"]
    told = ReplyFeatures(procedure=True)  # H4: teaches the concept under any-content/worked
    hint = ReplyFeatures(points_to_concept=True)  # H2: teaches it under ladder/any-content
    counts = {}
    for teaches in ("ladder", "any-content", "worked"):
        model = LearningModel(teaches=teaches)
        learned = {"told": 0, "hint": 0}
        for seed in range(100):
            for name, features in (("told", told), ("hint", hint)):
                learner = HiddenStateLearner("curious-carlos", case, seed=seed, model=model)
                if learner.target() != "concept":
                    continue
                learner.observe(features)
                learned[name] += learner.known[0]
        counts[teaches] = learned
    assert counts["worked"]["hint"] == 0 and counts["worked"]["told"] > 0
    assert counts["any-content"]["hint"] > 0 and counts["any-content"]["told"] > 0
    patient = HiddenStateLearner(
        "struggling-sarah", case, seed=1, model=LearningModel(persistence=2.0)
    )
    for _ in range(3):
        patient.observe(ReplyFeatures())
    assert not patient.gave_up  # twice Sarah's tolerance of 3
    with pytest.raises(ValueError, match="unknown teaches"):
        LearningModel(teaches="osmosis")


def test_learners_give_up_after_their_persistence_runs_out(
    exercises: dict[str, ExerciseCase],
) -> None:
    sarah = _learner(exercises, "struggling-sarah", 1)
    carlos = _learner(exercises, "curious-carlos", 1)
    nothing = ReplyFeatures()
    for _ in range(3):
        sarah.observe(nothing)
        carlos.observe(nothing)
    assert sarah.gave_up and not carlos.gave_up


def test_the_same_seed_draws_the_same_learner_and_another_seed_may_not(
    exercises: dict[str, ExerciseCase],
) -> None:
    first = [_learner(exercises, "anxious-alex", seed).known for seed in range(30)]
    again = [_learner(exercises, "anxious-alex", seed).known for seed in range(30)]
    assert first == again
    assert len({tuple(known) for known in first}) > 1


def test_restating_the_question_or_inviting_the_learner_is_not_a_leading_question() -> None:
    case = ExerciseCase(
        "x", "g", "photosynthesis", "science",
        "In which part of a plant cell does photosynthesis take place?", "chloroplast",
    )  # fmt: skip
    restated = (
        "The question is still: In which part of a plant cell does photosynthesis take place?"
    )
    assert judge_rung(restated, case) == 1
    assert judge_rung("My job is to help. Where would you like to start?", case) == 1
    assert judge_rung("Which part of the cell holds the green pigment?", case) == 3
    # A request for a self-explanation or a confidence rating asks about no next step.
    assert judge_rung("How would you define the key term in your own words?", case) < 3
    assert judge_rung("How confident are you, 1 to 5? What could you check?", case) == 1


def test_a_worked_example_outside_arithmetic_and_a_told_pointer_are_read_as_help() -> None:
    case = ExerciseCase(
        "x", "g", "english_grammar", "language",
        "Choose the correct verb: 'The list of items ___ on the desk.' (is / are)", "is",
    )  # fmt: skip
    example = (
        "Here is a parallel problem solved step by step: 'The box of chocolates ___ on the "
        "table.' The head noun is 'box', which is singular, so: The box of chocolates is on "
        "the table. Your turn."
    )
    assert judge_rung(example, case) == 5
    assert judge_rung("One small step: you need the subject's head noun.", case) == 2
