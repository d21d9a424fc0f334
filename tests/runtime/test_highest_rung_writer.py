"""The `highest_rung` writer (contingent help): the highest rung of the tutor's replies on the
exercise, which the shipped help paths start above. Held to the trusted writers' standard: only
the runtime's own record of the reply moves it, it never falls within an exercise, and a new
exercise starts it again."""

from __future__ import annotations

from pathlib import Path

import pytest

from pedrag.compiler.driver import check_paths
from pedrag.kernel.sources import Writer
from pedrag.runtime.turn.state import MetricField, MetricSchema
from pedrag.runtime.turn.trusted_writer import action_event, trusted_updates

FIELD = MetricField(
    "highest_rung", "int", "trusted", low=0, high=7, default=0, writer=Writer("highest_rung")
)
SCHEMA = MetricSchema({"highest_rung": FIELD})


def _after_reply(current: int, rung: int | None, *events: str) -> dict[str, object]:
    updates, _ = trusted_updates(
        SCHEMA, {"highest_rung": current}, ("turn", *events), {}, rung=rung
    )
    return updates


def test_a_reply_above_the_highest_rung_raises_it() -> None:
    assert _after_reply(2, 3, action_event("leading_question")) == {"highest_rung": 3}


@pytest.mark.parametrize("rung", [0, 1, 2])
def test_a_reply_at_or_below_it_leaves_it_where_it_was(rung: int) -> None:
    assert _after_reply(2, rung) == {}


def test_events_without_a_reply_never_move_it() -> None:
    """The grading stage's events (before the reply) carry no rung."""
    for events in [("wrong_answer",), ("correct_answer", "answer_graded"), ("hostile_turn",)]:
        updates, _ = trusted_updates(SCHEMA, {"highest_rung": 4}, events, {})
        assert updates == {}


def test_a_new_exercise_starts_it_again_before_the_reply_counts() -> None:
    updates, _ = trusted_updates(SCHEMA, {"highest_rung": 5}, ("exercise_start",), {})
    assert updates == {"highest_rung": 0}
    updates, _ = trusted_updates(SCHEMA, {"highest_rung": 5}, ("exercise_start",), {}, rung=2)
    assert updates == {"highest_rung": 2}


THEORY = """\
pedrag: 1
theory: {id: probe, name: Highest rung probe}
metrics:
  frustration: {type: float, range: [0, 1], source: inferred}
  given: {type: TYPE, range: RANGE, source: trusted, writer: highest_rung}
actions:
  nudge: {rung: H3, priority: 5, description: Ask about the next step.}
  encourage: {rung: H0, priority: 5, description: Encourage.}
rules:
  - {id: stuck, when: "frustration >= 0.5 and given < 3", then: nudge}
  - {id: calm, when: "frustration < 0.5 or given >= 3", then: encourage}
ceiling: {start: H4}
"""


def _diagnostics(tmp_path: Path, type_: str, range_: str) -> list[tuple[str, str, int, int]]:
    path = tmp_path / "probe.yaml"
    path.write_text(THEORY.replace("TYPE", type_).replace("RANGE", range_))
    found = check_paths([path]).diagnostics
    return [
        (d.check, d.message, d.span.line, d.span.column)
        for d in found
        if d.severity.value == "error" and d.span is not None
    ]


def test_a_rung_metric_over_the_whole_ladder_checks_clean(tmp_path: Path) -> None:
    assert _diagnostics(tmp_path, "int", "[0, 7]") == []


def test_a_range_short_of_the_ladder_is_an_error_at_the_writer(tmp_path: Path) -> None:
    found = _diagnostics(tmp_path, "int", "[0, 5]")
    assert found == [
        (
            "type-error",
            "metric `given`: writer `highest_rung` writes a rung, 0 to 7, but the range is [0, 5]",
            5,
            found[0][3],
        )
    ]
    assert found[0][3] > 1  # the column of the writer, not of the line


def test_a_float_metric_cannot_take_the_writer(tmp_path: Path) -> None:
    found = _diagnostics(tmp_path, "float", "[0, 7]")
    assert [(check, line) for check, _, line, _ in found] == [("type-error", 5)]
    assert "writer `highest_rung` writes an int metric, not a float" in found[0][1]
