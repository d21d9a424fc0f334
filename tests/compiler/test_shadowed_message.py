"""The shadowed-rule message says what beats the rule: priority, weight, or file order."""

from __future__ import annotations

from pedrag.compiler.config import CheckConfig
from pedrag.compiler.driver import check_text

THEORY = """\
pedrag: 1
theory: {id: s, name: S}
selection: priority
metrics:
  f: {type: float, range: [0, 1], source: inferred}
actions:
  probe: {rung: H0, priority: 5, description: P.}
  hint: {rung: H0, priority: 5, description: H.}
ceiling: {start: H4, steps: []}
rules:
RULES"""


def _shadowed(rules: str) -> list[str]:
    result = check_text(THEORY.replace("RULES", rules), "s.yaml", CheckConfig())
    return [d.message for d in result.diagnostics if d.check == "shadowed-rule"]


def test_a_rule_beaten_by_weight_is_not_said_to_be_beaten_by_priority() -> None:
    rules = (
        '  - {id: heavy, when: "f >= 0.2", then: hint, weight: 2}\n'
        '  - {id: light, when: "f >= 0.5", then: probe}\n'
    )
    assert _shadowed(rules) == [
        "rule `light` (priority 5, weight 1) never wins: rule `heavy` (equal priority, weight 2)"
        " covers every state where it is eligible"
    ]


def test_a_rule_beaten_by_weight_and_by_priority_names_both() -> None:
    rules = (
        '  - {id: heavy, when: "f >= 0.5", then: hint, weight: 2}\n'
        '  - {id: urgent, when: "f < 0.6", then: hint, priority: 9}\n'
        '  - {id: light, when: "f >= 0.3", then: probe}\n'
    )
    assert _shadowed(rules) == [
        "rule `light` (priority 5, weight 1) never wins: rules `heavy` (equal priority, weight 2),"
        " `urgent` (priority 9) together cover every state where it is eligible"
    ]
