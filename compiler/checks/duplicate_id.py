"""duplicate-id: two items of one kind share an id (front end, and across the checked set)."""

from __future__ import annotations

from collections.abc import Iterator

from pedrag.compiler.checks import CheckInfo
from pedrag.dsl.diagnostics import Diagnostic, Severity
from pedrag.dsl.loader import LoadedFile

INFO = CheckInfo(
    name="duplicate-id",
    severity=Severity.ERROR,
    summary="two rules, invariants, principles, goals or theories share an id",
    explanation=(
        "Ids name items in diagnostics, audit records and `ignore:` lists, so they must be unique: "
        "rule, invariant, principle and source ids within a file, theory ids across a checked set."
    ),
    example='rules:\n  - {id: calm, when: "affect == calm", then: probe}\n  - {id: calm, when: "affect == confused", then: hint}\n',
    fix="Rename one of the items.",
    stage="front-end",
)


def run(files: list[LoadedFile]) -> Iterator[Diagnostic]:
    """Theory ids (and curriculum ids) repeated across the checked set; ids within one file
    are checked by the front end as it resolves the file."""
    for kind in ("theory", "curriculum"):
        first: dict[str, LoadedFile] = {}
        for loaded in files:
            document = loaded.theory if kind == "theory" else loaded.curriculum
            if document is None:
                continue
            if document.id not in first:
                first[document.id] = loaded
                continue
            other = first[document.id]
            other_document = other.theory if kind == "theory" else other.curriculum
            where = other_document.span if other_document is not None else None
            yield Diagnostic(
                check=INFO.name,
                severity=INFO.severity,
                message=f"{kind} id `{document.id}` is already used by {where or other.path}",
                span=document.span,
                items=(f"{kind}:{document.id}",),
                help=f"{kind} ids must be unique across a checked set (switch targets and "
                "sessions name them); rename one of them",
            )
