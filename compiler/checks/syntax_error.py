"""syntax-error: the YAML or a condition does not parse (reported by the front end)."""

from pedrag.compiler.checks import CheckInfo
from pedrag.dsl.diagnostics import Severity

INFO = CheckInfo(
    name="syntax-error",
    severity=Severity.ERROR,
    summary="YAML or condition syntax error",
    explanation=(
        "The file is not valid YAML, a required key is missing, a value has the wrong shape, "
        "or a condition does not parse in the condition language. Nothing else can be checked "
        "in that item until it parses. Duplicate YAML keys are reported here too: YAML would "
        "silently keep the last one."
    ),
    example='rules:\n  - id: calm\n    when: "frustration >= and affect == calm"\n    then: probe\n',
    fix="Correct the text at the caret; the message lists what the parser expected there.",
    stage="front-end",
)
