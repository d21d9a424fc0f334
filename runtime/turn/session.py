"""A tutoring session and what one turn gives back: the values the turn pipeline works on.

Runtime, the turn's data (no stage logic). Takes a curriculum's exercise model (for
:class:`ExerciseInfo`); gives :class:`Session` (a session's state as last committed, its
exercise and the turns it has had) and :class:`TurnResult` (exactly what the student saw, plus
the contract, the action, the verdicts and the audit record).

Why a module of its own: the tutor (sessions, navigation), the pipeline's stages and the
service all name these types; none of them should have to import the tutor to do so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pedrag.kernel.rungs import rung_name
from pedrag.runtime.detect.detector import AnswerKey
from pedrag.runtime.learning.grader import GradingRules, grading_inputs
from pedrag.runtime.learning.material import Material, reader_topic
from pedrag.runtime.policy.policy_core import Contract
from pedrag.runtime.turn.state import SessionState


@dataclass(frozen=True)
class ExerciseInfo:
    id: str
    goal: str
    topic: str
    prompt: str
    key: AnswerKey | None
    exam: bool = False
    tests: tuple[tuple[str, str], ...] = ()  # programming exercises: (call, expected literal)
    material: Material | None = (
        None  # hints, worked example, ... (`pedrag.runtime.learning.material`)
    )
    practises: tuple[str, ...] = ()  # further goals in scope (the first is `goal`)
    rules: GradingRules = GradingRules()  # tolerance, units, public tests
    submissions: int = 1  # an exam's graded submissions

    @classmethod
    def from_model(cls, exercise: Any, goals: Mapping[str, Any]) -> ExerciseInfo:
        goal = goals.get(exercise.goal)
        topic = reader_topic(goal) if goal is not None else exercise.goal.replace("_", " ")
        key, tests, rules = grading_inputs(exercise)
        return cls(
            exercise.id,
            exercise.goal,
            topic,
            exercise.prompt,
            key,
            bool(exercise.exam),
            tests,
            Material.from_exercise(exercise, goal, goals),
            tuple(getattr(exercise, "practises", ()) or ()),
            rules,
            int(getattr(exercise, "submissions", 1) or 1),
        )


def info_id(info: ExerciseInfo | None) -> str | None:
    return info.id if info is not None else None


@dataclass
class Session:
    id: str
    state: SessionState
    seed: int
    exercise: ExerciseInfo | None
    meta: dict[str, Any] = field(default_factory=dict)
    results: list[TurnResult] = field(default_factory=list)
    learner: str | None = None  # a learner id: goal records persist across sessions
    # The stored version the state was read at (None: the store keeps none): the turn commits
    # only against it, so a toggle written meanwhile is never overwritten (docs/service.md).
    version: int | None = None


@dataclass(frozen=True)
class TurnResult:
    turn: int
    student: str
    tutor: str
    theory: str
    action: str
    rung: int
    contract: Contract
    detector: Mapping[str, Any]
    judge: Mapping[str, Any] | None
    fallback: bool
    revised: bool
    failures: tuple[Mapping[str, str], ...]
    audit: Mapping[str, Any]

    @property
    def ceiling(self) -> int:
        return self.contract.ceiling

    def to_dict(self) -> dict[str, Any]:
        """The ``pedrag chat --format json`` shape (more keys allowed): what a student-facing
        client may show, so no finding text and no judge reason."""
        return {
            "turn": self.turn,
            "student": self.student,
            "tutor": self.tutor,
            "action": self.action,
            "rung": rung_name(self.rung),
            "ceiling": rung_name(self.contract.ceiling),
            "theory": self.theory,
            # Verdicts and rule ids only: a finding's text or the judge's reason may quote the
            # hidden answer; they stay in the audit record, for the instructor.
            "detector": {key: self.detector.get(key) for key in ("flagged", "rule_ids")},
            "judge": (
                {key: self.judge.get(key) for key in ("verdict", "rule_id")}
                if self.judge is not None
                else None
            ),
            "fallback": self.fallback,
            "revised": self.revised,
            "failures": [dict(item) for item in self.failures],
        }
