"""A state's history written row by row once (`FrozenRow`, `written_rows`): the stores save
the text the plain document gives them — what reads back, what is refused and the error
naming it are the same — and a row, once written, cannot change under its text."""

from __future__ import annotations

import copy
import json
import math
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pedrag.runtime.store.documents import (
    FrozenRow,
    WrittenRows,
    _document_text,
    written_rows,
)
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.store.session_store import SessionStore, StoreError
from pedrag.runtime.store.sqlite_driver import sqlite_dbapi
from pedrag.runtime.turn.state import SessionState
from pedrag.runtime.turn.tutor import Tutor
from tests.runtime.tutor_fixtures import CURRICULUM, shipped


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    with SessionStore(str(tmp_path / "s.db")) if request.param == "sqlite" else MemoryStore() as s:
        yield s


def _outcome(document: dict[str, Any]) -> tuple[str, Any]:
    """What the store makes of a document: the value its text reads back to, or the error."""
    try:
        return "saved", json.loads(_document_text(document, "state").text)
    except StoreError as error:
        return "refused", str(error)


_SCALAR = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6)
    | st.sampled_from(["a\x00b", "\ud800", "é", "\x1b[31m"])
)
_VALUE = _SCALAR | st.lists(_SCALAR, max_size=2) | st.tuples(_SCALAR)
_ROW = st.dictionaries(st.text(max_size=4) | st.sampled_from(["k\x00"]), _VALUE, max_size=4)


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(_ROW, max_size=4), rest=st.dictionaries(st.text(max_size=3), _VALUE))
def test_written_rows_save_what_the_plain_rows_save_or_fail_the_same(
    rows: list[dict[str, Any]], rest: dict[str, Any]
) -> None:
    """Any rows (NaN, U+0000, lone surrogates, big ints, tuples and lists among the values)
    beside any rest: the same value reads back, or the same error names the same place."""
    rest.pop("history", None)
    plain = {**rest, "history": [dict(row) for row in rows]}
    frozen_rows = [FrozenRow(row) for row in rows]
    for row in frozen_rows:
        row.json_text()  # written one by one, as a turn's rows are (one new row a turn)
    frozen = {**rest, "history": written_rows(frozen_rows)}
    assert _outcome(frozen) == _outcome(plain)


def test_plain_scalar_rows_are_joined_as_written_and_keep_their_key_order() -> None:
    rows = [FrozenRow({"b": 1, "a": 0.5, "c": "x"}), FrozenRow({"d": None, "e": True})]
    value = written_rows(rows)
    assert type(value) is WrittenRows
    text = _document_text({"turn": 3, "history": value, "extra": {}}, "state").text
    assert text == orjson.dumps({"turn": 3, "history": rows, "extra": {}}).decode()


@pytest.mark.parametrize(
    "row",
    [{"x": [1]}, {"x": math.nan}, {"x": "a\x00"}, {"x": 2**64}, {"x": (1,)}, {"x": "\udc00"}],
)
def test_a_row_the_store_cannot_take_as_is_hands_over_plain_rows(row: dict[str, Any]) -> None:
    """Then the whole document is checked as before (refused, or read back as json reads it)."""
    value = written_rows([FrozenRow({"ok": 1}), FrozenRow(row)])
    assert value == [{"ok": 1}, row]


def test_rows_are_written_one_by_one_only_where_few_are_new() -> None:
    """A turn's state (one new row) is joined from the rows' texts; a state just loaded (every
    row new: a service turn's) goes as plain rows, checked with the document in one pass."""
    old_rows = [FrozenRow({"turn": index}) for index in range(5)]
    assert type(written_rows(old_rows)) is list  # five new rows: plain copies, no text made
    assert not any(hasattr(row, "_text") for row in old_rows)
    for row in old_rows:
        row.json_text()
    assert type(written_rows([*old_rows, FrozenRow({"turn": 5})])) is WrittenRows
    mixed = [*old_rows, *(FrozenRow({"turn": index}) for index in range(5, 8))]
    assert written_rows(mixed) == [{"turn": index} for index in range(8)]


def test_a_frozen_row_cannot_change_under_its_written_text() -> None:
    row = FrozenRow({"mastery": 0.5, "intent": "attempt"})
    text = row.json_text()
    for change in (
        lambda: row.__setitem__("mastery", 1.0),
        lambda: row.__delitem__("mastery"),
        lambda: row.update(mastery=1.0),
        lambda: row.pop("mastery"),
        lambda: row.popitem(),
        lambda: row.setdefault("new", 1),
        row.clear,
    ):
        with pytest.raises(TypeError, match="cannot be changed"):
            change()
    with pytest.raises(TypeError, match="cannot be changed"):
        row |= {"mastery": 1.0}
    assert row == {"mastery": 0.5, "intent": "attempt"} and row.json_text() == text
    for again in (copy.copy(row), copy.deepcopy(row), pickle.loads(pickle.dumps(row))):
        assert type(again) is FrozenRow and again == row and again.json_text() == text


def test_written_rows_cannot_be_forged_or_changed() -> None:
    with pytest.raises(TypeError, match="only by written_rows"):

        class Forged(WrittenRows):  # type: ignore[misc]
            pass

    value = written_rows([FrozenRow({"a": 1})])
    assert type(value) is WrittenRows
    with pytest.raises(AttributeError):
        value.text = b"[]"  # type: ignore[misc]


def test_a_state_document_saves_what_its_plain_dict_saves(store: Any) -> None:
    """Both stores: the state a turn hands over (its history written once per row) is saved
    as the text of the state's plain dict, and reads back to a state equal to it."""
    tutor = Tutor(shipped(), None, CURRICULUM, store)
    session = tutor.start(exercise="mult_7x8", seed=3)
    for message in ("is it 54?", "I don't know", "56", "why?"):
        tutor.turn(session, message)
    state = session.state
    assert len(state.history) == 4 and all(type(row) is FrozenRow for row in state.history)
    assert type(state.to_document()["history"]) is WrittenRows
    assert store.read_session(session.id).state == state.to_dict()
    assert (
        _document_text(state.to_document(), "state").text == orjson.dumps(state.to_dict()).decode()
    )
    assert SessionState.from_dict(store.read_session(session.id).state) == state


def test_a_state_saved_by_the_old_writer_resumes_and_saves_again(tmp_path: Path) -> None:
    """A row the store wrote before (``json.dumps``'s text: spaces after separators, ``\\u``
    escapes) reads back, and the next turn's state, history rows included, saves and reads
    back equal."""
    path = tmp_path / "s.db"
    with SessionStore(str(path)) as store:
        tutor = Tutor(shipped(), None, CURRICULUM, store)
        session = tutor.start(exercise="mult_7x8", seed=3)
        tutor.turn(session, "is it 54?")
        tutor.turn(session, "I don't know")
        session_id = session.id
    # The store's SQLite library: two copies of SQLite must not open one file in a process.
    with sqlite_dbapi().connect(path) as raw:
        (text,) = raw.execute(
            "SELECT state FROM pedrag_sessions WHERE id = ?", (session_id,)
        ).fetchone()
        old = json.dumps(json.loads(text), ensure_ascii=True)
        assert old != text  # the old writer's text, not the new one's
        raw.execute("UPDATE pedrag_sessions SET state = ? WHERE id = ?", (old, session_id))
    with SessionStore(str(path)) as store:
        tutor = Tutor(shipped(), None, CURRICULUM, store)
        resumed = tutor.resume(session_id)
        assert resumed.state.to_dict() == json.loads(old)
        tutor.turn(resumed, "56")
        saved = store.read_session(session_id).state
        assert saved == resumed.state.to_dict() and len(saved["history"]) == 3
        assert saved["history"][:2] == json.loads(old)["history"]
