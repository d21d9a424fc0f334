"""missing-restatement: an exercise with no `restatement:`.

Set-level check over curricula. A learner who says "I don't understand the question" is answered
at H1 with the question in other words (Polya 1945, "understanding the problem"); an exercise
without a restatement leaves the tutor only the prompt itself to repeat, which is no help.
"""

from __future__ import annotations

from collections.abc import Iterator

from pedrag.compiler.check_cache import Memo
from pedrag.compiler.checks import CheckInfo
from pedrag.dsl.diagnostics import Diagnostic, Severity
from pedrag.dsl.loader import LoadedFile

INFO = CheckInfo(
    name="missing-restatement",
    severity=Severity.WARNING,
    summary="an exercise has no restatement for a learner who does not understand the question",
    explanation=(
        "When a learner does not understand the question, the tutor restates it in other words "
        "(H1, restate the problem). The words come from the exercise's `restatement:`; without "
        "one the tutor can only repeat the prompt the learner already did not understand."
    ),
    example=(
        "kind: curriculum\n"
        "exercises:\n"
        "  - id: mult_7x8\n"
        "    prompt: What is 7 times 8?\n"
        "    answer: '56'          # no restatement:\n"
    ),
    fix="Add `restatement:`: the question in plainer words, without any method or the answer.",
    stage="set",
)


def run(files: list[LoadedFile], memo: Memo | None = None) -> Iterator[Diagnostic]:
    for loaded in files:
        curriculum = loaded.curriculum
        if curriculum is None:
            continue
        for index, exercise in enumerate(curriculum.model.exercises):
            if exercise.restatement or exercise.exam:
                continue  # an exam gives no help, restatements included
            span = loaded.positions.span(("exercises", index)) if loaded.positions else None
            yield Diagnostic(
                check=INFO.name,
                severity=INFO.severity,
                message=f"exercise `{exercise.id}` has no restatement",
                span=span,
                items=(f"exercise:{exercise.id}",),
                help=INFO.fix,
            )
