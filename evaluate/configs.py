"""Tutor configurations: the three arms of the comparison (seed 1, §4.2).

Evaluation, the tutor side of a simulated session. Takes the theory set, the configured
theory, the exercises and a backend (``None``: offline); gives a :class:`TutorConfig` that
starts a session on an exercise and turns one student message into a :class:`TutorTurn`.

- ``baseline`` — the actor with no theory and no supervisor: a plain helpful-tutor prompt and
  the conversation so far. What an unguarded chatbot does.
- ``prompt_only`` — the theory's identity, principles and moves written into the prompt, the
  conversation so far, and nothing else: no policy core, no rule engine, no detector, no judge.
  Seed 1's "engineered theory-specific prompt".
- ``pedrag`` — the full supervised runtime (:class:`pedrag.runtime.turn.tutor.Tutor`), unchanged.

The runtime has no switch that runs its actor without the supervisor, so the two chat arms are
built here from its public pieces (the ladder text, the backend interface, the theory model).
Offline, every arm's actor is the same :class:`SimulatedTutorModel`, seeded per session, so the
arms differ only in architecture.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pedrag.evaluate.records import ExerciseCase, Rejection, TutorTurn
from pedrag.evaluate.simulated_tutor import SimulatedTutorModel
from pedrag.runtime.detect.detector import Detector, code_mode_for_ceiling
from pedrag.runtime.llm.interface import LLMBackend, LLMError, LLMRequest, LLMResponse, Message
from pedrag.runtime.policy.theory_set import TheorySet
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.generator import LADDER, fill_template
from pedrag.runtime.turn.tutor import Tutor

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


BackendFactory = Callable[[int], LLMBackend]


# -- baseline and prompt-only: a chat loop around the actor ---------------------------------------


@dataclass
class ChatSession:
    exercise: ExerciseCase
    system: str
    backend: LLMBackend
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
        except LLMError as error:
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


def theory_prompt(theories: TheorySet, theory_id: str) -> Callable[[ExerciseCase, bool], str]:
    """The prompt-only arm: the theory written into the prompt, once, as text."""
    resolved = theories[theory_id].theory_file
    theory = resolved.model.theory
    principles = "\n".join(f"- {' '.join(item.text.split())}" for item in theory.principles)
    ladder = "\n".join(LADDER.values())

    def build(exercise: ExerciseCase, exam: bool) -> str:
        moves = "\n".join(
            f"- {name} (H{info.rung}): {fill_template(info.template, _topic(exercise))}"
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


# -- pedrag: the supervised runtime ------------------------------------------------------------


class _DraftRecorder:
    """Passes every request through and keeps the actor's drafts, so a rejected draft's
    detector rule ids can be counted by cause (the audit keeps only the reason sentence)."""

    def __init__(self, inner: LLMBackend) -> None:
        self.inner = inner
        self.drafts: list[str] = []

    def complete(self, request: LLMRequest) -> LLMResponse:
        response = self.inner.complete(request)
        if request.role == "actor":
            self.drafts.append(response.text.strip())
        return response


@dataclass
class SupervisedSession:
    exercise: ExerciseCase
    tutor: Tutor
    session: Any
    recorder: _DraftRecorder


class SupervisedTutor:
    """The full runtime: one :class:`Tutor` per session, its own in-memory store."""

    name = "pedrag"
    supervised = True

    def __init__(
        self,
        theories: TheorySet,
        theory_id: str,
        curriculum: Any,
        backend_for: BackendFactory,
        *,
        history_turns: int | None = None,
    ) -> None:
        self.theories = theories
        self.theory_id = theory_id
        self.curriculum = curriculum
        self._backend_for = backend_for
        self.history_turns = history_turns  # None: the runtime's own default

    def start(
        self, exercise: ExerciseCase, *, seed: int, exam: bool, session_id: str = ""
    ) -> SupervisedSession:
        recorder = _DraftRecorder(self._backend_for(seed))
        # Simulated sessions are throwaway and their ids repeat from run to run (they come
        # from the grid seed): never write them into the user's session database.
        extra: dict[str, Any] = {}
        if self.history_turns is not None:
            extra["history_turns"] = self.history_turns
        tutor = Tutor(self.theories, recorder, self.curriculum, store=MemoryStore(), **extra)
        session = tutor.start(
            self.theory_id,
            exercise.id,
            seed,
            session_id=session_id or None,
            trusted={"exam_active": True} if exam else None,
            meta={"backend": "evaluation"},
        )
        return SupervisedSession(exercise, tutor, session, recorder)

    def turn(self, session: SupervisedSession, text: str) -> TutorTurn:
        session.recorder.drafts.clear()
        result = session.tutor.turn(session.session, text)
        audit: Mapping[str, Any] = result.audit
        rejections = list(_detector_rejections(session, result, text))
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
            solved=bool(audit.get("solved")),
            failures=tuple(f"{item['stage']}: {item['error']}" for item in result.failures),
        )


def _detector_rejections(session: SupervisedSession, result: Any, text: str) -> list[Rejection]:
    drafts = result.audit.get("drafts") or []
    key = session.exercise.key if result.ceiling < 7 else None
    detector = Detector(code_mode_for_ceiling(result.ceiling), key)
    found: list[Rejection] = []
    for entry, draft in zip(drafts, session.recorder.drafts, strict=False):
        if entry.get("flagged"):
            verdict = detector.check(draft, student_message=text)
            for rule_id in verdict.rule_ids or ("detector",):
                found.append(Rejection("detector", rule_id, verdict.reason))
    return found


# -- the registry ------------------------------------------------------------------------------


def make_config(
    name: str,
    theories: TheorySet,
    theory_id: str,
    curriculum: Any,
    exercises: Mapping[str, ExerciseCase],
    backend: LLMBackend | None,
    *,
    history_turns: int | None = None,
) -> TutorConfig:
    """The configuration ``name``; ``backend=None`` gives every arm the seeded offline
    :class:`SimulatedTutorModel` as its actor. ``history_turns`` sets the supervised
    runtime's actor history (``None``: the runtime's default)."""

    def backend_for(seed: int) -> LLMBackend:
        if backend is not None:
            return backend
        return SimulatedTutorModel(exercises.values(), seed)

    if name == "baseline":
        return ChatTutor(name, theory_id, baseline_prompt, backend_for)
    if name == "prompt_only":
        return ChatTutor(name, theory_id, theory_prompt(theories, theory_id), backend_for)
    if name == "pedrag":
        return SupervisedTutor(
            theories, theory_id, curriculum, backend_for, history_turns=history_turns
        )
    raise KeyError(f"unknown configuration {name!r} (known: {', '.join(CONFIG_NAMES)})")


def _topic(exercise: ExerciseCase) -> str:
    return exercise.topic.replace("_", " ")
