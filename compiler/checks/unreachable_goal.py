"""unreachable-goal: a curriculum goal no learner can master, and the goals locked behind it.

Set-level check. Takes each loaded curriculum; gives a diagnostic for every goal whose mastery
cannot reach its `mastery_threshold` with the practice exercises it has — none at all, or too
few for its knowledge-tracing parameters (with the kernel's BKT update,
`pedrag.kernel.knowledge_tracing`, the one the runtime traces learners with) — and for every
goal that requires such a goal, directly or through others: it is locked for every learner.
Why: such a curriculum cannot be finished, and the runtime only finds out when a learner's
`--exercise next` finds nothing left to practise.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pedrag.compiler.check_cache import Memo
from pedrag.compiler.checks import CheckInfo
from pedrag.dsl.diagnostics import Diagnostic, Severity
from pedrag.dsl.loader import LoadedFile
from pedrag.kernel.knowledge_tracing import Tracing, answers_needed, best_mastery

INFO = CheckInfo(
    name="unreachable-goal",
    severity=Severity.ERROR,
    summary="a goal's exercises cannot take mastery to its threshold, or it requires such a goal",
    explanation=(
        "A goal is mastered when the learner's traced mastery (Bayesian Knowledge Tracing with "
        "the goal's `knowledge_tracing:`) reaches its `mastery_threshold`. Each practice "
        "exercise (not an exam) is one graded opportunity, so a goal with no exercises, or "
        "with fewer than its parameters need even when every answer is right, can never be "
        "mastered, and every goal that requires it stays locked for every learner."
    ),
    example=(
        "kind: curriculum\n"
        "goals:\n"
        "  - {id: fractions, mastery_threshold: 0.8}\n"
        "  - {id: decimals, requires: [fractions]}\n"
        "exercises:\n"
        "  - {id: half, goal: fractions, prompt: What is half of 10?, answer: '5'}\n"
    ),
    fix="Add practice exercises to the goal (the message says how many it needs), or lower its "
    "`mastery_threshold` or raise `knowledge_tracing.learn`.",
    stage="set",
)


def run(files: list[LoadedFile], memo: Memo | None = None) -> Iterator[Diagnostic]:
    """The check over each curriculum (cheap arithmetic: `memo` is not needed)."""
    for loaded in files:
        curriculum = loaded.curriculum
        if curriculum is None:
            continue
        goals = curriculum.model.goals
        practice = {goal.id: 0 for goal in goals}
        for exercise in curriculum.model.exercises:
            if not exercise.exam and exercise.goal in practice:
                practice[exercise.goal] += 1
        unreachable: dict[str, str] = {}
        for goal in goals:
            problem = _problem(goal, practice[goal.id])
            if problem is not None:
                unreachable[goal.id] = problem
                yield _diagnostic(curriculum, goal.id, problem, {"exercises": practice[goal.id]})
        for goal in goals:
            if goal.id in unreachable:
                continue
            blockers = _blocked_by(goal.id, goals, unreachable)
            if blockers:
                names = ", ".join(f"`{g}`" for g in blockers)
                message = (
                    f"goal `{goal.id}` is locked for every learner: it requires {names}, which "
                    f"can never be mastered"
                )
                yield _diagnostic(curriculum, goal.id, message, {"blocked_by": blockers})


def _problem(goal: Any, exercises: int) -> str | None:
    goal_id = goal.id
    threshold = float(goal.mastery_threshold)
    tracing = Tracing.of(getattr(goal, "knowledge_tracing", None))
    needed = answers_needed(tracing, threshold)
    if needed is not None and exercises >= needed:
        return None
    if exercises == 0 and needed != 0:
        need = (
            f"it needs {needed} correct answers"
            if needed is not None
            else "no number of them reaches it"
        )
        return (
            f"goal `{goal_id}` has no practice exercises, so its mastery can never reach its "
            f"threshold {threshold:.2f} ({need})"
        )
    best = best_mastery(tracing, exercises)
    plural = "exercise" if exercises == 1 else "exercises"
    need = (
        f"it needs at least {needed} correct answers"
        if needed is not None
        else "no number of exercises reaches it with these knowledge-tracing parameters"
    )
    return (
        f"goal `{goal_id}` tops out at mastery {best:.2f} after its {exercises} practice "
        f"{plural}, below its threshold {threshold:.2f}: {need}"
    )


def _blocked_by(goal_id: str, goals: Sequence[Any], unreachable: dict[str, str]) -> list[str]:
    """The unreachable goals ``goal_id`` requires, directly or through other goals."""
    requires = {goal.id: list(goal.requires) for goal in goals}
    found: list[str] = []
    seen: set[str] = set()
    stack = list(requires.get(goal_id, ()))
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if current in unreachable:
            found.append(current)
        else:
            stack.extend(requires.get(current, ()))
    return sorted(found)


def _diagnostic(curriculum: Any, goal_id: str, message: str, data: dict[str, Any]) -> Diagnostic:
    spans = getattr(curriculum, "goal_spans", {})
    return Diagnostic(
        check=INFO.name,
        severity=INFO.severity,
        message=message,
        span=spans.get(goal_id),
        items=(f"goal:{goal_id}",),
        help=INFO.fix,
        data=data,
    )
