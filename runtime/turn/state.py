"""Session state: the typed metric store, its history, and the single writer.

Runtime, shared by every stage. Takes the theory's metric declarations (``MetricField``) and
typed transitions; gives an immutable :class:`SessionState` that serialises to a JSON dict for
the session store.

Why a single writer: seed 2, §4 — "only the single writer touches learner state". Every stage
*reads* the state and returns typed values; :class:`StateWriter` is the one place that turns
those values into a new state, enforcing each metric's type, range and trust source. A turn
works on a new state object and the tutor commits it only when the turn is complete, so a
failure halfway through a turn can never leave a half-updated state behind.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from pedrag.kernel.errors import PedragError
from pedrag.kernel.sources import SOURCES as KERNEL_SOURCES
from pedrag.kernel.sources import Writer

MetricValue = bool | int | float | str
Source = Literal["trusted", "classified", "inferred", "observed", "computed"]
SOURCES: tuple[Source, ...] = KERNEL_SOURCES  # type: ignore[assignment]

HISTORY_LIMIT = 32
"""Snapshots kept for the history functions (`trend`, `streak`, ... windows are short)."""

_LABEL = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_EXACT_INT = 2**53  # every int up to this size is exactly a float


EXAM_LOCK = "exam_lock"  # state.extra key: the session's exercise is an exam


class StateError(PedragError, ValueError):
    """A transition tried to write a value the metric schema forbids."""


@dataclass(frozen=True)
class MetricField:
    """One declared metric: its type, trust source, domain and default."""

    name: str
    type: Literal["int", "float", "bool", "enum"]
    source: Source
    low: float = 0.0
    high: float = 0.0
    values: tuple[str, ...] = ()
    default: MetricValue = 0
    writer: Writer | None = None  # trusted metrics: the runtime events that write it

    @classmethod
    def from_info(cls, info: Any) -> MetricField:
        """From a resolved theory's ``MetricInfo`` or a compiled policy's ``MetricSpec``."""
        return cls(
            name=info.name,
            type=info.type,
            source=info.source,
            low=float(info.low),
            high=float(info.high),
            values=tuple(info.values),
            default=info.default,
            writer=getattr(info, "writer", None),
        )

    def coerce(self, value: Any) -> MetricValue:
        """The value in this metric's domain: numbers clamped to the range, ints rounded.
        Raises :class:`StateError` for a wrong type or an unknown enum value."""
        # A number already in its domain (most values: a turn coerces each value it writes
        # twice, once where it is read and once where it is written) is what clamping and
        # rounding would give back; asked first, it costs a tenth of that work (issue 30).
        kind = type(value)
        if kind is float:
            if self.type == "float" and self.low <= value <= self.high and math.isfinite(value):
                return value
        elif kind is int and self.type == "int" and self.low <= value <= self.high:
            if -_EXACT_INT <= value <= _EXACT_INT:  # round(float(value)) gives it back
                return value
        if self.type == "bool":
            if isinstance(value, bool):
                return value
            raise StateError(f"metric {self.name!r} is bool, got {type(value).__name__}")
        if self.type == "enum":
            if isinstance(value, str) and value in self.values:
                return value
            raise StateError(f"metric {self.name!r}: {str(value)[:40]!r} is not one of its values")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise StateError(f"metric {self.name!r} is {self.type}, got {type(value).__name__}")
        if isinstance(value, float) and not math.isfinite(value):
            raise StateError(f"metric {self.name!r} got a non-finite value")
        clamped = min(max(float(value), self.low), self.high)
        return int(round(clamped)) if self.type == "int" else clamped


@dataclass(frozen=True)
class MetricSchema:
    """All metrics of one theory, by name."""

    fields: Mapping[str, MetricField]

    @classmethod
    def from_theory(cls, resolved: Any) -> MetricSchema:
        return cls({name: MetricField.from_info(info) for name, info in resolved.metrics.items()})

    def names(self, source: Source) -> tuple[str, ...]:
        return self._names_by_source.get(source, ())

    @functools.cached_property
    def trusted_writers(self) -> tuple[tuple[str, MetricField, Writer], ...]:
        """The trusted metrics that have a writer, in declaration order, each with it: what
        ``trusted_writer.trusted_updates`` walks twice a turn. Picking them out of every
        metric on each call was most of that walk (issue 30: 19 us a call over the socratic
        theory's 27 metrics, 4 us over its 9 writers)."""
        return tuple(
            (name, item, item.writer)
            for name, item in self.fields.items()
            if item.source == "trusted" and item.writer is not None
        )

    @functools.cached_property
    def _names_by_source(self) -> dict[str, tuple[str, ...]]:
        """Each source's metric names, in declaration order: asked several times a turn."""
        names: dict[str, list[str]] = {}
        for name, item in self.fields.items():
            names.setdefault(item.source, []).append(name)
        return {source: tuple(found) for source, found in names.items()}

    def defaults(self) -> dict[str, MetricValue]:
        return {name: item.default for name, item in self.fields.items()}


# -- transitions -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SetMetrics:
    """Write metrics of one trust source; a name of another source is an error."""

    source: Source
    values: Mapping[str, MetricValue]


@dataclass(frozen=True)
class CommitTurn:
    """Close a turn: bump the counter, append the current metrics to history, remember the
    action, and carry the adaptation plan (if any) to the next turn."""

    action: str
    rung: int
    plan: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class SwitchTheory:
    """Adopt another theory (seed 1's third adaptation level): metrics are re-seeded from the
    new schema, keeping values of metrics both theories declare."""

    theory_id: str
    schema: MetricSchema


@dataclass(frozen=True)
class RecordSpend:
    """Add the turn's model usage to the session totals."""

    calls: int
    tokens: int
    cost_usd: float


@dataclass(frozen=True)
class SetExercise:
    exercise_id: str | None
    goal_id: str | None


Transition = SetMetrics | CommitTurn | SwitchTheory | RecordSpend | SetExercise


# -- the state --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SessionState:
    """Everything a session carries between turns. Immutable: transitions return a new one."""

    theory_id: str
    metrics: Mapping[str, MetricValue]
    history: tuple[Mapping[str, MetricValue], ...] = ()
    turn: int = 0
    exercise_id: str | None = None
    goal_id: str | None = None
    last_action: str | None = None
    last_rung: int | None = None
    plan: Mapping[str, Any] | None = None
    calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    switches: tuple[str, ...] = ()
    solved: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    def but(self, **changes: Any) -> SessionState:
        """This state with ``changes``: what ``dataclasses.replace`` gives (a field it does not
        have is a TypeError), without rebuilding every field through ``__init__``: a turn makes
        about nine new states, and ``replace`` cost about 7 us each (issue 30). Valid because
        the class has no ``__post_init__``, no ``init=False`` field and no ``__slots__``."""
        unknown = changes.keys() - _STATE_FIELDS
        if unknown:
            raise TypeError(f"SessionState has no field {sorted(unknown)[0]!r}")
        new = object.__new__(SessionState)
        new.__dict__.update(self.__dict__, **changes)
        return new

    def snapshot_history(self) -> list[dict[str, MetricValue]]:
        """History plus the current metrics, oldest first (the policy's history argument)."""
        return [*map(dict, self.history), dict(self.metrics)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "theory_id": self.theory_id,
            "metrics": dict(self.metrics),
            "history": [dict(item) for item in self.history],
            "turn": self.turn,
            "exercise_id": self.exercise_id,
            "goal_id": self.goal_id,
            "last_action": self.last_action,
            "last_rung": self.last_rung,
            "plan": dict(self.plan) if self.plan else None,
            "calls": self.calls,
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "switches": list(self.switches),
            "solved": self.solved,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SessionState:
        return cls(
            theory_id=str(data["theory_id"]),
            metrics=dict(data["metrics"]),
            history=tuple(dict(item) for item in data.get("history", ())),
            turn=int(data.get("turn", 0)),
            exercise_id=data.get("exercise_id"),
            goal_id=data.get("goal_id"),
            last_action=data.get("last_action"),
            last_rung=data.get("last_rung"),
            plan=data.get("plan"),
            calls=int(data.get("calls", 0)),
            tokens=int(data.get("tokens", 0)),
            cost_usd=float(data.get("cost_usd", 0.0)),
            switches=tuple(data.get("switches", ())),
            solved=bool(data.get("solved", False)),
            extra=dict(data.get("extra", {})),
        )


_STATE_FIELDS = frozenset(item.name for item in fields(SessionState))


def new_state(
    schema: MetricSchema,
    theory_id: str,
    *,
    trusted: Mapping[str, MetricValue] | None = None,
    exercise_id: str | None = None,
    goal_id: str | None = None,
) -> SessionState:
    """A fresh session: every metric at its default, then the given trusted values."""
    state = SessionState(
        theory_id=theory_id,
        metrics=schema.defaults(),
        exercise_id=exercise_id,
        goal_id=goal_id,
    )
    if trusted:
        state = StateWriter(schema).apply(state, SetMetrics("trusted", trusted))
    return state


class StateWriter:
    """The single writer: applies typed transitions to a state under one metric schema."""

    def __init__(self, schema: MetricSchema) -> None:
        self.schema = schema

    def apply(self, state: SessionState, transition: Transition) -> SessionState:
        if isinstance(transition, SetMetrics):
            return self._set_metrics(state, transition)
        if isinstance(transition, CommitTurn):
            history = (*state.history, dict(state.metrics))[-HISTORY_LIMIT:]
            return state.but(
                history=history,
                turn=state.turn + 1,
                last_action=transition.action,
                last_rung=transition.rung,
                plan=dict(transition.plan) if transition.plan else None,
            )
        if isinstance(transition, SwitchTheory):
            if state.extra.get(EXAM_LOCK) is True:
                # The lockdown the compiler proved is the exam theory's own ceiling step; a
                # switch could land on a theory without it (seed 2, §3.2).
                raise StateError("an exam session keeps its theory: no switch during an exam")
            return self._switch(state, transition)
        if isinstance(transition, RecordSpend):
            return state.but(
                calls=state.calls + transition.calls,
                tokens=state.tokens + transition.tokens,
                cost_usd=state.cost_usd + transition.cost_usd,
            )
        if isinstance(transition, SetExercise):
            return state.but(
                exercise_id=transition.exercise_id, goal_id=transition.goal_id, solved=False
            )
        raise TypeError(f"not a state transition: {type(transition).__name__}")

    def apply_all(self, state: SessionState, transitions: Iterable[Transition]) -> SessionState:
        for transition in transitions:
            state = self.apply(state, transition)
        return state

    def mark_solved(self, state: SessionState) -> SessionState:
        return state.but(solved=True)

    def _set_metrics(self, state: SessionState, transition: SetMetrics) -> SessionState:
        if transition.source not in SOURCES:
            raise StateError(f"unknown metric source {transition.source!r}")
        updated = dict(state.metrics)
        for name, value in transition.values.items():
            item = self.schema.fields.get(name)
            if item is None:
                raise StateError(f"unknown metric {name!r}")
            if item.source != transition.source:
                # The trust boundary: e.g. the analyzer can never write a trusted metric.
                raise StateError(
                    f"metric {name!r} is {item.source}; a {transition.source} write cannot set it"
                )
            updated[name] = item.coerce(value)
        return state.but(metrics=updated)

    def _switch(self, state: SessionState, transition: SwitchTheory) -> SessionState:
        new_schema = transition.schema
        metrics: dict[str, MetricValue] = new_schema.defaults()
        for name, item in new_schema.fields.items():
            if name in state.metrics:
                try:
                    metrics[name] = item.coerce(state.metrics[name])
                except StateError:
                    pass  # same name, different domain: the new theory's default stands
        self.schema = new_schema
        return state.but(
            theory_id=transition.theory_id,
            metrics=metrics,
            history=(),
            plan=None,
            switches=(*state.switches, transition.theory_id),
        )


def is_label(value: object) -> bool:
    """An enum label or id (what classified outputs are made of), not free text."""
    return isinstance(value, str) and bool(_LABEL.match(value))
