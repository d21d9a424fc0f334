"""type-error: a value or comparison of the wrong type, or a constant outside a range (front end)."""

from pedrag.compiler.checks import CheckInfo
from pedrag.dsl.diagnostics import Severity

INFO = CheckInfo(
    name="type-error",
    severity=Severity.ERROR,
    summary="e.g. comparing an enum with a number, value outside a metric's range",
    explanation=(
        "Conditions are typed: numbers compare with numbers, rungs with rungs, enum metrics with "
        "their own values (== and != only), bools with bools. Constants must lie inside the "
        "compared metric's range, arithmetic stays linear (multiply by constants only), and "
        "`compute:` appears only on computed metrics."
    ),
    example='metrics:\n  frustration: {type: float, range: [0, 1], source: inferred}\nrules:\n  - id: very_upset\n    when: "frustration > 1.5"\n    then: encourage\n',
    fix="Compare like with like and keep constants inside the metric's declared range.",
    stage="front-end",
)
