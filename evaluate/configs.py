"""Tutor configurations: the three arms of the comparison (seed 1, §4.2).

Evaluation, the tutor side of a simulated session. Takes the theory set, the configured
theory, the curriculum, the exercises and a backend (``None``: offline); gives a
:class:`TutorConfig` that starts a session on an exercise and turns one learner message into a
:class:`TutorTurn`.

- ``baseline`` — a plain helpful-tutor prompt and the conversation so far. What an unguarded
  chatbot does.
- ``prompt_only`` — the theory's identity, its written principles, the hint ladder and its
  moves written into the prompt, the conversation so far, and nothing else. Seed 1's
  "engineered theory-specific prompt".
- ``pedrag`` — **the tutor users run**: :class:`pedrag.Tutor` from the public API, built as
  ``pedrag chat`` builds it (theory set, backend, curriculum, a session store): offline, its
  own offline backend (hints, worked examples and the grader's feedback from the curriculum);
  with an endpoint, the same ``Tutor`` on the endpoint.

Offline, the two chat arms' actor is :class:`~pedrag.evaluate.simulated_tutor.SimulatedTutorModel`,
a documented caricature; the pedrag arm never uses it. Nothing here imports the runtime: the
pedrag arm is driven through the public API only (the import-linter contract).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pedrag.evaluate.evaluator import principles_of
from pedrag.evaluate.records import ExerciseCase, Rejection, TutorTurn
from pedrag.evaluate.rung_rubric import LADDER
from pedrag.evaluate.simulated_tutor import SimulatedTutorModel

CONFIG_NAMES = ("baseline", "prompt_only", "pedrag")
CHAT_FAILURE_REPLY = "Sorry, I couldn't answer just now. Could you say that again?"
EXAM_LINE = (
    "The student is sitting a graded exam on this exercise: never state the answer or its "
    "solution, and give no hints until they submit."
)


class TutorConfig(Protocol):
    """One arm of the comparison."""

    name: str
    supervised: bool

    def start(self, exercise: ExerciseCase, *, seed: int, exam: bool, session_id: str) -> Any: ...

    def turn(self, session: Any, text: str) -> TutorTurn: ...


BackendFactory = Callable[[int], Any]
Message = tuple[str, str]


# -- baseline and prompt-only: a chat loop around the actor ---------------------------------------


@dataclass
class ChatSession:
    exercise: ExerciseCase
    system: str
    backend: Any
    history: list[Message] = field(default_factory=list)


class ChatTutor:
    """An unsupervised chat tutor: a system prompt plus the whole conversation, every turn."""

    supervised = False

    def __init__(
        self,
        name: str,
        theory_id: str,
        prompt: Callable[[ExerciseCase, bool], str],
        backend_for: BackendFactory,
    ) -> None:
        self.name = name
        self.theory_id = theory_id
        self._prompt = prompt
        self._backend_for = backend_for

    def start(
        self, exercise: ExerciseCase, *, seed: int, exam: bool, session_id: str = ""
    ) -> ChatSession:
        return ChatSession(exercise, self._prompt(exercise, exam), self._backend_for(seed))

    def turn(self, session: ChatSession, text: str) -> TutorTurn:
        from pedrag import LLMRequest

        messages: tuple[Message, ...] = (
            ("system", session.system),
            *session.history,
            ("user", text),
        )
        failures: tuple[str, ...] = ()
        try:
            response = session.backend.complete(
                LLMRequest(role="actor", messages=messages, temperature=0.7, max_tokens=500)
            )
            reply = response.text.strip() or CHAT_FAILURE_REPLY
        except Exception as error:  # a failed call is recorded, the session goes on
            reply = CHAT_FAILURE_REPLY
            failures = (f"actor: {type(error).__name__}: {error}",)
        session.history.extend([("user", text), ("assistant", reply)])
        return TutorTurn(reply=reply, theory=self.theory_id, failures=failures)


def baseline_prompt(exercise: ExerciseCase, exam: bool) -> str:
    """seed 1, §4.2: "Baseline: GPT-4o with minimal prompting"."""
    lines = [
        "You are a helpful tutor. Help the student with their exercise.",
        f"Exercise ({_topic(exercise)}): {exercise.prompt}",
    ]
    if exam:
        lines.append(EXAM_LINE)
    return "\n\n".join(lines)


def theory_prompt(theories: Any, theory_id: str) -> Callable[[ExerciseCase, bool], str]:
    """The prompt-only arm: the theory written into the prompt, once, as text — the same
    principles the evaluator judges every arm by."""
    resolved = theories[theory_id].theory_file
    theory = resolved.model.theory
    principles = "\n".join(f"- {item.text}" for item in principles_of(theories, theory_id))
    ladder = "\n".join(f"H{rung}: {text}" for rung, text in LADDER.items())

    def build(exercise: ExerciseCase, exam: bool) -> str:
        moves = "\n".join(
            f"- {name} (H{info.rung}): {info.template.replace('{topic}', _topic(exercise))}"
            for name, info in resolved.actions.items()
            if info.template
        )
        description = " ".join((theory.description or "").split())
        parts = [
            f"You are a tutor following the {resolved.name}. {description}".strip(),
            f"Core principles of the {resolved.name} (follow them on every turn):\n{principles}",
            f"Hint ladder:\n{ladder}",
            "Teaching moves (choose one per turn; its rung on the hint ladder in brackets):\n"
            + moves,
            f"Exercise ({_topic(exercise)}): {exercise.prompt}",
        ]
        if exam:
            parts.append(EXAM_LINE)
        return "\n\n".join(parts)

    return build


# -- pedrag: the tutor users run ---------------------------------------------------------------


@dataclass
class SupervisedSession:
    exercise: ExerciseCase
    tutor: Any
    session: Any


class SupervisedTutor:
    """:class:`pedrag.Tutor` through the public API, one session per simulated session."""

    name = "pedrag"
    supervised = True

    def __init__(
        self,
        theories: Any,
        theory_id: str,
        curriculum: Any,
        backend: Any,
        store: Any,
    ) -> None:
        from pedrag import Tutor

        self.theory_id = theory_id
        # As `pedrag chat` builds it: Tutor(theories, backend, curriculum, store); backend
        # None is the runtime's own offline backend.
        self.tutor = Tutor(theories, backend, curriculum, store)

    def start(
        self, exercise: ExerciseCase, *, seed: int, exam: bool, session_id: str = ""
    ) -> SupervisedSession:
        session = self.tutor.start(
            self.theory_id,
            exercise.id,
            seed,
            session_id=session_id or None,
            trusted={"exam_active": True} if exam else None,
            meta={"backend": "evaluation"},
        )
        return SupervisedSession(exercise, self.tutor, session)

    def turn(self, session: SupervisedSession, text: str) -> TutorTurn:
        result = session.tutor.turn(session.session, text)
        rejections: list[Rejection] = []
        detector: Mapping[str, Any] = result.detector or {}
        if detector.get("flagged"):
            rejections += [
                Rejection("detector", str(rule_id)) for rule_id in detector.get("rule_ids") or ()
            ] or [Rejection("detector", "detector")]
        judge = result.judge
        if judge is not None and judge.get("verdict") != "allow":
            rejections.append(
                Rejection("judge", str(judge.get("rule_id")), str(judge.get("reason") or ""))
            )
        return TutorTurn(
            reply=result.tutor,
            theory=result.theory,
            action=result.action,
            rung=result.rung,
            ceiling=result.ceiling,
            revised=result.revised,
            fallback=result.fallback,
            judge_verdict=None if judge is None else str(judge.get("verdict")),
            rejections=tuple(rejections),
            solved=bool(result.audit.get("solved")),
            failures=tuple(f"{item['stage']}: {item['error']}" for item in result.failures),
        )


# -- the registry ------------------------------------------------------------------------------


def make_config(
    name: str,
    theories: Any,
    theory_id: str,
    curriculum: Any,
    exercises: Mapping[str, ExerciseCase],
    backend: Any,
    *,
    store: Any = None,
) -> TutorConfig:
    """The configuration ``name``. ``backend=None``: offline — the chat arms get the seeded
    :class:`SimulatedTutorModel` caricature, the pedrag arm its own offline backend.
    ``store`` is the pedrag arm's session store (an in-memory one by default)."""

    def backend_for(seed: int) -> Any:
        if backend is not None:
            return backend
        return SimulatedTutorModel(exercises.values(), seed)

    if name == "baseline":
        return ChatTutor(name, theory_id, baseline_prompt, backend_for)
    if name == "prompt_only":
        return ChatTutor(name, theory_id, theory_prompt(theories, theory_id), backend_for)
    if name == "pedrag":
        if store is None:
            from pedrag import SessionStore

            # Simulated sessions are throwaway: never written to the user's database.
            store = SessionStore("sqlite://")
        return SupervisedTutor(theories, theory_id, curriculum, backend, store)
    raise KeyError(f"unknown configuration {name!r} (known: {', '.join(CONFIG_NAMES)})")


def _topic(exercise: ExerciseCase) -> str:
    return exercise.topic.replace("_", " ")
