"""misconception-matches-answer: a misconception's signal that the right answer sets off.

Set-level check over curricula. A misconception lists the wrong answers and message patterns
that signal it (`pedrag.kernel.misconceptions`, the same matcher the runtime diagnoses with). A
signal that the exercise's own answer (or an accepted spelling) sets off would name a
misconception to a learner who is right, so it is reported with the signal and the answer.
"""

from __future__ import annotations

from collections.abc import Iterator

from pedrag.compiler.check_cache import Memo
from pedrag.compiler.checks import CheckInfo
from pedrag.dsl.diagnostics import Diagnostic, Severity
from pedrag.dsl.loader import LoadedFile

INFO = CheckInfo(
    name="misconception-matches-answer",
    severity=Severity.WARNING,
    summary="a misconception's answer or pattern matches the exercise's right answer",
    explanation=(
        "The tutor names a misconception when the learner's message sets off one of its "
        "signals (`answers:` or `patterns:`). A signal that the right answer sets off would "
        "tell a learner who is right that they hold a misconception."
    ),
    example=(
        "exercises:\n"
        "  - id: mult_7x8\n"
        "    answer: '56'\n"
        "    misconceptions:\n"
        "      - {text: 'Adding instead of multiplying.', patterns: ['\\d+']}\n"
    ),
    fix="Narrow the pattern (or drop the answer) so only the wrong answers it stands for match.",
    stage="set",
)


def run(files: list[LoadedFile], memo: Memo | None = None) -> Iterator[Diagnostic]:
    for loaded in files:
        curriculum = loaded.curriculum
        if curriculum is None:
            continue
        for index, exercise in enumerate(curriculum.model.exercises):
            right = [exercise.answer, *exercise.accept]
            for number, misconception in enumerate(exercise.misconceptions):
                signals = misconception.signals
                hits = [(answer, signals.matched_by(answer)) for answer in right]
                found = next(((a, s) for a, s in hits if s is not None), None)
                if found is None:
                    continue
                answer, signal = found
                path = ("exercises", index, "misconceptions", number)
                span = loaded.positions.span(path) if loaded.positions else None
                yield Diagnostic(
                    check=INFO.name,
                    severity=INFO.severity,
                    message=(
                        f"misconception {number + 1} of exercise `{exercise.id}` is signalled "
                        f"by `{signal}`, which the right answer {answer!r} sets off"
                    ),
                    span=span,
                    items=(f"exercise:{exercise.id}",),
                    help=INFO.fix,
                )
