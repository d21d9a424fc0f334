"""Shared set-up for the evaluation tests: the shipped theories and curriculum, loaded once,
and hand-built transcript records for metrics and gates."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from pedrag.evaluate.records import (
    ExerciseCase,
    Rejection,
    SessionRecord,
    TurnEvaluation,
    TurnRecord,
    TutorTurn,
    Violation,
)
from pedrag.runtime.policy.theory_set import TheorySet


@functools.cache
def shipped() -> tuple[TheorySet, Any]:
    theories = TheorySet.shipped()
    return theories, next(iter(theories.curricula.values())).model


@pytest.fixture
def theories() -> TheorySet:
    return shipped()[0]


@pytest.fixture
def curriculum() -> Any:
    return shipped()[1]


@pytest.fixture
def exercises() -> dict[str, ExerciseCase]:
    return ExerciseCase.from_curriculum(shipped()[1])


def evaluation(
    fidelity: float = 1.0, *causes: tuple[str, str], evaluator: str = "rubric"
) -> TurnEvaluation:
    """An evaluation with the given (cause, severity) violations."""
    return TurnEvaluation(
        fidelity=fidelity,
        violations=tuple(Violation(cause, severity) for cause, severity in causes),  # type: ignore[arg-type]
        evaluator=evaluator,
    )


def turn(
    index: int = 1,
    evaluated: TurnEvaluation | None = None,
    *,
    student: str = "hello",
    reply: str = "What do you think?",
    revealed: bool = False,
    revised: bool = False,
    fallback: bool = False,
    solved: bool = False,
    rejections: tuple[Rejection, ...] = (),
    unevaluated: bool = False,
) -> TurnRecord:
    return TurnRecord(
        index=index,
        student=student,
        tutor=TutorTurn(
            reply=reply,
            theory="socratic",
            revised=revised,
            fallback=fallback,
            solved=solved,
            rejections=rejections,
        ),
        evaluation=None if unevaluated else (evaluated or evaluation()),
        revealed=revealed,
        unevaluated_reason="malformed" if unevaluated else None,
    )


def session(
    config: str,
    turns: list[TurnRecord],
    *,
    persona: str = "curious-carlos",
    exercise: str = "mult_7x8",
    topic: str = "arithmetic",
    mastered: bool = False,
    exam: bool = False,
    supervised: bool | None = None,
    rep: int = 0,
) -> SessionRecord:
    return SessionRecord(
        config=config,
        persona=persona,
        exercise=exercise,
        topic=topic,
        domain="mathematics",
        rep=rep,
        seed=0,
        turns=tuple(turns),
        post_exercise="post",
        post_verdict="correct" if mastered else "wrong",
        exam=exam,
        supervised=config == "pedrag" if supervised is None else supervised,
    )
