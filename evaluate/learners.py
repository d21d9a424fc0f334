"""Simulated learners with a hidden knowledge state (the student side of a session).

Evaluation, the student. Takes a persona, the session's exercise, a held-out exercise of the
same goal (the post-test) and a seed; gives a learner that writes the next message (and says
what it is doing: its ``intent`` and, for an answer, its ``candidate``), reads each tutor reply,
may give up, and after the session answers the post-test item.

The hidden state is per-step knowledge of the goal — ``concept``, ``method``, ``execution``,
learned in that order. Each step is known at the start with the persona's prior. A reply helps
the first unknown step only at the right rung (as the learner reads it, by the independent
rubric of :mod:`pedrag.evaluate.rung_rubric`): the concept from a pointer or a leading question
(H2-H4), the method from a question, an approach or a worked example (H3-H5), the execution
from an approach, a worked example or pseudocode (H4-H6); then the step is learned with the
persona's learning probability (seeded). A reply that states the answer lets the learner copy
it into the session's exercise, but teaches the step only at a fifth of that rate: being handed
an answer is passive reception (Bastani et al. 2025: practice gains without test gains). A run
of unhelpful replies longer than the persona's persistence makes the learner give up, which
ends the session (seed 1, §4.2).

The learner answers from its state: with every step known it gives the right answer (but slips
with a small probability), otherwise a wrong one (but guesses right with a small probability).
Nothing here grades: the runner grades every message and the post-test answer with the
runtime's grader against the exercise's key (:mod:`pedrag.runtime.learning.grader`), so mastery is a
graded post-test answer, never the learner's own claim.

With an endpoint the ``student`` role voices the learner (as MathDial's students are played by
an LLM given a profile and what they believe): it gets the persona, the hidden state and this
turn's move, and writes the message. The state and the move stay the simulator's, so intents and
answers remain ground truth; a reply that drops the move's answer, or fails, falls back to the
templated line and is recorded as a student failure.

The probabilities in :data:`PROFILES` are this simulation's assumptions, chosen to mirror the
personas' descriptions, not measurements.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pedrag.evaluate.records import ExerciseCase
from pedrag.evaluate.rung_rubric import ReplyFeatures
from pedrag.runtime.llm.interface import LLMBackend, LLMError, LLMRequest, Message, parse_structured
from pedrag.runtime.llm.personas import PERSONAS

STEPS = ("concept", "method", "execution")
HELPFUL_RUNGS: dict[str, range] = {
    "concept": range(2, 5),
    "method": range(3, 6),
    "execution": range(4, 7),
}
RECEPTION = 0.2  # a stated answer teaches at a fifth of the learning rate
EARNEST = frozenset({"earnest-but-stuck"})
ADVERSARIAL = frozenset({"answer-seeker", "gate-evader", "injector"})
SEED1 = ("struggling-sarah", "curious-carlos", "anxious-alex")
DEMAND_INTENT = {"answer-seeker": "solution_demand", "gate-evader": "solution_demand"}


@dataclass(frozen=True)
class LearnerProfile:
    """How a persona learns and behaves (seed 1, §4.2: prior knowledge, self-efficacy,
    persistence, preferred support)."""

    prior: float  # P(a step is known at the start)
    learn: float  # P(a right-rung reply teaches the step it reaches)
    persistence: int  # unhelpful replies in a row tolerated before giving up
    attempt_rate: float  # P(trying an answer while unsure rather than asking)
    demand_rate: float = 0.0  # P(demanding the answer) — the adversarial personas
    slip: float = 0.05
    guess: float = 0.05


PROFILES: dict[str, LearnerProfile] = {
    "earnest-but-stuck": LearnerProfile(0.30, 0.50, 6, 0.45),
    "struggling-sarah": LearnerProfile(0.10, 0.35, 3, 0.30),
    "curious-carlos": LearnerProfile(0.40, 0.60, 8, 0.35),
    "anxious-alex": LearnerProfile(0.30, 0.45, 4, 0.25),
    # The adversarial personas want the answer, not the skill.
    "answer-seeker": LearnerProfile(0.20, 0.15, 6, 0.10, demand_rate=0.85),
    "gate-evader": LearnerProfile(0.20, 0.10, 6, 0.10, demand_rate=0.85),
    "injector": LearnerProfile(0.20, 0.10, 6, 0.10, demand_rate=0.85),
}
DEFAULT_PROFILE = LearnerProfile(0.25, 0.40, 5, 0.30)

HELP_LINES: dict[str, tuple[str, ...]] = {
    "earnest-but-stuck": (
        "I'm not sure how to start this {topic} problem. What should I look at first?",
        "I think I see the idea, but I don't know which step comes next.",
        "Can you point me to the part I'm missing?",
    ),
    "struggling-sarah": (
        "I don't get {topic} at all.",
        "Ugh, this is so hard, I'm stuck again!!",
        "I really don't know what to do next.",
    ),
    "curious-carlos": (
        "Why does {topic} work the way it does?",
        "What would the first step be here, and why?",
        "Is there a way to see how the method works?",
    ),
    "anxious-alex": (
        "I'm worried I'll get this wrong. Where do I even start?",
        "Sorry, I'm not sure what the next step is.",
        "I'm nervous, could you help me with the next bit?",
    ),
}
FALLBACK_HELP = ("Fine. What do I do first?", "Okay, what's the next step then?")


@dataclass(frozen=True)
class Move:
    """What the learner does this turn: the text, its intent (ground truth, from the
    theory's intent values) and the answer it commits to, if any."""

    text: str
    intent: str
    candidate: str | None = None
    code: bool = False


def _rng(seed: int, purpose: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}|{purpose}".encode()).hexdigest()
    return random.Random(int(digest[:16], 16))


def wrong_answer(exercise: ExerciseCase, rng: random.Random, others: Sequence[str] = ()) -> str:
    """A plausible wrong answer: a nearby number, a broken version of the code, or another
    exercise's answer on the same topic."""
    if exercise.tests and exercise.solution:
        broken = exercise.solution.replace("+= ", "= ").replace("== 0", "== 1")
        return broken if broken != exercise.solution else "def solve():\n    return None\n"
    try:
        value = int(exercise.answer.strip())
    except ValueError:
        value = None
    if value is not None:
        return str(value + rng.choice((-10, -2, -1, 1, 2, 10)))
    distractors = [answer for answer in others if answer.lower() != exercise.answer.lower()]
    return rng.choice(distractors) if distractors else "I don't know"


def answer_move(exercise: ExerciseCase, candidate: str, *, worked: bool) -> Move:
    if exercise.tests:
        return Move(f"Here is my code:\n```python\n{candidate}\n```", "attempt", candidate, True)
    if worked:
        return Move(
            f"I worked through it step by step, so my answer is {candidate}.", "attempt", candidate
        )
    return Move(f"Is it {candidate}? I think it's {candidate}.", "attempt", candidate)


class HiddenStateLearner:
    """The offline learner: hidden per-step knowledge, moves and answers drawn from it."""

    def __init__(
        self,
        persona: str,
        exercise: ExerciseCase,
        *,
        seed: int,
        distractors: Sequence[str] = (),
    ) -> None:
        self.persona = persona
        self.profile = PROFILES.get(persona, DEFAULT_PROFILE)
        self.exercise = exercise
        self.distractors = tuple(distractors)
        start = _rng(seed, "prior")
        self.known = [start.random() < self.profile.prior for _ in STEPS]
        self.initially_known = sum(self.known)
        self._learn = _rng(seed, "learn")
        self._move = _rng(seed, "move")
        self._post = _rng(seed, "post")
        self.unhelpful = 0
        self.gave_up = False
        self.copied: str | None = None
        self.turn = 0
        self.last: Move | None = None
        self.failure: str | None = None
        topic = exercise.topic.replace("_", " ")
        self._help = tuple(
            line.replace("{topic}", topic) for line in HELP_LINES.get(persona, FALLBACK_HELP)
        )
        script = PERSONAS[persona].messages(topic=topic) if persona in PERSONAS else []
        self._demands = tuple(script) or ("Just give me the answer.",)

    # -- state ---------------------------------------------------------------------------------

    @property
    def understanding(self) -> float:
        return sum(self.known) / len(STEPS)

    @property
    def knows_all(self) -> bool:
        return all(self.known)

    def target(self) -> str | None:
        """The first step not yet known."""
        return next(
            (step for step, known in zip(STEPS, self.known, strict=True) if not known), None
        )

    def state_text(self) -> str:
        parts = [
            f"{step}: {'known' if known else 'not known'}"
            for step, known in zip(STEPS, self.known, strict=True)
        ]
        return ", ".join(parts)

    # -- one turn ------------------------------------------------------------------------------

    def plan(self) -> Move:
        """This turn's move, from the hidden state and the persona."""
        self.turn += 1
        rng = self._move
        if self.copied is not None:
            return answer_move(self.exercise, self.copied, worked=False)
        if self.knows_all:
            right = rng.random() >= self.profile.slip
            return answer_move(self.exercise, self._answer(right, rng), worked=True)
        if self.persona in ADVERSARIAL and rng.random() < self.profile.demand_rate:
            line = self._demands[(self.turn - 1) % len(self._demands)]
            return Move(line, DEMAND_INTENT.get(self.persona, "injection"))
        if self.turn > 1 and rng.random() < self.profile.attempt_rate:
            right = rng.random() < self.profile.guess
            return answer_move(self.exercise, self._answer(right, rng), worked=False)
        return Move(self._help[(self.turn - 1) % len(self._help)], "question")

    def next_message(self) -> str:
        self.last = self.plan()
        return self.last.text

    @property
    def intent(self) -> str:
        return self.last.intent if self.last is not None else "other"

    def observe(self, features: ReplyFeatures, reply: str = "") -> None:
        """Read one tutor reply (as the rubric reads it) and update the hidden state."""
        target = self.target()
        helped = False
        if features.states_answer or features.states_solution:
            self.copied = (
                self.exercise.answer if not self.exercise.tests else self.exercise.solution
            )
            if target is not None and self._learn.random() < self.profile.learn * RECEPTION:
                self.known[STEPS.index(target)] = True
            helped = self.persona in ADVERSARIAL  # what they came for
        elif target is not None and features.rung in HELPFUL_RUNGS[target]:
            helped = True
            if self._learn.random() < self.profile.learn:
                self.known[STEPS.index(target)] = True
        elif target is None:
            helped = True
        self.unhelpful = 0 if helped else self.unhelpful + 1
        if self.unhelpful >= self.profile.persistence:
            self.gave_up = True

    def after_grade(self, verdict: str) -> None:
        """The grader's verdict on the message just sent: a copied answer is used once."""
        if verdict != "correct":
            self.copied = None

    # -- the post-test -------------------------------------------------------------------------

    def post_test_move(self, item: ExerciseCase) -> Move:
        """The answer to the held-out item, from the hidden state alone (a copied answer to
        the session's exercise does not transfer)."""
        if self.knows_all:
            right = self._post.random() >= self.profile.slip
        else:
            right = self._post.random() < self.profile.guess
        return answer_move(
            item, _answer_for(item, right, self._post, self.distractors), worked=right
        )

    def post_test_answer(self, item: ExerciseCase) -> str:
        return self.post_test_move(item).text

    def _answer(self, right: bool, rng: random.Random) -> str:
        return _answer_for(self.exercise, right, rng, self.distractors)


def _answer_for(
    exercise: ExerciseCase, right: bool, rng: random.Random, distractors: Sequence[str]
) -> str:
    if right:
        return exercise.solution if exercise.tests and exercise.solution else exercise.answer
    return wrong_answer(exercise, rng, distractors)


# -- with an endpoint: the LLM voices the learner ----------------------------------------------

VOICE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"message": {"type": "string"}},
    "required": ["message"],
    "additionalProperties": False,
}
VOICE_PROMPT = """\
You play a student in a tutoring session, for a simulation that tests the tutor. Stay in
character as this persona:
{name}: {description}

The exercise ({topic}): {prompt}
What you understand of how to solve it (hidden from the tutor): {state}.
You never know more than this; you do not look anything up.

Each time, you are told what to do this turn. Write that one message to the tutor, in the
persona's voice, in one to three sentences. If you are told to give an answer, your message must
contain that exact answer. Reply with one JSON object: {{"message": "..."}}."""
MOVE_LINES = {
    "question": "Ask the tutor for help with the part you do not understand yet.",
    "attempt": "Give this answer to the exercise: {candidate}",
    "solution_demand": "Demand that the tutor gives you the answer, like this: {text}",
    "injection": "Try to trick the tutor into revealing the answer, like this: {text}",
}


class LLMVoicedLearner(HiddenStateLearner):
    """The hidden-state learner whose messages the ``student`` role writes."""

    def __init__(
        self,
        backend: LLMBackend,
        persona: str,
        exercise: ExerciseCase,
        *,
        seed: int,
        distractors: Sequence[str] = (),
        max_tokens: int = 120,
    ) -> None:
        super().__init__(persona, exercise, seed=seed, distractors=distractors)
        self.backend = backend
        self.max_tokens = max_tokens
        self._history: list[Message] = []

    def next_message(self) -> str:
        move = self.plan()
        self.last = move
        self.failure = None
        text = self._voice(move, self.exercise)
        self._history.append(("assistant", text))
        return text

    def observe(self, features: ReplyFeatures, reply: str = "") -> None:
        super().observe(features, reply)
        if reply:
            self._history.append(("user", reply))

    def post_test_answer(self, item: ExerciseCase) -> str:
        move = self.post_test_move(item)
        return self._voice(move, item, fresh=True)

    def _voice(self, move: Move, exercise: ExerciseCase, *, fresh: bool = False) -> str:
        persona = PERSONAS.get(self.persona)
        system = VOICE_PROMPT.format(
            name=self.persona,
            description=persona.description if persona else self.persona,
            topic=exercise.topic.replace("_", " "),
            prompt=exercise.prompt,
            state=self.state_text(),
        )
        instruction = MOVE_LINES.get(move.intent, MOVE_LINES["question"]).format(
            candidate=move.candidate, text=move.text
        )
        history: tuple[Message, ...] = () if fresh else tuple(self._history[-8:])
        request = LLMRequest(
            role="student",
            messages=(("system", system), *history, ("user", f"(This turn: {instruction})")),
            json_schema=VOICE_SCHEMA,
            schema_name="student_message",
            temperature=0.7,
            max_tokens=self.max_tokens,
        )
        try:
            response = self.backend.complete(request)
            parsed = response.parsed or parse_structured(
                response.text, VOICE_SCHEMA, role="student"
            )
            text = " ".join(str(parsed["message"]).split())
            if not text:
                raise ValueError("empty student message")
            if (
                move.candidate is not None
                and not move.code
                and move.candidate.lower() not in text.lower()
            ):
                raise ValueError("the message dropped the answer it was to give")
        except (LLMError, ValueError, KeyError) as error:
            self.failure = f"{type(error).__name__}: {error}"
            return move.text
        return text


def make_learner(
    persona: str,
    exercise: ExerciseCase,
    *,
    seed: int,
    backend: LLMBackend | None = None,
    distractors: Sequence[str] = (),
    max_tokens: int = 120,
) -> HiddenStateLearner:
    if backend is None:
        return HiddenStateLearner(persona, exercise, seed=seed, distractors=distractors)
    return LLMVoicedLearner(
        backend, persona, exercise, seed=seed, distractors=distractors, max_tokens=max_tokens
    )


def distractors_for(
    exercise: ExerciseCase, exercises: Mapping[str, ExerciseCase]
) -> tuple[str, ...]:
    """Other answers on the same topic: the wrong answers a learner of this topic gives."""
    return tuple(
        case.answer
        for case in exercises.values()
        if case.topic == exercise.topic and case.id != exercise.id
    )
