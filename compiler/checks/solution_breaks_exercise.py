"""solution-breaks-exercise: a programming exercise whose worked solution does what the
exercise forbids, or lacks the loop it requires.

Set-level check over curricula. `forbid:` and `require:` are graded on every learner's code
(`pedrag.kernel.code_rules`, the same rules the grader applies); a solution that breaks them
would be graded wrong if a learner handed it in, and the tutor would show as the model answer
code the exercise does not accept.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pedrag.compiler.check_cache import Memo
from pedrag.compiler.checks import CheckInfo
from pedrag.dsl.diagnostics import Diagnostic, Severity
from pedrag.dsl.loader import LoadedFile
from pedrag.kernel.code_rules import CodeTooDeep, forbidden_use, missing_structure

INFO = CheckInfo(
    name="solution-breaks-exercise",
    severity=Severity.ERROR,
    summary="a programming exercise's solution uses what `forbid:` lists or lacks a `require:` loop",
    explanation=(
        "A programming exercise's `forbid:` names what a learner's code must not use and its "
        "`require:` the loops it must contain; the grader refuses code that breaks either, "
        "whatever its tests say. The exercise's own `solution:` is held to the same rules: one "
        "that breaks them would be graded wrong if a learner handed it in, and the tutor would "
        "show it as the answer."
    ),
    example=(
        "exercises:\n"
        "  - id: sum_list_loop\n"
        "    forbid: [sum]\n"
        "    require: [for]\n"
        "    solution: |\n"
        "      def total(nums):\n"
        "          return sum(nums)\n"
    ),
    fix="Rewrite the solution as the exercise asks, or change `forbid:` / `require:`.",
    stage="set",
)


def run(files: list[LoadedFile], memo: Memo | None = None) -> Iterator[Diagnostic]:
    for loaded in files:
        curriculum = loaded.curriculum
        if curriculum is None:
            continue
        for index, exercise in enumerate(curriculum.model.exercises):
            if not exercise.tests or not exercise.solution:
                continue  # only code is graded by `forbid:` and `require:`
            broken = _broken(exercise.solution, exercise.forbid, exercise.require)
            if broken is None:
                continue
            path = ("exercises", index, "solution")
            span = loaded.positions.span(path) if loaded.positions else None
            yield Diagnostic(
                check=INFO.name,
                severity=INFO.severity,
                message=f"the solution of exercise `{exercise.id}` {broken}",
                span=span,
                items=(f"exercise:{exercise.id}",),
                help=INFO.fix,
            )


def _broken(solution: str, forbid: Sequence[str], require: Sequence[str]) -> str | None:
    """What the solution does that its exercise does not allow, or None."""
    try:
        used = forbidden_use(solution, forbid)
        missing = missing_structure(solution, require)
    except CodeTooDeep as too_deep:  # a learner's code this deep is not graded either
        return f"cannot be read: {too_deep}"
    if used is not None:
        return f"uses {used}, which its `forbid:` list does not allow"
    if missing is not None:
        return f"has no {missing} doing the work, which its `require:` asks for"
    return None
