"""The trusted writers walked from the schema's kept list (issue 30: picking them out of every
metric was most of the walk, twice a turn) write what the walk over every metric wrote: the
old walk is kept here as the oracle, on generated events, values and bookkeeping."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pedrag.kernel.sources import Writer
from pedrag.runtime.turn.state import MetricField, MetricSchema
from pedrag.runtime.turn.trusted_writer import (
    CALM_TURNS,
    CALM_TURNS_TO_LIFT,
    HOSTILE_TURNS,
    HOSTILE_TURNS_FOR_RESTRICTION,
    trusted_updates,
)

SCHEMA = MetricSchema(
    {
        "mood": MetricField("mood", "float", "inferred", 0.0, 1.0, default=0.5),
        "mastery": MetricField("mastery", "float", "trusted", 0.0, 1.0, default=0.0,
                               writer=Writer("mastery")),
        "attempts": MetricField("attempts", "int", "trusted", 0, 99, default=0,
                                writer=Writer("count", ("answer_graded",))),
        "help_given": MetricField("help_given", "int", "trusted", 0, 99, default=0,
                                  writer=Writer("count", ("action:hint", "action:explain",
                                                          "action:hint"))),
        "exam_active": MetricField("exam_active", "bool", "trusted", default=False,
                                   writer=Writer("instructor")),
        "restricted": MetricField("restricted", "bool", "trusted", default=False,
                                  writer=Writer("conduct")),
        "answered_right": MetricField("answered_right", "bool", "trusted", default=False,
                                      writer=Writer("set_on", ("correct_answer",),
                                                    ("wrong_answer",))),
        "phase": MetricField("phase", "enum", "trusted", values=("intro", "practice", "done"),
                             default="intro",
                             writer=Writer("advance", advance=(("intro", "turn"),
                                                               ("practice", "correct_answer")))),
        "unwritten": MetricField("unwritten", "int", "trusted", 0, 9, default=0),
        "intent": MetricField("intent", "enum", "classified", values=("attempt", "help"),
                              default="attempt"),
    }
)  # fmt: skip

EVENTS = (
    "turn", "exercise_start", "answer_graded", "correct_answer", "wrong_answer",
    "hostile_turn", "calm_turn", "action:hint", "action:explain", "action:ask",
)  # fmt: skip


def _every_metric_walk(
    fields: Mapping[str, Any],
    metrics: Mapping[str, Any],
    events: Iterable[str],
    extra: Mapping[str, Any],
    mastery: float | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``trusted_updates`` as it was: every metric visited, its writer looked up each time."""
    happened = frozenset(events)
    updates: dict[str, Any] = {}
    new_extra = dict(extra)
    if "hostile_turn" in happened:
        new_extra[HOSTILE_TURNS] = int(new_extra.get(HOSTILE_TURNS, 0)) + 1
        new_extra[CALM_TURNS] = 0
    elif "calm_turn" in happened:
        new_extra[CALM_TURNS] = int(new_extra.get(CALM_TURNS, 0)) + 1
    lifted = False
    for name, field in fields.items():
        writer = getattr(field, "writer", None)
        if field.source != "trusted" or writer is None:
            continue
        current = metrics.get(name, field.default)
        if "exercise_start" in happened and writer.kind in ("count", "set_on"):
            current = updates[name] = field.default
        if writer.kind == "count":
            hits = sum(1 for event in writer.events if event in happened)
            if hits:
                updates[name] = int(current) + hits
        elif writer.kind == "set_on":
            if any(event in happened for event in writer.events):
                updates[name] = True
            elif any(event in happened for event in writer.clear_on):
                updates[name] = False
        elif writer.kind == "advance":
            if any(value == current and event in happened for value, event in writer.advance):
                position = field.values.index(current)
                updates[name] = field.values[min(position + 1, len(field.values) - 1)]
        elif writer.kind == "mastery":
            if mastery is not None:
                updates[name] = float(mastery)
        elif writer.kind == "conduct":
            if current is True and int(new_extra.get(CALM_TURNS, 0)) >= CALM_TURNS_TO_LIFT:
                updates[name] = False
                lifted = True
            elif int(new_extra.get(HOSTILE_TURNS, 0)) >= HOSTILE_TURNS_FOR_RESTRICTION:
                if current is not True:
                    updates[name] = True
    if lifted:
        new_extra[HOSTILE_TURNS] = 0
    return updates, new_extra


_METRICS = st.fixed_dictionaries(
    {},
    optional={
        "mastery": st.floats(0, 1),
        "attempts": st.integers(0, 20),
        "help_given": st.integers(0, 20),
        "restricted": st.booleans(),
        "answered_right": st.booleans(),
        "phase": st.sampled_from(("intro", "practice", "done")),
        "exam_active": st.booleans(),
    },
)
_EXTRA = st.fixed_dictionaries(
    {},
    optional={HOSTILE_TURNS: st.integers(0, 5), CALM_TURNS: st.integers(0, 5), "other": st.just(1)},
)


@settings(max_examples=600, deadline=None)
@given(
    _METRICS,
    st.lists(st.sampled_from(EVENTS), max_size=6),
    _EXTRA,
    st.none() | st.floats(0, 1),
)
def test_the_kept_writers_write_what_the_walk_over_every_metric_wrote(
    metrics: dict[str, Any], events: list[str], extra: dict[str, Any], mastery: float | None
) -> None:
    assert trusted_updates(SCHEMA, metrics, events, extra, mastery) == _every_metric_walk(
        SCHEMA.fields, metrics, events, extra, mastery
    )


def test_the_kept_writers_are_the_trusted_metrics_with_a_writer_in_order() -> None:
    assert [name for name, _, _ in SCHEMA.trusted_writers] == [
        "mastery", "attempts", "help_given", "exam_active", "restricted", "answered_right", "phase",
    ]  # fmt: skip
    assert all(writer is SCHEMA.fields[name].writer for name, _, writer in SCHEMA.trusted_writers)


def test_an_event_listed_twice_counts_twice() -> None:
    updates, _ = trusted_updates(SCHEMA, {"help_given": 1}, ["action:hint"], {})
    assert updates == {"help_given": 3}
