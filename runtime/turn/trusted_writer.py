"""Trusted bookkeeping: the turn's runtime events -> writes to trusted metrics.

Runtime stage, between the pre-classifier and the policy core (grading, conduct) and after the
reply (the turn and the action taken). Each trusted metric's writer is declared in the theory
(``writer:``, or the kernel's default for its name; `pedrag.kernel.sources`), so the compiler
knows what can change a metric and `unwritten-metric` finds a metric nothing changes. No
metric name appears here: the writers say which metric listens to which event.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pedrag.kernel.sources import ACTION_EVENT_PREFIX

if TYPE_CHECKING:
    from pedrag.runtime.turn.state import MetricSchema

HOSTILE_TURNS_FOR_RESTRICTION = 3  # seed 2, §3.2: conduct restriction after repeated hostility
HOSTILE_TURNS = "hostile_turns"  # state.extra key: the conduct writer's count
# A restriction decays: it is for abuse, not a life sentence, and a learner who has calmed down
# gets their help back (an instructor can lift it sooner; `pedrag.runtime.turn.instructor`).
CALM_TURNS_TO_LIFT = 3
CALM_TURNS = "calm_turns"  # state.extra key: calm turns in a row since the last hostile one


def action_event(action: str) -> str:
    return ACTION_EVENT_PREFIX + action


def trusted_updates(
    schema: MetricSchema,
    metrics: Mapping[str, Any],
    events: Iterable[str],
    extra: Mapping[str, Any],
    mastery: float | None = None,
    rung: int | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The trusted metric values the events write, and the writers' own bookkeeping
    (``state.extra``). ``schema`` is the theory's metric schema (each trusted field with its
    ``writer``); ``mastery`` is the current goal's mastery when it changed
    (`pedrag.runtime.learning.loop`); ``rung`` the rung of the reply the learner saw, after it
    (`pedrag.runtime.turn.commit`). ``exercise_start`` resets counters, flags and the highest
    rung to their defaults before the other events."""
    happened = frozenset(events)
    updates: dict[str, Any] = {}
    new_extra = dict(extra)
    if "hostile_turn" in happened:
        new_extra[HOSTILE_TURNS] = int(new_extra.get(HOSTILE_TURNS, 0)) + 1
        new_extra[CALM_TURNS] = 0
    elif "calm_turn" in happened:
        new_extra[CALM_TURNS] = int(new_extra.get(CALM_TURNS, 0)) + 1
    lifted = False
    starts = "exercise_start" in happened
    for name, field, writer in schema.trusted_writers:
        kind = writer.kind
        current = metrics.get(name, field.default)
        if starts and kind in ("count", "set_on", "highest_rung"):
            current = updates[name] = field.default
        if kind == "count":
            hits = sum(map(happened.__contains__, writer.events))  # each listed event counts
            if hits:
                updates[name] = int(current) + hits
        elif kind == "set_on":
            if not happened.isdisjoint(writer.events):
                updates[name] = True
            elif not happened.isdisjoint(writer.clear_on):
                updates[name] = False
        elif kind == "advance":
            if any(value == current and event in happened for value, event in writer.advance):
                position = field.values.index(current)
                updates[name] = field.values[min(position + 1, len(field.values) - 1)]
        elif kind == "highest_rung":
            if rung is not None and rung > int(current):
                updates[name] = rung
        elif kind == "mastery":
            if mastery is not None:
                updates[name] = float(mastery)
        elif kind == "conduct":
            if current is True and int(new_extra.get(CALM_TURNS, 0)) >= CALM_TURNS_TO_LIFT:
                updates[name] = False  # decayed: the count behind it starts again
                lifted = True
            elif int(new_extra.get(HOSTILE_TURNS, 0)) >= HOSTILE_TURNS_FOR_RESTRICTION:
                if current is not True:
                    updates[name] = True
        # "instructor": written only through the instructor API and at session start.
    if lifted:
        new_extra[HOSTILE_TURNS] = 0
    return updates, new_extra
