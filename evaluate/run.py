"""The grid runner: tutor configurations x personas x exercises x repetitions, seeded.

Evaluation, the driver behind ``pedrag evaluate``. Takes a :class:`Grid`, the theory set and
curriculum, optionally a backend (``None``: offline) and a learner model; gives an
:class:`EvaluationResult` — every :class:`~pedrag.evaluate.records.SessionRecord`, ready for
metrics, gates and reports.

One session: the learner writes, the configuration replies, the evaluator judges the reply
against the theory's written principles (:mod:`pedrag.evaluate.evaluator`), the evaluator's own
answer check says whether the answer reached the learner (G1), and the learner reads the reply
through the independent rubric and updates its hidden knowledge. **Every arm ends a session
under the same rule**: the learner has reached mastery (every step of the goal known: what the
post-test tests), the learner gives up, or ``turns`` turns have passed. A correct practice
answer — a copied one included — does not end a session; it is recorded (``solved_turn``).
Then the **post-test**: the learner answers a held-out exercise of the same goal, graded by the
evaluator's answer check; mastery is that verdict alone.

After the grid, the **exam probe** (gate G4): the adversarial personas on every exercise with
the exam lockdown on, one repetition, at most six turns, for every configuration.

Reproducible and paired: a session's seed is derived from the grid seed, persona, exercise and
repetition (not the configuration), so the arms meet the same learners — the same prior
knowledge draw — and comparisons are paired by learner. With ``stochastic=False`` every
repetition reuses one seed, so the run is a deterministic replication and the report says so.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pedrag.evaluate.answer_check import is_correct, reveals
from pedrag.evaluate.configs import CONFIG_NAMES, TutorConfig, make_config
from pedrag.evaluate.evaluator import (
    EvaluationItem,
    Evaluator,
    EvaluatorFailure,
    LLMEvaluator,
    RubricEvaluator,
    principles_of,
)
from pedrag.evaluate.learners import (
    ADVERSARIAL,
    DEFAULT_MODEL,
    PERSONA_NAMES,
    LearningModel,
    distractors_for,
    make_learner,
)
from pedrag.evaluate.records import ExerciseCase, SessionRecord, TurnRecord
from pedrag.evaluate.results import Cell, ResultsFile
from pedrag.evaluate.rung_rubric import read_reply

DEFAULT_TURNS = 20
DEFAULT_REPS = 2
EXAM_PROBE_TURNS = 6


@dataclass(frozen=True)
class Grid:
    configs: tuple[str, ...] = CONFIG_NAMES
    personas: tuple[str, ...] = PERSONA_NAMES
    exercises: tuple[str, ...] = ()
    reps: int = DEFAULT_REPS
    turns: int = DEFAULT_TURNS
    seed: int = 0
    theory: str = "socratic"
    exam_probe: bool = True
    stochastic: bool = True

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
            "stochastic": self.stochastic,
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
    model: LearningModel = DEFAULT_MODEL


def held_out(exercise: ExerciseCase, exercises: dict[str, ExerciseCase]) -> ExerciseCase | None:
    """The post-test item: the first other (non-exam) exercise of the same goal."""
    return next(
        (
            case
            for case in exercises.values()
            if case.goal == exercise.goal and case.id != exercise.id and not case.exam
        ),
        None,
    )


def first_by_topic(exercises: dict[str, ExerciseCase]) -> dict[str, str]:
    """Topic -> the id of its first exercise that has a held-out item of its goal for the
    post-test (else its first exercise), in curriculum order."""
    chosen: dict[str, str] = {}
    testable: dict[str, str] = {}
    for case in exercises.values():
        if case.exam:
            continue
        chosen.setdefault(case.topic, case.id)
        if held_out(case, exercises) is not None:
            testable.setdefault(case.topic, case.id)
    return {topic: testable.get(topic, first) for topic, first in chosen.items()}


def default_exercises(exercises: dict[str, ExerciseCase]) -> tuple[str, ...]:
    """One exercise per topic (seed 1: four topics across four domains), each with a
    held-out item for the post-test."""
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

    @property
    def cell(self) -> Cell:
        return (self.config, self.persona, self.exercise, self.rep, self.exam)


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
    theories: Any,
    curriculum: Any,
    *,
    backend: Any = None,
    student_backend: Any = None,
    evaluator_backend: Any = None,
    progress: Callable[[int, int, str], None] | None = None,
    tutors: dict[str, TutorConfig] | None = None,
    student_max_tokens: int = 120,
    results: ResultsFile | None = None,
    model: LearningModel = DEFAULT_MODEL,
) -> EvaluationResult:
    """Run every session of ``grid``. ``backend`` serves the tutors (``None``: the offline
    simulated model); ``student_backend`` / ``evaluator_backend`` switch the learner's voice
    and the evaluator to the LLM roles. ``tutors`` supplies configurations by name (tests
    use it for tutors that always reveal or never help). ``model`` is the learner model's
    assumptions (:class:`~pedrag.evaluate.learners.LearningModel`). ``results`` resumes a run: sessions
    it already holds are taken from it, each new one is appended as it finishes.
    ``progress(done, total, label)`` is called after each session."""
    exercises = ExerciseCase.from_curriculum(curriculum)
    if not grid.exercises:
        grid = replace(grid, exercises=default_exercises(exercises))
    configs = {
        name: (tutors or {}).get(name)
        or make_config(name, theories, grid.theory, curriculum, exercises, backend)
        for name in grid.configs
    }
    evaluator: Evaluator = (
        LLMEvaluator(evaluator_backend) if evaluator_backend is not None else RubricEvaluator()
    )
    jobs = plan(grid)
    sessions: list[SessionRecord] = []
    for done, job in enumerate(jobs, start=1):
        saved = None if results is None else results.done.get(job.cell)
        if saved is not None:
            sessions.append(saved)
            if progress is not None:
                progress(done, len(jobs), f"{job.config} / {job.persona} / {job.exercise} (saved)")
            continue
        sessions.append(
            run_session(
                configs[job.config],
                exercises[job.exercise],
                job,
                grid,
                theories,
                curriculum,
                exercises,
                evaluator,
                student_backend,
                student_max_tokens=student_max_tokens,
                model=model,
            )
        )
        if results is not None:
            results.append(sessions[-1])
        if progress is not None:
            progress(done, len(jobs), f"{job.config} / {job.persona} / {job.exercise}")
    return EvaluationResult(
        grid=grid,
        sessions=sessions,
        exercises=exercises,
        backend="offline" if backend is None else "endpoint",
        student="hidden-state" if student_backend is None else "hidden-state, LLM-voiced",
        evaluator=evaluator.name,
        model=model,
    )


def run_session(
    config: TutorConfig,
    exercise: ExerciseCase,
    job: _Job,
    grid: Grid,
    theories: Any,
    curriculum: Any,
    exercises: dict[str, ExerciseCase],
    evaluator: Evaluator,
    student_backend: Any,
    *,
    student_max_tokens: int = 120,
    model: LearningModel = DEFAULT_MODEL,
) -> SessionRecord:
    seed = session_seed(grid.seed, job.persona, job.exercise, job.rep if grid.stochastic else 0)
    session_id = f"{job.config}-{job.persona}-{job.exercise}-{job.rep}{'-exam' if job.exam else ''}"
    tutor_session = config.start(exercise, seed=seed, exam=job.exam, session_id=session_id)
    learner = make_learner(
        job.persona,
        exercise,
        seed=seed,
        backend=student_backend,
        distractors=distractors_for(exercise, exercises),
        max_tokens=student_max_tokens,
        model=model,
        exam=job.exam,
    )
    initial = learner.understanding
    records: list[TurnRecord] = []
    earlier: list[tuple[str, str]] = []
    solved_turn: int | None = None
    end = "turn-limit"
    theory = grid.theory
    for index in range(1, job.turns + 1):
        message = learner.next_message()
        move = learner.last
        intent = move.intent if move is not None else "other"
        student_failure = learner.failure
        correct = is_correct(message, exercise) if move and move.candidate else False
        if correct and solved_turn is None and not job.exam:
            solved_turn = index
        turn = config.turn(tutor_session, message)
        evaluation = None
        unevaluated: str | None = None
        principles = principles_of(theories, turn.theory if turn.theory in theories else theory)
        try:
            evaluation = evaluator.evaluate(
                EvaluationItem(
                    turn.theory,
                    principles,
                    exercise,
                    message,
                    turn.reply,
                    tuple(earlier),
                    exam=job.exam,
                )
            )
        except EvaluatorFailure as error:
            unevaluated = str(error)
        revealed = reveals(turn.reply, exercise, message)
        learner.after_grade("correct" if correct else "wrong")
        learner.observe(read_reply(turn.reply, exercise, message), turn.reply)
        earlier.append((message, turn.reply))
        records.append(
            TurnRecord(
                index=index,
                student=message,
                tutor=turn,
                evaluation=evaluation,
                revealed=revealed,
                understanding=learner.understanding,
                unevaluated_reason=unevaluated,
                student_failure=student_failure,
                intent=intent,
                graded="correct" if correct else ("wrong" if move and move.candidate else "none"),
            )
        )
        theory = turn.theory if turn.theory in theories else theory
        if learner.gave_up:
            end = "gave-up"
            break
        if learner.knows_all and not job.exam:
            end = "mastery"  # seed 1, §4.2: sessions end at mastery, the same for every arm
            break
    post = None if job.exam else held_out(exercise, exercises)
    post_answer = post_verdict = None
    if post is not None:
        post_answer = learner.post_test_answer(post)
        post_verdict = "correct" if is_correct(post_answer, post) else "wrong"
    return SessionRecord(
        config=job.config,
        persona=job.persona,
        exercise=exercise.id,
        topic=exercise.topic,
        domain=exercise.domain,
        rep=job.rep,
        seed=seed,
        turns=tuple(records),
        solved_turn=solved_turn,
        gave_up=end == "gave-up",
        final_understanding=learner.understanding,
        initial_understanding=initial,
        exam=job.exam,
        supervised=config.supervised,
        post_exercise=None if post is None else post.id,
        post_answer=post_answer,
        post_verdict=post_verdict,
        end=end,
    )
