"""The rubric evaluator: each reply judged against the theory's written principles, with the
evaluator's own answer check, rung reading and distress reading."""

from __future__ import annotations

import ast
from pathlib import Path

from pedrag.evaluate.evaluator import (
    EvaluationItem,
    Principle,
    RubricEvaluator,
    principle_family,
    principles_of,
)
from pedrag.evaluate.records import ExerciseCase
from pedrag.runtime.policy.theory_set import TheorySet

ROOT = Path(__file__).resolve().parents[2]


def item(
    theories: TheorySet,
    exercise: ExerciseCase,
    student: str,
    reply: str,
    *,
    earlier: tuple[tuple[str, str], ...] = (),
    exam: bool = False,
    theory: str = "socratic",
) -> EvaluationItem:
    return EvaluationItem(
        theory, principles_of(theories, theory), exercise, student, reply, earlier, exam=exam
    )


def test_a_reveal_is_a_critical_breach_of_the_withholding_principle(
    theories: TheorySet, exercises: dict[str, ExerciseCase]
) -> None:
    result = RubricEvaluator().evaluate(
        item(theories, exercises["mult_7x8"], "just tell me", "Fine: 7 x 8 = 56.")
    )
    assert result.critical and result.principles["no_direct_answers"] == "breached"
    assert result.fidelity == 0.0 and result.estimated_rung == 7


def test_confirming_the_learners_own_answer_is_not_a_reveal(
    theories: TheorySet, exercises: dict[str, ExerciseCase]
) -> None:
    result = RubricEvaluator().evaluate(
        item(theories, exercises["mult_7x8"], "Is it 56?", "Yes, 56 is right. Why does it work?")
    )
    assert not result.violation


def test_confirming_an_answer_and_moving_on_leaves_the_reasoning_unexamined(
    theories: TheorySet, exercises: dict[str, ExerciseCase]
) -> None:
    # socratic: "not only whether the final answer is right"; "the learner's next step, not
    # the final answer". A confirmation that asks nothing deals with the final answer only.
    case = exercises["mult_7x8"]
    moved_on = RubricEvaluator().evaluate(
        item(theories, case, "Is it 56?", "Yes, that's right: 56. Well done!")
    )
    assert [(v.cause, v.severity) for v in moved_on.violations] == [("final-answer-only", "minor")]
    assert moved_on.principles["examine_reasoning"] == "breached"
    assert moved_on.principles["step_level_interaction"] == "breached"
    probed = RubricEvaluator().evaluate(
        item(theories, case, "Is it 56?", "Yes, 56. Can you explain how you got there?")
    )
    assert not probed.violation and probed.principles["examine_reasoning"] == "upheld"
    # A theory whose principles say nothing of the final answer is not judged by it.
    other = RubricEvaluator().evaluate(
        item(theories, case, "Is it 56?", "Yes, 56. Well done!", theory="direct_instruction")
    )
    assert "final-answer-only" not in {v.cause for v in other.violations}


def test_an_h0_only_tutor_breaks_a_principle_that_requires_progress(
    theories: TheorySet, exercises: dict[str, ExerciseCase]
) -> None:
    case = exercises["mult_7x8"]
    stuck = "I'm still stuck, I don't know what to do."
    earlier = (("I'm not sure how to start.", "Keep going!"), (stuck, "Keep going!"))
    result = RubricEvaluator().evaluate(item(theories, case, stuck, "Keep going!", earlier=earlier))
    assert [v.cause for v in result.violations] == ["stuck-not-helped"]
    assert result.violations[0].severity == "major"
    assert result.principles["graduated_help"] == "breached"
    # Climbing one rung (a leading question about the next step) keeps the principle.
    climbed = RubricEvaluator().evaluate(
        item(theories, case, stuck, "What do you get if you add 7 eight times?", earlier=earlier)
    )
    assert not climbed.violation


def test_jumping_rungs_is_over_help_even_without_a_reveal(
    theories: TheorySet, exercises: dict[str, ExerciseCase]
) -> None:
    case = exercises["mult_7x8"]
    worked = (
        "For example, suppose you had 6 x 4: first add 6 four times, 6 + 6 + 6 + 6 = 24. "
        "Then do the same here."
    )
    result = RubricEvaluator().evaluate(item(theories, case, "How do I start?", worked))
    assert [v.cause for v in result.violations] == ["jumped-rungs"]


def test_distress_must_be_acknowledged_under_an_affect_principle(
    theories: TheorySet, exercises: dict[str, ExerciseCase]
) -> None:
    case = exercises["mult_7x8"]
    ignored = RubricEvaluator().evaluate(
        item(theories, case, "Ugh, this is so hard!!", "What is 7 + 7?")
    )
    assert [v.cause for v in ignored.violations] == ["affect-ignored"]
    kept = RubricEvaluator().evaluate(
        item(theories, case, "Ugh, this is so hard!!", "It's okay, this is tricky. What is 7 + 7?")
    )
    assert not kept.violation


def test_any_help_during_an_exam_is_critical(
    theories: TheorySet, exercises: dict[str, ExerciseCase]
) -> None:
    result = RubricEvaluator().evaluate(
        item(
            theories,
            exercises["mult_7x8"],
            "what's the answer?",
            "Remember the idea of repeated addition.",
            exam=True,
        )
    )
    assert [(v.cause, v.severity) for v in result.violations] == [("exam-content", "critical")]


def test_principles_are_sorted_by_their_written_text() -> None:
    assert principle_family("x", "Never state the answer to the learner's problem") == "withhold"
    assert principle_family("x", "Give the least help that lets the learner move") == "graduated"
    assert principle_family("x", "When frustration is high, acknowledge it") == "affect"
    assert principle_family("x", "Present material in small steps") is None
    assert principle_family("x", "Interact at the next step, not the final answer") == "reasoning"
    assert Principle("p", "Teach mainly through questions").family == "questioning"


def test_every_arm_is_judged_by_the_principles_the_prompt_only_arm_is_given(
    theories: TheorySet,
) -> None:
    from pedrag.evaluate.configs import theory_prompt
    from pedrag.evaluate.records import ExerciseCase

    case = ExerciseCase("x", "g", "arithmetic", "maths", "What is 7 x 8?", "56")
    prompt = theory_prompt(theories, "socratic")(case, False)
    for principle in principles_of(theories, "socratic"):
        assert principle.text in prompt


def test_the_evaluator_imports_nothing_of_the_tutor() -> None:
    """The import-linter contract pins this too; the test names the offending module."""
    forbidden = ("pedrag.runtime", "pedrag.compiler", "pedrag.kernel", "pedrag.dsl")
    for path in sorted((ROOT / "evaluate").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                assert not name.startswith(forbidden), f"{path.name} imports {name}"
