"""Outcomes the tutor cannot grade itself on: BHR and G1 for a tutor that always reveals,
post-test mastery for a tutor that never helps, and mastery as graded post-test answers only."""

from __future__ import annotations

from typing import Any

import pytest

from pedrag.evaluate import gates, metrics
from pedrag.evaluate.answer_check import is_correct
from pedrag.evaluate.records import ExerciseCase, TutorTurn
from pedrag.evaluate.run import Grid, held_out, run_grid
from pedrag.runtime.policy.theory_set import TheorySet

SEED1 = ("struggling-sarah", "curious-carlos", "anxious-alex", "earnest-but-stuck")
TOPICS = ("add_38_47", "photo_organelle", "loop_range_header", "sva_list_of_items")


class ScriptedTutor:
    """A tutor configuration that replies with ``line(exercise)`` every turn."""

    supervised = False

    def __init__(self, name: str, line: Any) -> None:
        self.name = name
        self._line = line

    def start(self, exercise: ExerciseCase, *, seed: int, exam: bool, session_id: str) -> Any:
        return exercise

    def turn(self, session: Any, text: str) -> TutorTurn:
        return TutorTurn(reply=self._line(session), theory="socratic")


def always_reveals() -> ScriptedTutor:
    return ScriptedTutor("baseline", lambda case: f"The answer is {case.answer}.")


def never_helps() -> ScriptedTutor:
    return ScriptedTutor("prompt_only", lambda case: "Keep going, you can do it.")


@pytest.mark.parametrize(
    ("personas", "turns"),
    [
        (SEED1, 6),
        # The grid on which the always-reveal tutor used to rank above pedrag by BHR: stuck
        # learners, whose copied answer it confirmed with no question counted as a clean turn.
        (("earnest-but-stuck", "struggling-sarah"), 8),
    ],
)
def test_a_tutor_that_always_reveals_ranks_below_pedrag_and_fails_g1(
    theories: TheorySet, curriculum: Any, personas: tuple[str, ...], turns: int
) -> None:
    grid = Grid(
        configs=("baseline", "pedrag"),
        personas=personas,
        exercises=TOPICS,
        reps=2,
        turns=turns,
        exam_probe=False,
    )
    result = run_grid(grid, theories, curriculum, tutors={"baseline": always_reveals()})
    summaries = metrics.by_config(result.sessions)
    summary, pedrag = summaries["baseline"], summaries["pedrag"]
    assert summary.evaluated > 0 and summary.bhr is not None and pedrag.bhr is not None
    # Every reply either states the answer (critical) or, to a learner handing the copy in,
    # confirms it and asks about no reasoning (socratic: "not only whether the final answer
    # is right"): every turn breaks a principle.
    assert summary.bhr == 1.0
    assert summary.critical_rate is not None and 0.4 <= summary.critical_rate < summary.bhr
    # Ranked by BHR and by what each reply gives away: the real tutor reveals nothing.
    assert pedrag.bhr < summary.bhr
    assert pedrag.critical_rate is not None and pedrag.critical_rate < 0.05 < summary.critical_rate
    g1 = gates.gate_g1([s for s in result.sessions if s.config == "baseline"])
    assert g1.status == "fail" and g1.value is not None and g1.value >= summary.critical
    # Practice looks perfect (the learner copies the answer) while the post-test does not,
    # and copying does not end the session (equal sessions for every arm).
    assert summary.practice_rate is not None and summary.practice_rate >= 0.9
    assert summary.mastery_rate is not None and summary.mastery_rate < 0.3
    copied = [s for s in result.sessions if s.config == "baseline" and s.solved_turn == 2]
    assert copied and all(len(s.turns) > 2 or s.end != "turn-limit" for s in copied)


def test_a_tutor_that_never_helps_gets_mastery_near_zero(
    theories: TheorySet, curriculum: Any
) -> None:
    grid = Grid(
        configs=("prompt_only",), personas=SEED1, exercises=TOPICS, reps=5, exam_probe=False
    )
    result = run_grid(grid, theories, curriculum, tutors={"prompt_only": never_helps()})
    summary = metrics.by_config(result.sessions)["prompt_only"]
    assert summary.sessions == 80
    assert summary.mastery_rate is not None and summary.mastery_rate <= 0.1
    # Unhelped learners give up (seed 1: sessions end on give-up) rather than run to the limit.
    assert sum(s.gave_up for s in result.sessions) >= 60
    # H0 only, on a theory whose principles require progress (socratic: graduated_help):
    # the rubric counts the stuck learner left unhelped.
    assert summary.bhr is not None and summary.bhr > 0


def test_mastery_counts_only_graded_correct_post_test_answers(
    theories: TheorySet, curriculum: Any, exercises: dict[str, ExerciseCase]
) -> None:
    grid = Grid(
        configs=("pedrag", "baseline"), personas=SEED1, exercises=TOPICS, reps=1, exam_probe=False
    )
    result = run_grid(grid, theories, curriculum)
    sessions = result.sessions
    assert sessions and all(s.post_tested for s in sessions)
    for session in sessions:
        item = exercises[session.post_exercise or ""]
        assert item.id != session.exercise and item.goal == exercises[session.exercise].goal
        assert session.mastery_reached == is_correct(session.post_answer or "", item)
    summary = metrics.by_config(sessions)
    for config in ("pedrag", "baseline"):
        chosen = [s for s in sessions if s.config == config]
        correct = sum(s.post_verdict == "correct" for s in chosen)
        assert summary[config].mastered == correct
    # Solving the session's own exercise is not mastery: the baseline's learners copy its
    # answer and many still fail the held-out item.
    copied = [s for s in sessions if s.config == "baseline" and s.solved_turn is not None]
    assert copied and any(not s.mastery_reached for s in copied)


def test_the_post_test_item_is_another_exercise_of_the_same_goal(
    exercises: dict[str, ExerciseCase],
) -> None:
    item = held_out(exercises["add_38_47"], exercises)
    assert item is not None and item.id == "add_27_56"
    other = held_out(exercises["mult_7x8"], exercises)
    assert other is not None and other.goal == "multiplication_facts" and other.id != "mult_7x8"
    alone = {"mult_7x8": exercises["mult_7x8"]}
    assert held_out(exercises["mult_7x8"], alone) is None  # the only one of its goal
