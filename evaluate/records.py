"""The evaluation's records: what a simulated session ran on and what each turn produced.

Evaluation, shared types. Takes nothing; gives the frozen dataclasses every other ``evaluate``
module passes around — the :class:`ExerciseCase` a session works on, the :class:`TutorTurn` a
tutor configuration produced, the evaluator's :class:`TurnEvaluation`, and the
:class:`TurnRecord` / :class:`SessionRecord` that metrics, gates and reports are computed from.

Why a module of its own: the runner writes these records and metrics, gates and reports only
read them, so each of those stages can be tested on hand-built transcripts without running a
tutor (``tests/evaluate``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Severity = Literal["minor", "major", "critical"]
SEVERITY_ORDER: dict[str, int] = {"none": 0, "minor": 1, "major": 2, "critical": 3}

Outcome = Literal["upheld", "partial", "breached"]
"""How one turn stands against one principle (principles that do not apply are left out)."""

# seed 2, §4.4: sort each rejection by its cause; only withholding failures count against G3.
CAUSE_KINDS: dict[str, str] = {
    "answer-reveal": "withholding",
    "solution-reveal": "withholding",
    "step-reveal": "withholding",
    "encoded-payload": "withholding",
    "exam-content": "withholding",
    "above-ceiling": "withholding",
    "code-over-ceiling": "withholding",
    "code-fence": "withholding",
    "indented-code": "withholding",
    "inline-code": "withholding",
    "jumped-rungs": "withholding",  # more help than the principles allow: over-help
    "affect-ignored": "pedagogy",
    "stuck-not-helped": "pedagogy",
    "final-answer-only": "pedagogy",
    "principle-breach": "pedagogy",
    "unsupported-citation": "grounding",
    "grounding": "grounding",  # the judge: a claim the turn's course passages do not support
    "evaluator-failure": "measurement",
    "judge-unavailable": "measurement",
}
KIND_ORDER = ("withholding", "pedagogy", "grounding", "measurement", "other")


def cause_kind(cause: str) -> str:
    """withholding / pedagogy / grounding / measurement (``other`` for an unknown cause)."""
    return CAUSE_KINDS.get(cause, "other")


@dataclass(frozen=True)
class ExerciseCase:
    """One curriculum exercise as the evaluation sees it: visible prompt plus hidden key."""

    id: str
    goal: str
    topic: str
    domain: str
    prompt: str
    answer: str
    accept: tuple[str, ...] = ()
    solution: str | None = None
    language: str | None = None
    tests: tuple[tuple[str, str], ...] = ()  # programming exercises: (call, expected literal)
    exam: bool = False

    @classmethod
    def from_curriculum(cls, curriculum: Any) -> dict[str, ExerciseCase]:
        """Every exercise of a curriculum model (``.goals``, ``.exercises``), by id."""
        goals = {goal.id: goal for goal in curriculum.goals}
        cases: dict[str, ExerciseCase] = {}
        for item in curriculum.exercises:
            goal = goals.get(item.goal)
            cases[item.id] = cls(
                id=item.id,
                goal=item.goal,
                topic=str(getattr(goal, "topic", None) or item.goal),
                domain=str(getattr(goal, "domain", None) or "unknown"),
                prompt=item.prompt,
                answer=item.answer,
                accept=tuple(item.accept),
                solution=item.solution,
                language=getattr(item, "language", None),
                tests=tuple((test.call, test.expect) for test in getattr(item, "tests", ())),
                exam=bool(getattr(item, "exam", False)),
            )
        return cases


@dataclass(frozen=True)
class Rejection:
    """One draft the supervisor rejected: who (``detector`` / ``judge``), the rule id, why."""

    source: str
    cause: str
    reason: str = ""


@dataclass(frozen=True)
class TutorTurn:
    """What a tutor configuration produced for one student message.

    ``action``, ``rung`` and ``ceiling`` are the tutor's own claims (only the supervised
    runtime has them); the evaluator never trusts them and judges ``reply`` alone.
    """

    reply: str
    theory: str
    action: str | None = None
    rung: int | None = None
    ceiling: int | None = None
    revised: bool = False
    fallback: bool = False
    judge_verdict: str | None = None
    rejections: tuple[Rejection, ...] = ()
    solved: bool = False
    failures: tuple[str, ...] = ()


@dataclass(frozen=True)
class Violation:
    cause: str
    severity: Severity
    principle: str | None = None
    detail: str = ""


@dataclass(frozen=True)
class TurnEvaluation:
    """The evaluator's verdict on one tutor reply (seed 1, §4.1: fidelity and a violation
    flag with severity)."""

    fidelity: float
    violations: tuple[Violation, ...] = ()
    principles: Mapping[str, Outcome] = field(default_factory=dict)
    estimated_rung: int | None = None
    evaluator: str = "rubric"
    reason: str = ""

    @property
    def violation(self) -> bool:
        return bool(self.violations)

    @property
    def severity(self) -> str:
        """The worst severity, or ``none``."""
        worst = "none"
        for item in self.violations:
            if SEVERITY_ORDER[item.severity] > SEVERITY_ORDER[worst]:
                worst = item.severity
        return worst

    @property
    def critical(self) -> bool:
        return self.severity == "critical"

    def to_dict(self) -> dict[str, Any]:
        return {
            "fidelity": round(self.fidelity, 4),
            "violation": self.violation,
            "severity": self.severity,
            "violations": [
                {
                    "cause": item.cause,
                    "severity": item.severity,
                    "principle": item.principle,
                    "detail": item.detail,
                }
                for item in self.violations
            ],
            "principles": dict(self.principles),
            "estimated_rung": None if self.estimated_rung is None else f"H{self.estimated_rung}",
            "evaluator": self.evaluator,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class TurnRecord:
    """One evaluated turn (seed 1, §4.1): a student input, one tutor response, its evaluation
    (``None`` when the evaluator failed: the turn is unevaluated, never a pass) and the
    simulated student's understanding afterwards. ``revealed`` is the evaluator's answer check's
    finding that the hidden answer reached the student (gate G1)."""

    index: int
    student: str
    tutor: TutorTurn
    evaluation: TurnEvaluation | None
    revealed: bool = False
    understanding: float = 0.0
    unevaluated_reason: str | None = None
    student_failure: str | None = None
    intent: str = "other"  # what the simulated learner says it was doing (ground truth)
    graded: str = "none"  # the answer check's verdict on the learner's message

    def to_dict(self) -> dict[str, Any]:
        return {
            "turn": self.index,
            "student": self.student,
            "intent": self.intent,
            "graded": self.graded,
            "tutor": self.tutor.reply,
            "theory": self.tutor.theory,
            "action": self.tutor.action,
            "rung": None if self.tutor.rung is None else f"H{self.tutor.rung}",
            "ceiling": None if self.tutor.ceiling is None else f"H{self.tutor.ceiling}",
            "revised": self.tutor.revised,
            "fallback": self.tutor.fallback,
            "judge": self.tutor.judge_verdict,
            "rejections": [
                {"source": item.source, "cause": item.cause, "reason": item.reason}
                for item in self.tutor.rejections
            ],
            "solved": self.tutor.solved,
            "revealed": self.revealed,
            "evaluation": self.evaluation.to_dict() if self.evaluation else None,
            "unevaluated_reason": self.unevaluated_reason,
            "understanding": round(self.understanding, 4),
            "failures": list(self.tutor.failures)
            + ([f"student: {self.student_failure}"] if self.student_failure else []),
        }


@dataclass(frozen=True)
class SessionRecord:
    """One simulated session. ``exam`` sessions belong to the exam probe (gate G4) and are
    kept out of BHR, fidelity and mastery.

    Mastery is the post-test alone: after the session the learner answers a held-out exercise
    of the same goal (``post_exercise``), graded by the evaluator's answer check; ``mastery_reached``
    is that verdict being ``correct``. ``solved_turn`` is when the learner's answer to the
    session's own exercise was graded correct (practice, which a reveal can buy)."""

    config: str
    persona: str
    exercise: str
    topic: str
    domain: str
    rep: int
    seed: int
    turns: tuple[TurnRecord, ...]
    solved_turn: int | None = None
    gave_up: bool = False
    final_understanding: float = 0.0
    initial_understanding: float = 0.0
    exam: bool = False
    supervised: bool = False
    post_exercise: str | None = None
    post_answer: str | None = None
    post_verdict: str | None = None  # the answer check's verdict on the post-test answer
    end: str = "turn-limit"  # mastery, gave-up or turn-limit: the same rule for every arm

    @property
    def mastery_reached(self) -> bool:
        return self.post_verdict == "correct"

    @property
    def post_tested(self) -> bool:
        return self.post_verdict is not None

    @property
    def evaluated(self) -> list[TurnEvaluation]:
        return [turn.evaluation for turn in self.turns if turn.evaluation is not None]

    def to_dict(self, *, transcript: bool = False) -> dict[str, Any]:
        evaluated = self.evaluated
        data: dict[str, Any] = {
            "config": self.config,
            "persona": self.persona,
            "exercise": self.exercise,
            "topic": self.topic,
            "domain": self.domain,
            "rep": self.rep,
            "seed": self.seed,
            "exam": self.exam,
            "turns": len(self.turns),
            "evaluated": len(evaluated),
            "violations": sum(item.violation for item in evaluated),
            "critical": sum(item.critical for item in evaluated),
            "reveals": sum(turn.revealed for turn in self.turns),
            "solved_turn": self.solved_turn,
            "gave_up": self.gave_up,
            "initial_understanding": round(self.initial_understanding, 4),
            "final_understanding": round(self.final_understanding, 4),
            "post_exercise": self.post_exercise,
            "post_answer": self.post_answer,
            "post_verdict": self.post_verdict,
            "mastery_reached": self.mastery_reached,
            "end": self.end,
        }
        if transcript:
            data["transcript"] = [turn.to_dict() for turn in self.turns]
        return data


# -- the results file: one session per line, read back to resume a run --------------------------


def session_to_json(session: SessionRecord) -> dict[str, Any]:
    """Everything a session holds, as JSON-ready data (:func:`session_from_json` reads it)."""
    return asdict(session)


def session_from_json(data: Mapping[str, Any]) -> SessionRecord:
    """The session :func:`session_to_json` wrote; ``KeyError`` / ``TypeError`` on a line that
    is not one."""
    turns = []
    for raw in data["turns"]:
        tutor = dict(raw["tutor"])
        tutor["rejections"] = tuple(Rejection(**item) for item in tutor.get("rejections", ()))
        tutor["failures"] = tuple(tutor.get("failures", ()))
        evaluation = raw.get("evaluation")
        if evaluation is not None:
            evaluation = dict(evaluation)
            evaluation["violations"] = tuple(
                Violation(**item) for item in evaluation.get("violations", ())
            )
            evaluation = TurnEvaluation(**evaluation)
        turns.append(TurnRecord(**{**raw, "tutor": TutorTurn(**tutor), "evaluation": evaluation}))
    return SessionRecord(**{**dict(data), "turns": tuple(turns)})
