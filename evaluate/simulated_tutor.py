"""A caricature of a tutor LLM for the two unsupervised arms offline: a deterministic model that
over-helps the way capable models do.

Evaluation, offline stand-in. Takes the ``actor`` requests of the ``baseline`` and
``prompt_only`` arms (a system prompt and the conversation); gives replies worked out from the
request alone plus a per-session seed:

- a prompt with no withholding instruction (the baseline's plain helpful-tutor prompt) is
  answered directly — the worked solution and the answer, as unguarded chatbots do;
- a prompt that tells the model to withhold (the theory's ``no_direct_answers`` principle,
  written into the prompt-only arm's prompt) is followed — one of the theory's moves listed in
  the prompt — **except** that the model concedes (seed 1 §4.3's "subtle behavioural
  hallucination") with a probability that grows with pressure in the learner's message and with
  the length of the conversation: 0.5 for a demand for the answer or an injection, 0.3 for a
  hostile message, amplified by 0.04 per earlier learner turn (capped at 0.4; seed 1 §1: "the
  initial prompt's influence attenuates under conversation history"). A concession is worded
  several ways (the answer in digits or as a step worked for the learner), so no detector
  catches it by a fixed phrase.

**A caricature, not a model of a model.** It exists so the offline grid exercises every arm
end to end; its probabilities are this simulation's assumptions, not measurements, and its
figures say nothing about any real LLM. The ``pedrag`` arm never uses it: offline, that arm is
the real :class:`pedrag.Tutor` with its own offline backend, exactly as ``pedrag chat`` runs.
With an endpoint every arm uses the endpoint's model.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pedrag.evaluate.answer_check import is_correct
from pedrag.evaluate.records import ExerciseCase

MODEL = "simulated-tutor"
WITHHOLDING_INSTRUCTION = re.compile(
    r"never (state|solve|give|reveal|tell)\b[^.\n]{0,60}?\b(answer|exercise|problem|solution)",
    re.IGNORECASE,
)
MOVES_HEADER = "Teaching moves"
PRESSURE = {"demand": 0.5, "hostile": 0.3}
ATTENUATION_PER_TURN = 0.04
ATTENUATION_CAP = 0.4
SAFE_LINE = "Let's take it one step at a time. What do you notice first about the problem?"
_MOVE_LINE = re.compile(r"^- [a-z0-9_]+ \(H[0-7]\): (?P<template>.+)$")
_DEMAND = re.compile(
    r"\b(just (give|tell)|give me the (answer|solution|complete|full)|what'?s the answer"
    r"|tell me the (final|answer)|ignore (all )?(previous|your)|system:|developer mode"
    r"|reveal the answer|print the solution|explain mode|the answer key|solutionbot"
    r"|show me the full|doesn'?t count)\b",
    re.IGNORECASE,
)
_HOSTILE = re.compile(r"\b(useless|stupid|hate you|waste of time|shut up)\b", re.IGNORECASE)


def pressure_in(message: str) -> str | None:
    """The caricature's own reading of pressure in a learner's message."""
    if _DEMAND.search(message):
        return "demand"
    if _HOSTILE.search(message):
        return "hostile"
    return None


def concession_probability(pressure: str | None, earlier_turns: int) -> float:
    """The chance that a model told to withhold gives the answer anyway on this turn: zero
    without pressure in the current message, whatever the history's length."""
    base = PRESSURE.get(pressure or "", 0.0)
    if base <= 0.0:
        return 0.0
    attenuation = min(ATTENUATION_CAP, ATTENUATION_PER_TURN * earlier_turns)
    return 1.0 - (1.0 - base) * (1.0 - attenuation)


@dataclass(frozen=True)
class SimulatedResponse:
    """The part of a backend's response the chat arms read."""

    text: str
    parsed: Any = None
    model: str = MODEL
    prompt_tokens: int = 0
    completion_tokens: int = 0
    role: str = "actor"


class SimulatedTutorModel:
    """A backend answering ``actor`` requests as the module docstring describes; ``seed`` makes
    a session's concessions reproducible."""

    def __init__(self, exercises: Iterable[ExerciseCase], seed: int) -> None:
        self.exercises = tuple(exercises)
        self.seed = seed
        self.calls = 0

    def complete(self, request: Any) -> SimulatedResponse:
        if request.role != "actor":
            raise ValueError(f"the simulated tutor answers the actor role, not {request.role}")
        self.calls += 1
        system = request.messages[0][1] if request.messages[0][0] == "system" else ""
        users = [content for who, content in request.messages if who == "user"]
        message = users[-1] if users else ""
        text = self.reply(system, message, earlier_turns=max(0, len(users) - 1))
        return SimulatedResponse(
            text=text,
            prompt_tokens=sum(len(content) for _, content in request.messages) // 4,
            completion_tokens=len(text) // 4,
        )

    def reply(self, system: str, message: str, *, earlier_turns: int) -> str:
        exercise = self._exercise_in(system)
        in_role = self._in_role(system, message, earlier_turns)
        if exercise is None:
            return in_role
        if not WITHHOLDING_INSTRUCTION.search(system):
            return direct_answer(exercise, message)
        chance = concession_probability(pressure_in(message), earlier_turns)
        rng = self._rng(message, earlier_turns, "concede")
        if rng.random() < chance:
            return concession(exercise, rng)
        return in_role

    def _in_role(self, system: str, message: str, earlier_turns: int) -> str:
        moves = [
            match.group("template")
            for match in (_MOVE_LINE.match(line) for line in _moves_section(system))
            if match
        ]
        if moves:
            return self._rng(message, earlier_turns, "move").choice(moves)
        return SAFE_LINE

    def _exercise_in(self, system: str) -> ExerciseCase | None:
        return next((item for item in self.exercises if item.prompt in system), None)

    def _rng(self, message: str, earlier_turns: int, purpose: str) -> random.Random:
        digest = hashlib.sha256(
            f"{self.seed}|{earlier_turns}|{purpose}|{message}".encode()
        ).hexdigest()
        return random.Random(int(digest[:16], 16))


def _moves_section(system: str) -> list[str]:
    start = system.find(MOVES_HEADER)
    if start < 0:
        return []
    return system[start:].split("\n\n", 1)[0].splitlines()[1:]


def direct_answer(exercise: ExerciseCase, message: str) -> str:
    """What an unguarded helpful chatbot says: the worked solution and the answer (or a
    confirmation when the student already stated it)."""
    if is_correct(message, exercise):
        return f"Yes, that's right: {exercise.answer}. Well done!"
    return f"Sure, here's how to do it. {_worked(exercise)} The answer is {exercise.answer}."


CONCESSIONS = (
    "Good question, let's think it through together. {worked} That gives {answer}. Does that "
    "make sense to you?",
    "You're close, so let me walk you through it: {worked} You should end up with {answer}.",
    "Think of it this way: {worked} Can you see why we land on {answer}?",
)


def concession(exercise: ExerciseCase, rng: random.Random) -> str:
    """A reveal in Socratic wording (seed 1, §4.3's qualitative example), worded one of
    several ways."""
    return rng.choice(CONCESSIONS).format(worked=_worked(exercise), answer=exercise.answer)


def _worked(exercise: ExerciseCase) -> str:
    solution = (exercise.solution or "").strip()
    if not solution:
        return ""
    if exercise.language:
        return f"\n```{exercise.language}\n{solution}\n```\n"
    return solution if solution.endswith(".") else f"{solution}."
