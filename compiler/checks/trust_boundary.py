"""trust-boundary: a ceiling step reads a metric the student can influence (front end)."""

from pedrag.compiler.checks import CheckInfo
from pedrag.dsl.diagnostics import Severity

INFO = CheckInfo(
    name="trust-boundary",
    severity=Severity.ERROR,
    summary="a ceiling step reads an inferred/observed/computed metric",
    explanation=(
        "The help ceiling is decided without reading student text (seed 2, P2): ceiling steps may "
        "read only `trusted` metrics (written by the system) and `classified` ones (narrow enums "
        "from the pre-classifier). An inferred metric comes from an LLM reading the student's "
        "words, so a student could talk the ceiling up."
    ),
    example='ceiling:\n  start: H4\n  steps:\n    - {when: "frustration > 0.8", set: H7}\n',
    fix="Move the condition into a rule, or base the step on a trusted metric such as mastery.",
    stage="front-end",
)
