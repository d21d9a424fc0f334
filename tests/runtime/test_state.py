"""The single writer: typed transitions, ranges, trust sources, history, theory switch."""

from __future__ import annotations

import pytest

from pedrag.runtime.turn.state import (
    CommitTurn,
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
