"""Input that used to kill the checker (issue 15): alias bombs, huge or infinite numbers, deep
nesting. Each is one clear diagnostic with a position, never a traceback or a MemoryError."""

from __future__ import annotations

import pytest

from pedrag.dsl.loader import load_text

BASE = """\
pedrag: 1
theory: {{id: t, name: T}}
metrics:
  frustration: {{type: float, range: [0, 1], source: inferred}}
  count: {{type: int, range: [0, {high}], default: {default}, source: observed}}
actions:
  encourage: {{rung: H0, priority: 5, description: Encourage.}}
rules:
  - {{id: always, when: "frustration >= 0", then: encourage}}
ceiling: {{start: H4, steps: []}}
"""

BOMB = "pedrag: 1\na: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + n)}: &{chr(98 + n)} [{', '.join([f'*{chr(97 + n)}'] * 9)}]\n" for n in range(7)
)


def messages(text: str) -> list[str]:
    loaded = load_text(text, "t.yaml")
    return [d.message for d in loaded.diagnostics]


def test_an_alias_bomb_is_one_error_not_a_memory_error() -> None:
    assert len(BOMB) < 500
    found = messages(BOMB)
    assert found and "expands to more than 200,000 values" in found[0]


@pytest.mark.parametrize(
    "high, default, expected",
    [
        ("9" * 400, "0", "is too large"),
        ("10", ".inf", "`.inf` is not a finite number"),
        ("10", ".nan", "`.nan` is not a finite number"),
        ("1e400", "0", "range bounds must be finite numbers"),  # a string YAML reads
        ("1.0e+400", "0", "is not a finite number"),
    ],
)
def test_numbers_out_of_bounds_are_diagnostics(high: str, default: str, expected: str) -> None:
    found = messages(BASE.format(high=high, default=default))
    assert any(expected in message for message in found), found


def test_a_sane_file_still_loads() -> None:
    assert messages(BASE.format(high="10", default="0")) == []


def test_deep_nesting_is_one_error() -> None:
    found = messages("pedrag: 1\ntheory: " + "[" * 150 + "]" * 150 + "\n")
    assert found and "levels of nesting" in found[0]
