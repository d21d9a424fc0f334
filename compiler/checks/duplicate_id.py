"""duplicate-id: two items of one kind share an id (front end)."""

from pedrag.compiler.checks import CheckInfo
from pedrag.dsl.diagnostics import Severity

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
