"""The curriculum content model (issue 27): restatements, goal concepts, misconceptions with the
answers and patterns that signal them, and the shipped curriculum's coverage of it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pedrag.dsl.loader import load_text
from pedrag.kernel.misconceptions import Signals, first_signalled

ROOT = Path(__file__).resolve().parents[2]

_BASE = """\
pedrag: 1
kind: curriculum
id: c
goals:
  - {id: times, domain: mathematics, topic: arithmetic, concept: "Equal groups."}
exercises:
  - id: mult_7x8
    goal: times
    prompt: What is 7 times 8?
    answer: "56"
    restatement: "7 rows of 8 chairs: how many chairs?"
    misconceptions:
      - "Mixing up neighbouring facts."
      - {text: "Adding instead of multiplying.", answers: ["15"], patterns: ['PATTERN']}
"""


def test_a_misconception_is_a_bare_text_or_a_text_with_its_signals() -> None:
    loaded = load_text(_BASE.replace("PATTERN", r"\b7\s*\+\s*8\b"), "c.yaml")
    assert loaded.ok, [d.message for d in loaded.diagnostics]
    model = loaded.model
    assert model is not None and model.goals[0].concept == "Equal groups."
    exercise = model.exercises[0]
    assert exercise.restatement == "7 rows of 8 chairs: how many chairs?"
    bare, signalled = exercise.misconceptions
    assert bare.text == "Mixing up neighbouring facts." and not bare.signals
    assert signalled.signals.matched_by("I added them: 7 + 8") == r"\b7\s*\+\s*8\b"
    assert signalled.signals.matched_by("it's 15") == "15"
    assert signalled.signals.matched_by("it's 156 or 1.5") is None  # whole numbers only


def test_a_pattern_that_is_not_a_regular_expression_is_a_clear_error() -> None:
    loaded = load_text(_BASE.replace("PATTERN", "(unclosed"), "c.yaml")
    assert not loaded.ok
    assert any("`(unclosed` is not a regular expression" in d.message for d in loaded.diagnostics)


def test_the_first_signalled_misconception_wins() -> None:
    signals = [Signals(answers=("49",)), Signals(patterns=(r"\badd",)), Signals(answers=("15",))]
    assert first_signalled(signals, "I added them and got 15") == 1
    assert first_signalled(signals, "49?") == 0
    assert first_signalled(signals, "56") is None


def test_the_shipped_curriculum_carries_the_content_for_every_goal_and_exercise() -> None:
    loaded = load_text(
        (ROOT / "theories" / "curriculum.yaml").read_text("utf-8"), "curriculum.yaml"
    )
    assert loaded.ok and loaded.model is not None
    model = loaded.model
    per_goal = Counter(exercise.goal for exercise in model.exercises)
    assert min(per_goal[goal.id] for goal in model.goals) >= 3, per_goal
    assert all(goal.concept for goal in model.goals)
    for exercise in model.exercises:
        assert exercise.restatement and len(exercise.hints) >= 3, exercise.id
        assert exercise.worked_example is not None and exercise.misconceptions, exercise.id
    signalled = sum(bool(m.signals) for e in model.exercises for m in e.misconceptions)
    assert signalled >= len(model.exercises)  # most misconceptions say what signals them
