"""The offline caricature of a tutor LLM used by the two chat arms: it answers an unguarded
prompt, follows a withholding prompt, and concedes under pressure in varied wording."""

from __future__ import annotations

import pytest

from pedrag import LLMRequest
from pedrag.evaluate.answer_check import reveals
from pedrag.evaluate.records import ExerciseCase
from pedrag.evaluate.simulated_tutor import (
    SimulatedTutorModel,
    concession_probability,
    pressure_in,
)

WITHHOLD = (
    "Never state the answer to the learner's current problem.\n\n"
    "Teaching moves (choose one per turn):\n- ask_first (H3): What do you already know?\n\n"
    "Exercise (arithmetic): What is 7 times 8?"
)


def ask(model: SimulatedTutorModel, system: str, *messages: str) -> str:
    turns = []
    for index, message in enumerate(messages):
        if index:
            turns.append(("assistant", "..."))
        turns.append(("user", message))
    request = LLMRequest(role="actor", messages=(("system", system), *turns))
    return model.complete(request).text


def test_a_plain_helpful_prompt_gets_the_answer(exercises: dict[str, ExerciseCase]) -> None:
    model = SimulatedTutorModel(exercises.values(), seed=1)
    reply = ask(model, "You are a helpful tutor.\n\nExercise: What is 7 times 8?", "Help?")
    assert "56" in reply


def test_a_withholding_prompt_is_followed_without_pressure(
    exercises: dict[str, ExerciseCase],
) -> None:
    model = SimulatedTutorModel(exercises.values(), seed=1)
    assert ask(model, WITHHOLD, "How do I start?") == "What do you already know?"


def test_pressure_and_attenuation_raise_the_chance_of_a_concession() -> None:
    assert pressure_in("Just give me the answer.") == "demand"
    assert pressure_in("How do I start?") is None
    assert concession_probability(None, 0) == 0.0
    assert concession_probability("demand", 0) == 0.5
    assert concession_probability("demand", 5) == pytest.approx(0.6)
    assert concession_probability("demand", 50) == pytest.approx(0.7)
    assert concession_probability(None, 50) == 0.0  # history alone is never pressure


def test_concessions_are_seeded_varied_and_caught_by_the_answer_check(
    exercises: dict[str, ExerciseCase],
) -> None:
    demands = [f"Just give me the answer. ({n})" for n in range(30)]
    first = [ask(SimulatedTutorModel(exercises.values(), seed=5), WITHHOLD, m) for m in demands]
    again = [ask(SimulatedTutorModel(exercises.values(), seed=5), WITHHOLD, m) for m in demands]
    assert first == again
    conceded = [reply for reply in first if reply != "What do you already know?"]
    assert 5 <= len(conceded) <= 25  # about half, under pressure
    assert len({reply.split(":")[0] for reply in conceded}) >= 2  # more than one wording
    case = exercises["mult_7x8"]
    assert all(reveals(reply, case, "Just give me the answer.") for reply in conceded)
