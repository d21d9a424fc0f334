"""Diagnostics speak the format's language: did-you-mean for slips from other languages, a
help line on every type error, no pydantic wording and no 0-based positions."""

from __future__ import annotations

import re

import pytest

from pedrag.dsl.loader import load_text

HEAD = """\
pedrag: 1
theory: {id: t, name: T}
metrics:
  frustration: {type: float, range: [0, 1], source: inferred}
  exam_active: {type: bool, source: trusted}
  affect: {type: enum, values: [calm, confused], source: inferred}
actions:
  encourage: {rung: H0, priority: 5, description: E.}
"""


def _condition(condition: str) -> list[tuple[str, str, str | None, int, int]]:
    text = HEAD + f"rules:\n  - id: r\n    when: '{condition}'\n    then: encourage\n"
    loaded = load_text(text, "t.yaml")
    return [
        (
            d.check,
            d.message,
            d.help,
            d.span.column if d.span else 0,
            d.span.end_column if d.span else 0,
        )
        for d in loaded.diagnostics
    ]


@pytest.mark.parametrize(
    ("condition", "written", "meant"),
    [
        ("frustration = 0.5", "=", "=="),
        ("frustration > 0.5 && exam_active", "&&", "and"),
        ("frustration > 0.5 || exam_active", "||", "or"),
        ("!exam_active", "!", "not"),
        ("frustration > 0.1 and !exam_active", "!", "not"),
        ("exam_active & frustration > 0.1", "&", "and"),
        ("frustration => 0.5", "=>", ">="),
        ("frustration =< 0.5", "=<", "<="),
        ("frustration <> 0.5", "<>", "!="),
    ],
)
def test_operators_from_other_languages_get_a_did_you_mean(
    condition: str, written: str, meant: str
) -> None:
    ((check, message, help, column, end_column),) = _condition(condition)
    assert check == "syntax-error"
    assert f"`{written}`" in message
    assert help == f"did you mean `{meant}`?"
    # The caret covers exactly the slip: `when: '` puts the condition at column 12.
    start = condition.index(written)
    assert (column, end_column) == (12 + start, 12 + start + len(written))


def test_correct_operators_are_not_taken_for_slips() -> None:
    for condition in (
        "frustration != 0.5",
        "frustration >= 0.5",
        "frustration <= 0.5 or not exam_active",
    ):
        assert _condition(condition) == []


@pytest.mark.parametrize(
    ("condition", "help"),
    [
        ("exam_active == 1", "did you mean `exam_active`?"),
        ("exam_active == 0", "did you mean `not exam_active`?"),
        ("exam_active != 1", "did you mean `not exam_active`?"),
        ('frustration > "0.5"', "did you mean the number `0.5`? remove the quotes"),
        ('affect == "calm"', "did you mean `affect == calm`?"),
        ("affect == 3", "compare `affect` with one of its values: calm, confused"),
    ],
)
def test_comparisons_of_the_wrong_kind_say_what_was_meant(condition: str, help: str) -> None:
    ((check, message, got, _, _),) = _condition(condition.replace("'", '"'))
    assert check == "type-error" and message.startswith("cannot compare ")
    assert got is not None and help in got


BROKEN_CONDITIONS = [
    "frustration",
    "frustration + affect > 1",
    "frustration * frustration > 0.1",
    "affect < calm",
    "exam_active > 1",
    "frustration > 2",
    "[calm] == affect",
    "trend(frustration) > 0",
    "trend(frustration, 0) > 0",
    "trend(affect, 3) > 0",
    "affect in frustration",
    "3 in tags",
    "not frustration",
    "frustration and exam_active",
    "H2 > 1",
]

BROKEN_FILES = [
    HEAD.replace("range: [0, 1]", "range: [0, 1, 2]"),
    HEAD.replace("range: [0, 1]", "range: [1, 0]"),
    HEAD.replace("range: [0, 1]", "range: [0, x]"),
    HEAD.replace("type: float", "type: floaty"),
    HEAD.replace("source: inferred}\n  exam", "source: guessed}\n  exam"),
    HEAD.replace("{type: float, range: [0, 1], source: inferred}", "{type: int, source: inferred}"),
    HEAD.replace("values: [calm, confused]", "values: []"),
    HEAD.replace("rung: H0", "rung: H9"),
    HEAD.replace("priority: 5", "priority: 11"),
    HEAD.replace("priority: 5", "priority: 0.5"),
    HEAD.replace("source: inferred}\n  exam", "source: inferred, default: 3}\n  exam"),
    HEAD.replace(
        "values: [calm, confused], source", "values: [calm, confused], default: calmm, source"
    ),
    HEAD + "selection: random\n",
    HEAD + "ceiling: {start: H4, steps: [{when: exam_active}]}\n",
    HEAD + "invariants:\n  - {id: i}\n",
]
RULES = "rules:\n  - {id: r, when: 'true', then: encourage}\n  - {id: s, when: 'true', then: encourage, weight: -1}\n  - {id: u, when: 'true'}\n"


def _all_diagnostics() -> list[tuple[str, str, str | None]]:
    out: list[tuple[str, str, str | None]] = []
    for condition in BROKEN_CONDITIONS:
        out.extend((c, m, h) for c, m, h, _, _ in _condition(condition))
    for text in BROKEN_FILES:
        body = text if "rules:" in text else text + RULES
        out.extend((d.check, d.message, d.help) for d in load_text(body, "t.yaml").diagnostics)
    out.extend((d.check, d.message, d.help) for d in load_text(HEAD + RULES, "t.yaml").diagnostics)
    return out


def test_every_type_error_has_a_help_line() -> None:
    found = _all_diagnostics()
    type_errors = [(m, h) for c, m, h in found if c == "type-error"]
    assert len(type_errors) >= 25
    missing = [m for m, h in type_errors if not h]
    assert not missing, missing


def test_no_pydantic_wording_or_zero_based_paths_reach_the_user() -> None:
    leaks = re.compile(
        r"Input should|after validation|Tuple should|Value error|Extra inputs|Field required"
        r"|\b(?:rules|steps|goals|exercises|invariants|switch)\.\d"
        r"|\ba int\b|\ba enum\b"
    )
    for _check, message, help in _all_diagnostics():
        assert not leaks.search(message), message
        assert not leaks.search(help or ""), help


def test_positions_count_from_one_and_name_rules_by_id() -> None:
    messages = [m for _, m, _ in _all_diagnostics()]
    assert "rule `s`, `weight`: must be more than 0, not -1" in messages
    assert "rule `u` is missing the required key `then`" in messages
    text = (
        HEAD
        + "rules:\n  - {id: r, when: 'true', then: encourage}\n  - {when: 'true', then: encourage}\n"
    )
    messages = [d.message for d in load_text(text, "t.yaml").diagnostics]
    assert "rule 2 is missing the required key `id`" in messages
    steps = (
        HEAD
        + RULES.split("  - {id: s")[0]
        + "ceiling:\n  steps:\n    - {when: exam_active, set: H0}\n    - {when: exam_active}\n"
    )
    messages = [d.message for d in load_text(steps, "t.yaml").diagnostics]
    assert any(m.startswith("ceiling step 2: ") for m in messages), messages
