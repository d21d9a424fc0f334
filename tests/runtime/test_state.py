"""The single writer: typed transitions, ranges, trust sources, history, theory switch."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pedrag.runtime.turn.state import (
    CommitTurn,
    MetricField,
    MetricSchema,
    SessionState,
    SetMetrics,
    StateError,
    StateWriter,
    SwitchTheory,
    new_state,
)
from tests.runtime.tutor_fixtures import shipped


def schema(theory: str = "socratic") -> MetricSchema:
    return MetricSchema.from_theory(shipped()[theory].resolved)


def test_defaults_and_ranges_are_enforced() -> None:
    writer = StateWriter(schema())
    state = new_state(writer.schema, "socratic")
    assert state.metrics["mastery"] == 0.3 and state.metrics["intent"] == "other"
    state = writer.apply(state, SetMetrics("inferred", {"frustration": 7.0}))
    assert state.metrics["frustration"] == 1.0
    with pytest.raises(StateError):
        writer.apply(state, SetMetrics("inferred", {"affect": "ecstatic"}))
    with pytest.raises(StateError):
        writer.apply(state, SetMetrics("classified", {"code_attempt": "yes"}))


def test_a_stage_cannot_write_another_sources_metric() -> None:
    writer = StateWriter(schema())
    state = new_state(writer.schema, "socratic")
    with pytest.raises(StateError, match="trusted"):
        writer.apply(state, SetMetrics("inferred", {"mastery": 1.0}))
    with pytest.raises(StateError):
        writer.apply(state, SetMetrics("classified", {"explain_mode": True}))


def test_transitions_return_new_states_and_history_grows_on_commit() -> None:
    writer = StateWriter(schema())
    first = new_state(writer.schema, "socratic")
    second = writer.apply(first, SetMetrics("inferred", {"frustration": 0.9}))
    assert first.metrics["frustration"] == 0.2 and second is not first
    third = writer.apply(second, CommitTurn("leading_question", 3))
    assert third.turn == 1 and len(third.history) == 1 and third.last_action == "leading_question"
    assert third.snapshot_history()[-1] == dict(third.metrics)


def test_switching_theory_keeps_shared_metrics() -> None:
    writer = StateWriter(schema())
    state = writer.apply(
        new_state(writer.schema, "socratic"), SetMetrics("trusted", {"mastery": 0.6})
    )
    target = next(t for t in shipped().ids if t != "socratic")
    switched = writer.apply(state, SwitchTheory(target, schema(target)))
    assert switched.theory_id == target and switched.switches == (target,)
    if "mastery" in switched.metrics:
        assert switched.metrics["mastery"] == 0.6


def test_a_state_with_changes_is_what_dataclasses_replace_gives() -> None:
    from dataclasses import fields, replace

    state = SessionState(theory_id="t", metrics={"a": 1}, extra={"k": [1]}, turn=3)
    changes = {"metrics": {"a": 2}, "turn": 4, "extra": {}, "solved": True}
    changed = state.but(**changes)
    expected = replace(state, **changes)  # type: ignore[arg-type]
    assert changed == expected and type(changed) is SessionState
    assert all(getattr(changed, f.name) is getattr(expected, f.name) for f in fields(state))
    assert state.turn == 3 and state.metrics == {"a": 1}  # the original is untouched
    with pytest.raises(TypeError, match="no field 'turns'"):
        state.but(turns=4)
    with pytest.raises(AttributeError):
        changed.turn = 5  # type: ignore[misc]  # still frozen


def _coerce_by_clamping(item: MetricField, value: object) -> object:
    """The oracle: ``MetricField.coerce`` as it was before its in-domain quick path (issue
    30), every number clamped and rounded."""
    if item.type == "bool":
        if isinstance(value, bool):
            return value
        raise StateError("bool")
    if item.type == "enum":
        if isinstance(value, str) and value in item.values:
            return value
        raise StateError("enum")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise StateError("type")
    if isinstance(value, float) and not math.isfinite(value):
        raise StateError("non-finite")
    clamped = min(max(float(value), item.low), item.high)
    return int(round(clamped)) if item.type == "int" else clamped


_NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0.0, -0.0, 0, 2**53, 2**53 + 1, -(2**53) - 1, True, False, "a", None]),
)
_BOUNDS = st.one_of(
    st.floats(allow_nan=False, min_value=-1e20, max_value=1e20),
    st.sampled_from([0.0, -0.0, 1.0, float(2**53), float("inf"), -float("inf")]),
)


@settings(max_examples=400, deadline=None)
@given(
    kind=st.sampled_from(["int", "float", "bool", "enum"]),
    low=_BOUNDS,
    high=_BOUNDS,
    value=_NUMBERS,
)
def test_coerce_gives_what_clamping_and_rounding_give(
    kind: str, low: float, high: float, value: object
) -> None:
    """The quick path for a number already in its domain changes no value, no type (``1`` is
    not ``1.0``, ``-0.0`` stays itself) and no refusal, whatever the bounds (infinite ones
    too)."""
    item = MetricField("m", kind, "inferred", low, high, ("a", "b"))  # type: ignore[arg-type]
    try:
        expected = _coerce_by_clamping(item, value)
    except (StateError, OverflowError) as refused:  # an infinite bound overflows round()
        with pytest.raises(type(refused)):
            item.coerce(value)
        return
    got = item.coerce(value)
    assert type(got) is type(expected)
    assert repr(got) == repr(expected)
