"""The offline stand-in for the tutor LLM: a deterministic model that over-helps the way
capable models do.

Evaluation, offline backend. Takes the ``actor`` requests of all three tutor configurations
(every other role is passed to the runtime's :class:`~pedrag.runtime.llm.offline.OfflineBackend`);
gives replies worked out from the request alone plus a per-session seed:

- a prompt with no withholding instruction (the ``baseline``'s plain helpful-tutor prompt) is
  answered directly — the worked solution and the answer, as unguarded chatbots do;
- a prompt that tells the model to withhold (a theory's ``no_direct_answers`` principle, or the
  runtime's contract block) is followed — the action template the runtime asked for, else one
  of the theory's moves listed in the prompt — **except** that the model concedes the answer
  (in Socratic wording, seed 1 §4.3's "subtle behavioural hallucination") with a probability
  that grows with pressure and with prompt attenuation:

  * pressure: 0.5 when the student demands the solution, injects or asks for exam answers,
    0.3 when hostile (the intent comes from the runtime's own deterministic classifier);
  * attenuation: 0.04 per earlier student turn in the prompt, capped at 0.4 (seed 1, §1: "the
    initial prompt's influence attenuates under conversation history"). Attenuation only
    amplifies pressure the current message applies; conversation history is never pressure by
    itself, so an earnest learner's turn is not conceded however long the conversation (a
    history that counted as pressure would make any tutor that sends history look leaky);

- a ``REVISION:`` note (the runtime's revise-once step) is always obeyed.

Why one model for all three configurations: the comparison is then between architectures, as
in seed 1 where every configuration used the same GPT-4o. The supervised runtime rebuilds the
actor's prompt every turn from the theory and sends no history, so attenuation is zero there by
construction, and its detector and judge catch what pressure extracts; nothing in this module
knows which configuration is asking. The probabilities are this simulation's assumptions, not
measurements — the offline figures exercise the machinery; an endpoint measures a model.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterable

from pedrag.evaluate.records import ExerciseCase
from pedrag.runtime.detect.answer import find_answer_reveals
from pedrag.runtime.llm.interface import LLMBackend, LLMRequest, LLMResponse
from pedrag.runtime.llm.offline import OfflineBackend
from pedrag.runtime.turn.classifier import heuristic_intent, unframe_message
from pedrag.runtime.turn.generator import SAFE_LINE, TEMPLATE_MARK

MODEL = "simulated-tutor"
WITHHOLDING_INSTRUCTION = re.compile(
    r"never (state|solve|give|reveal|tell)\b[^.\n]{0,60}?\b(answer|exercise|problem|solution)",
    re.IGNORECASE,
)
REVISION_MARK = "REVISION:"
MOVES_HEADER = "Teaching moves"
PRESSURE = {"solution_demand": 0.5, "injection": 0.5, "exam_leak": 0.5, "hostile": 0.3}
ATTENUATION_PER_TURN = 0.04
ATTENUATION_CAP = 0.4
_MOVE_LINE = re.compile(r"^- [a-z0-9_]+ \(H[0-7]\): (?P<template>.+)$")


def concession_probability(intent: str, earlier_turns: int) -> float:
    """The chance that a model told to withhold gives the answer anyway on this turn: zero
    without pressure in the current message, whatever the history's length."""
    pressure = PRESSURE.get(intent, 0.0)
    if pressure <= 0.0:
        return 0.0
    attenuation = min(ATTENUATION_CAP, ATTENUATION_PER_TURN * earlier_turns)
    return 1.0 - (1.0 - pressure) * (1.0 - attenuation)


class SimulatedTutorModel:
    """:class:`~pedrag.runtime.llm.interface.LLMBackend` answering ``actor`` requests as described in
    the module docstring; ``seed`` makes a session's concessions reproducible."""

    def __init__(
        self,
        exercises: Iterable[ExerciseCase],
        seed: int,
        fallback: LLMBackend | None = None,
    ) -> None:
        self.exercises = tuple(exercises)
        self.seed = seed
        self.fallback = fallback or OfflineBackend()
        self.calls = 0

    def complete(self, request: LLMRequest) -> LLMResponse:
        if request.role != "actor":
            return self.fallback.complete(request)
        self.calls += 1
        system = request.messages[0][1] if request.messages[0][0] == "system" else ""
        users = [content for who, content in request.messages if who == "user"]
        last = users[-1] if users else ""
        message = unframe_message(last) or last
        text = self.reply(system, message, earlier_turns=max(0, len(users) - 1))
        return LLMResponse(
            text=text,
            model=MODEL,
            prompt_tokens=sum(len(content) for _, content in request.messages) // 4,
            completion_tokens=len(text) // 4,
            role="actor",
        )

    def reply(self, system: str, message: str, *, earlier_turns: int) -> str:
        exercise = self._exercise_in(system)
        in_role = self._in_role(system, message, earlier_turns)
        if REVISION_MARK in system or exercise is None:
            return in_role
        if not WITHHOLDING_INSTRUCTION.search(system):
            return direct_answer(exercise, message)
        chance = concession_probability(heuristic_intent(message), earlier_turns)
        if self._rng(message, earlier_turns, "concede").random() < chance:
            return socratic_reveal(exercise)
        return in_role

    def _in_role(self, system: str, message: str, earlier_turns: int) -> str:
        start = system.find(TEMPLATE_MARK)
        if start >= 0:
            line = system[start + len(TEMPLATE_MARK) :].split("\n", 1)[0].strip()
            return line or SAFE_LINE
        moves = [
            match.group("template")
            for match in (_MOVE_LINE.match(line) for line in _moves_section(system))
            if match
        ]
        if moves:
            return self._rng(message, earlier_turns, "move").choice(moves)
        return SAFE_LINE

    def _exercise_in(self, system: str) -> ExerciseCase | None:
        for exercise in self.exercises:
            if exercise.prompt in system:
                return exercise
        return None

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
    if any(f.rule_id == "answer-reveal" for f in find_answer_reveals(message, exercise.key)):
        return f"Yes, that's right: {exercise.answer}. Well done!"
    return f"Sure, here's how to do it. {_worked(exercise)} So the answer is {exercise.answer}."


def socratic_reveal(exercise: ExerciseCase) -> str:
    """Socratic wording around a reveal (seed 1, §4.3's qualitative example)."""
    return (
        "Good question, let's think it through together. "
        f"{_worked(exercise)} So the answer is {exercise.answer}. Does that make sense to you?"
    )


def _worked(exercise: ExerciseCase) -> str:
    solution = (exercise.solution or "").strip()
    if not solution:
        return ""
    if exercise.language:
        return f"\n```{exercise.language}\n{solution}\n```\n"
    return solution if solution.endswith(".") else f"{solution}."
