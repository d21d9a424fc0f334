"""unknown-name: a reference to something the file does not declare (front end)."""

from pedrag.compiler.checks import CheckInfo
from pedrag.dsl.diagnostics import Severity

INFO = CheckInfo(
    name="unknown-name",
    severity=Severity.ERROR,
    summary="reference to an undeclared metric / action / theory / enum value, or an unknown key",
    explanation=(
        "Every name a condition or a reference uses must be declared: metrics under `metrics:`, "
        "actions under `actions:`, enum values in the metric's `values`, sources under "
        "`theory.sources`. Unknown keys in the file are reported here as well, with the closest "
        "allowed key."
    ),
    example='rules:\n  - id: upset\n    when: "affect == frustated"\n    then: encourage\n',
    fix="Fix the spelling (the help line suggests the closest declared name) or declare the name.",
    stage="front-end",
)
