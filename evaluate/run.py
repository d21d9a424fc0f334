"""The grid runner: tutor configurations x personas x exercises x repetitions, seeded.

Evaluation, the driver behind ``pedrag evaluate``. Takes a :class:`Grid`, the theory set and
curriculum, and optionally a backend (``None``: offline); gives an :class:`EvaluationResult` —
every :class:`~pedrag.evaluate.records.SessionRecord`, ready for metrics, gates and reports.

One session: the student writes, the configuration replies, the evaluator judges the reply
against the reference contract, the deterministic detector checks whether the answer reached
the student (G1), and the student updates its understanding. It ends at mastery
(understanding >= 0.8), when the student gives up, or after ``turns`` turns (seed 1, §4.2).

After the grid, the **exam probe** (gate G4): the adversarial personas on every exercise with
the exam lockdown on, one repetition, at most six turns, for every configuration.

Reproducible: a session's seed is derived from the grid seed, persona, exercise and
repetition (not the configuration, so the arms meet the same student draws, seed 1's
"fixed random seeds"), and nothing else varies offline. Same grid, same report.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pedrag.evaluate.configs import CONFIG_NAMES, TutorConfig, make_config
from pedrag.evaluate.evaluator import (
    EvaluationItem,
    Evaluator,
    EvaluatorFailure,
    LLMEvaluator,
    ReferenceTracker,
    RubricEvaluator,
    detect_reveal,
)
from pedrag.evaluate.records import ExerciseCase, SessionRecord, TurnRecord
from pedrag.evaluate.students import ADVERSARIAL, MASTERY_THRESHOLD, make_student
from pedrag.runtime.llm import LLMBackend
from pedrag.runtime.personas import PERSONAS
from pedrag.runtime.theory_set import TheorySet

DEFAULT_TURNS = 20
DEFAULT_REPS = 2
EXAM_PROBE_TURNS = 6


@dataclass(frozen=True)
class Grid:
    configs: tuple[str, ...] = CONFIG_NAMES
    personas: tuple[str, ...] = tuple(PERSONAS)
    exercises: tuple[str, ...] = ()
    reps: int = DEFAULT_REPS
    turns: int = DEFAULT_TURNS
    seed: int = 0
    theory: str = "socratic"
    exam_probe: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "configs": list(self.configs),
            "personas": list(self.personas),
            "exercises": list(self.exercises),
            "reps": self.reps,
            "turns": self.turns,
            "seed": self.seed,
            "theory": self.theory,
            "exam_probe": self.exam_probe,
        }


@dataclass
class EvaluationResult:
    grid: Grid
    sessions: list[SessionRecord]
    exercises: dict[str, ExerciseCase]
    backend: str = "offline"
    student: str = "scripted"
    evaluator: str = "rubric"
    usage: dict[str, Any] = field(default_factory=dict)


def first_by_topic(exercises: dict[str, ExerciseCase]) -> dict[str, str]:
    """Topic -> the id of its first exercise, in curriculum order."""
    chosen: dict[str, str] = {}
    for case in exercises.values():
        chosen.setdefault(case.topic, case.id)
    return chosen


def default_exercises(exercises: dict[str, ExerciseCase]) -> tuple[str, ...]:
    """One exercise per topic, the first of each (seed 1: four topics across four domains)."""
    return tuple(first_by_topic(exercises).values())


def exercises_for_topics(
    exercises: dict[str, ExerciseCase], topics: Sequence[str]
) -> tuple[str, ...]:
    """The first exercise of each named topic; ``KeyError`` names an unknown topic."""
    first = first_by_topic(exercises)
    missing = [topic for topic in topics if topic not in first]
    if missing:
        raise KeyError(f"unknown topic {missing[0]!r} (known: {', '.join(first)})")
    return tuple(first[topic] for topic in topics)


def session_seed(seed: int, persona: str, exercise: str, rep: int) -> int:
    digest = hashlib.sha256(f"{seed}|{persona}|{exercise}|{rep}".encode()).hexdigest()
    return int(digest[:8], 16)


@dataclass(frozen=True)
class _Job:
    config: str
    persona: str
    exercise: str
    rep: int
    turns: int
    exam: bool


def plan(grid: Grid) -> list[_Job]:
    """Every session the grid runs, the exam probe last."""
    jobs = [
        _Job(config, persona, exercise, rep, grid.turns, False)
        for config in grid.configs
        for persona in grid.personas
        for exercise in grid.exercises
        for rep in range(grid.reps)
    ]
    if grid.exam_probe:
        jobs += [
            _Job(config, persona, exercise, 0, min(grid.turns, EXAM_PROBE_TURNS), True)
            for config in grid.configs
            for persona in sorted(ADVERSARIAL)
            for exercise in grid.exercises
        ]
    return jobs


def run_grid(
    grid: Grid,
    theories: TheorySet,
    curriculum: Any,
    *,
    backend: LLMBackend | None = None,
    student_backend: LLMBackend | None = None,
    evaluator_backend: LLMBackend | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> EvaluationResult:
    """Run every session of ``grid``. ``backend`` serves the tutors (``None``: the offline
    simulated model); ``student_backend`` / ``evaluator_backend`` switch the student and the
    evaluator to the LLM roles. ``progress(done, total, label)`` is called after each session."""
    exercises = ExerciseCase.from_curriculum(curriculum)
    if not grid.exercises:
        grid = replace(grid, exercises=default_exercises(exercises))
    configs = {
        name: make_config(name, theories, grid.theory, curriculum, exercises, backend)
        for name in grid.configs
    }
    evaluator: Evaluator = (
        LLMEvaluator(evaluator_backend, theories)
        if evaluator_backend is not None
        else RubricEvaluator(theories)
    )
    jobs = plan(grid)
    sessions: list[SessionRecord] = []
    for done, job in enumerate(jobs, start=1):
        sessions.append(
            run_session(
                configs[job.config],
                exercises[job.exercise],
                job,
                grid.seed,
                theories,
                evaluator,
                student_backend,
            )
        )
        if progress is not None:
            progress(done, len(jobs), f"{job.config} / {job.persona} / {job.exercise}")
    return EvaluationResult(
        grid=grid,
        sessions=sessions,
        exercises=exercises,
        backend="offline" if backend is None else "endpoint",
        student="scripted" if student_backend is None else "llm",
        evaluator=evaluator.name,
    )


def run_session(
    config: TutorConfig,
    exercise: ExerciseCase,
    job: _Job,
    grid_seed: int,
    theories: TheorySet,
    evaluator: Evaluator,
    student_backend: LLMBackend | None,
) -> SessionRecord:
    seed = session_seed(grid_seed, job.persona, job.exercise, job.rep)
    session_id = f"{job.config}-{job.persona}-{job.exercise}-{job.rep}{'-exam' if job.exam else ''}"
    tutor_session = config.start(exercise, seed=seed, exam=job.exam, session_id=session_id)
    student = make_student(job.persona, exercise, job.turns, student_backend)
    reference = ReferenceTracker(theories, exercise.key, exam=job.exam)
    records: list[TurnRecord] = []
    mastery_turn: int | None = None
    for index in range(1, job.turns + 1):
        message = student.next_message()
        student_failure = student.failure
        turn = config.turn(tutor_session, message)
        contract = reference.observe(turn.theory, message)
        evaluation = None
        unevaluated: str | None = None
        try:
            evaluation = evaluator.evaluate(
                EvaluationItem(turn.theory, exercise, message, turn.reply, contract)
            )
        except EvaluatorFailure as error:
            unevaluated = str(error)
        revealed = detect_reveal(turn.reply, exercise.key, message, contract.ceiling)
        student.observe(turn.reply, evaluation)
        records.append(
            TurnRecord(
                index=index,
                student=message,
                tutor=turn,
                evaluation=evaluation,
                revealed=revealed,
                understanding=student.understanding,
                unevaluated_reason=unevaluated,
                student_failure=student_failure,
            )
        )
        if not job.exam and student.understanding >= MASTERY_THRESHOLD:
            mastery_turn = index
            break
        if student.gave_up:
            break
    return SessionRecord(
        config=job.config,
        persona=job.persona,
        exercise=exercise.id,
        topic=exercise.topic,
        domain=exercise.domain,
        rep=job.rep,
        seed=seed,
        turns=tuple(records),
        mastery_reached=mastery_turn is not None,
        mastery_turn=mastery_turn,
        gave_up=student.gave_up and mastery_turn is None,
        final_understanding=student.understanding,
        exam=job.exam,
        supervised=config.supervised,
    )
