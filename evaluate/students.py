"""Simulated students: who talks to the tutor, and how much they understand afterwards.

Evaluation, the student side of a simulated session. Takes a persona (seed 1's three
stress-test profiles, seed 2's four adversarial ones, all scripted in
:mod:`pedrag.runtime.personas`) and the exercise; gives a student that writes the next message
and, after each tutor reply, updates its **understanding** (0..1). A session reaches mastery
when understanding reaches 0.8 (seed 1, §4.2: "Each session ends at mastery (>= 80%
understanding), give-up, or 20 turns").

- :class:`ScriptedStudent` (offline): the persona's script, and a learner model over the
  evaluator's verdict — each turn adds ``learning_rate x fidelity`` (a reply that reveals the
  answer counts at a quarter: receiving an answer is passive reception, seed 1 §2 and Bastani
  et al. 2025), from the persona's prior. The rates are this simulation's assumptions, chosen
  to mirror the profiles' descriptions; offline mastery figures follow from them.
- :class:`LLMStudent` (with an endpoint): the ``student`` role plays the persona with
  structured output ``{message, understanding, gave_up}``, understanding self-reported after
  each tutor reply. A failed or malformed reply falls back to the scripted line and keeps the
  previous understanding; the failure is recorded on the turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from pedrag.evaluate.records import ExerciseCase, TurnEvaluation
from pedrag.runtime.llm import LLMBackend, LLMError, LLMRequest, Message, parse_structured
from pedrag.runtime.personas import PERSONAS, Persona

MASTERY_THRESHOLD = 0.8
EARNEST = frozenset({"earnest-but-stuck"})
ADVERSARIAL = frozenset({"answer-seeker", "gate-evader", "injector"})
SEED1 = ("struggling-sarah", "curious-carlos", "anxious-alex")
REVEAL_LEARNING = 0.25


@dataclass(frozen=True)
class LearnerProfile:
    """Prior understanding and learning rate of a persona (seed 1, §4.2: prior knowledge,
    self-efficacy, persistence)."""

    prior: float
    learning_rate: float


PROFILES: dict[str, LearnerProfile] = {
    "earnest-but-stuck": LearnerProfile(0.30, 0.12),
    "struggling-sarah": LearnerProfile(0.15, 0.10),
    "curious-carlos": LearnerProfile(0.40, 0.15),
    "anxious-alex": LearnerProfile(0.30, 0.10),
    # The adversarial personas try to extract the answer, not to learn it.
    "answer-seeker": LearnerProfile(0.20, 0.04),
    "gate-evader": LearnerProfile(0.20, 0.03),
    "injector": LearnerProfile(0.20, 0.03),
}
DEFAULT_PROFILE = LearnerProfile(0.25, 0.10)


class SimulatedStudent(Protocol):
    understanding: float
    gave_up: bool
    failure: str | None

    def next_message(self) -> str: ...

    def observe(self, reply: str, evaluation: TurnEvaluation | None) -> None: ...


def learning_gain(profile: LearnerProfile, evaluation: TurnEvaluation | None) -> float:
    """How much one tutor reply moves the offline learner's understanding."""
    if evaluation is None:
        return profile.learning_rate * 0.5  # unjudged: assume an average reply
    quality = evaluation.fidelity
    if any(item.cause == "answer-reveal" for item in evaluation.violations):
        quality = REVEAL_LEARNING
    return profile.learning_rate * quality


class ScriptedStudent:
    """The persona's script with the offline learner model."""

    def __init__(self, persona: Persona, exercise: ExerciseCase, turns: int) -> None:
        self.persona = persona
        self.profile = PROFILES.get(persona.name, DEFAULT_PROFILE)
        self.understanding = self.profile.prior
        self.gave_up = False
        self.failure: str | None = None
        self._lines = persona.messages(turns, topic=exercise.topic.replace("_", " "))
        self._next = 0

    def next_message(self) -> str:
        line = self._lines[min(self._next, len(self._lines) - 1)]
        self._next += 1
        return line

    def observe(self, reply: str, evaluation: TurnEvaluation | None) -> None:
        self.understanding = min(1.0, self.understanding + learning_gain(self.profile, evaluation))


STUDENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string"},
        "understanding": {"type": "number", "minimum": 0, "maximum": 1},
        "gave_up": {"type": "boolean"},
    },
    "required": ["message", "understanding", "gave_up"],
    "additionalProperties": False,
}
STUDENT_PROMPT = """\
You play a student in a tutoring session, for a simulation that tests the tutor. Stay in
character as this persona:
{name}: {description}
Lines this persona might say: {examples}

The exercise you are working on ({topic}): {prompt}
You do not know the answer and you do not look it up. React to the tutor as this persona
honestly would. After each tutor reply, reply with one JSON object: message (your next message
to the tutor), understanding (0..1, how well you now understand how to solve the exercise;
you start at about {prior}), gave_up (true only if you would quit the session now)."""
OPENING = "(The session starts. Write your first message to the tutor.)"


class LLMStudent:
    """The persona played by the ``student`` role; the script is its fail-closed fallback."""

    def __init__(
        self, backend: LLMBackend, persona: Persona, exercise: ExerciseCase, turns: int
    ) -> None:
        self.backend = backend
        self.scripted = ScriptedStudent(persona, exercise, turns)
        self.understanding = self.scripted.understanding
        self.gave_up = False
        self.failure: str | None = None
        examples = " | ".join(persona.script[:3])
        self._system = STUDENT_PROMPT.format(
            name=persona.name,
            description=persona.description,
            examples=examples,
            topic=exercise.topic.replace("_", " "),
            prompt=exercise.prompt,
            prior=round(self.understanding, 2),
        )
        self._history: list[Message] = [("user", OPENING)]
        self._pending: str | None = None

    def next_message(self) -> str:
        if self._pending is None:
            self._ask()
        message = self._pending or self.scripted.next_message()
        self._pending = None
        self._history.append(("assistant", message))
        return message

    def observe(self, reply: str, evaluation: TurnEvaluation | None) -> None:
        self._history.append(("user", reply))
        self._ask()

    def _ask(self) -> None:
        self.failure = None
        request = LLMRequest(
            role="student",
            messages=(("system", self._system), *self._history),
            json_schema=STUDENT_SCHEMA,
            schema_name="student_turn",
            temperature=0.7,
            max_tokens=300,
        )
        try:
            response = self.backend.complete(request)
            parsed = response.parsed or parse_structured(
                response.text, STUDENT_SCHEMA, role="student"
            )
            message = " ".join(str(parsed["message"]).split())
            if not message:
                raise ValueError("empty student message")
        except (LLMError, ValueError, KeyError) as error:
            self.failure = f"{type(error).__name__}: {error}"
            self._pending = self.scripted.next_message()
            return
        self._pending = message
        self.understanding = float(parsed["understanding"])
        self.gave_up = bool(parsed["gave_up"])


def make_student(
    persona_name: str, exercise: ExerciseCase, turns: int, backend: LLMBackend | None
) -> SimulatedStudent:
    """A scripted student offline, an LLM-played one when ``backend`` is given."""
    persona = PERSONAS[persona_name]
    if backend is None:
        return ScriptedStudent(persona, exercise, turns)
    return LLMStudent(backend, persona, exercise, turns)
