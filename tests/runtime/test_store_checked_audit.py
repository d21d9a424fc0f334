"""A turn's audit record checked and written once (`CheckedAudit`): the stores take it without
checking or copying it again, and keep every guarantee they give for a plain record — what is
refused is still refused, what is cleaned is cleaned the same, and nothing a caller changes
after saving (or after loading) reaches what was saved."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pedrag.runtime.store.documents import CheckedAudit, plain_audit
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.store.plain import plain
from pedrag.runtime.store.session_store import SessionStore, StoreError
from pedrag.runtime.turn.tutor import Tutor
from tests.runtime.tutor_fixtures import CURRICULUM, shipped


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    with SessionStore(str(tmp_path / "s.db")) if request.param == "sqlite" else MemoryStore() as s:
        yield s


RECORD = {
    "turn": 1,
    "reason": "a\x00b \x1b[31m http://user:secret@host/x",
    "nested": {"list": [1, 2.5, None, True, "é"], "deep": [{"k": "v"}]},
}


def test_a_checked_record_is_saved_exactly_as_the_record_itself_would_be(store: Any) -> None:
    store.create_session("plain", {}, {"turn": 0})
    store.create_session("checked", {}, {"turn": 0})
    store.save_turn("plain", 1, {"turn": 1}, dict(RECORD))
    store.save_turn("checked", 1, {"turn": 1}, CheckedAudit(dict(RECORD)))
    saved = store.audit_records("checked")
    assert saved == store.audit_records("plain")
    assert saved[0]["reason"] != RECORD["reason"]  # cleaned, as a plain record is
    assert "secret" not in saved[0]["reason"]


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        ({"cost": float("nan")}, r"audit\['cost'\] is nan"),
        ({"ids": ("a", "b")}, r"audit\['ids'\] is a tuple"),
        ({"by": {1: "a"}}, r"audit\['by'\] has the key 1"),
        ({"seen": {"a"}}, r"audit\['seen'\] is a set"),
    ],
)
def test_a_record_the_store_refuses_cannot_be_made_a_checked_one(
    record: dict[str, Any], problem: str
) -> None:
    with pytest.raises(StoreError, match=problem):
        CheckedAudit(record)


def test_a_checked_record_cannot_be_changed() -> None:
    checked = CheckedAudit({"turn": 1})
    with pytest.raises(AttributeError):
        checked.text = '{"turn": 2}'  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del checked.text
    assert checked.text == '{"turn":1}'


def test_changing_a_record_after_checking_it_does_not_reach_the_store(store: Any) -> None:
    record: dict[str, Any] = {"turn": 1, "events": ["a"]}
    checked = CheckedAudit(record)
    record["events"].append("forged")
    record["turn"] = 99
    store.create_session("s1", {}, {"turn": 0})
    store.save_turn("s1", 1, {"turn": 1}, checked)
    assert store.audit_records("s1") == [{"turn": 1, "events": ["a"]}]


def test_what_a_caller_saves_or_loads_cannot_corrupt_what_the_store_holds(store: Any) -> None:
    state: dict[str, Any] = {"turn": 1, "history": [["hi", "hello"]]}
    store.create_session("s1", {}, {"turn": 0})
    store.save_turn("s1", 1, state, {"turn": 1, "events": ["a"]})
    state["history"][0][0] = "changed after saving"
    loaded = store.read_session("s1")
    loaded.state["history"].append("changed after loading")
    store.audit_records("s1")[0]["events"].append("changed after loading")
    assert store.read_session("s1").state == {"turn": 1, "history": [["hi", "hello"]]}
    assert store.audit_records("s1") == [{"turn": 1, "events": ["a"]}]


def test_a_turn_hands_the_store_a_checked_record_equal_to_its_result() -> None:
    """The commit checks the record once and the store takes it as it is; the record the
    turn's result shows is the one saved (it held nothing to clean)."""
    given: list[Any] = []

    class Recording(MemoryStore):
        def save_turn(self, *args: Any, **kwargs: Any) -> None:
            given.append(args[3])
            super().save_turn(*args, **kwargs)

    store = Recording()
    tutor = Tutor(shipped(), None, CURRICULUM, store)
    session = tutor.start(exercise="mult_7x8", seed=3)
    result = tutor.turn(session, "is it 54?")
    assert [type(item) for item in given] == [CheckedAudit]
    assert store.audit_records(session.id) == [result.audit]


def test_no_subclass_can_forge_a_checked_record() -> None:
    """A subclass could set any text without the check; the store would take it as checked."""
    with pytest.raises(TypeError, match="only by the store's check"):

        class Forged(CheckedAudit):  # type: ignore[misc]
            pass


class _Part:
    def to_dict(self) -> dict[str, Any]:
        return {"ids": ("a", "b"), "score": 0.5}


@pytest.mark.parametrize(
    "record",
    [
        {"turn": 1, "part": _Part(), "seen": {"b", "a"}, "by": {2: "x"}},
        {"turn": 1, "reason": "a\x00b http://u:secret@h/ \x1b[2J \x85"},
        {"turn": 1, "big": 2**70, "list": [(1, 2)]},
        {"turn": 1, "deep": [[[[[[[[[[[[[[[[[[[[["x"]]]]]]]]]]]]]]]]]]]]]},
    ],
)
def test_the_one_walk_checks_and_writes_as_the_full_check_does(record: dict[str, Any]) -> None:
    """`plain_audit` trusts the value only its walk built instead of reading its text back:
    the text it gives is the full check's (`CheckedAudit`) of the same plain record, cleaned
    where that cleans."""
    value, checked = plain_audit(record)
    assert value == plain(record)
    assert checked.text == CheckedAudit(plain(record)).text


@pytest.mark.parametrize(
    ("record", "error"),
    [({"cost": float("nan")}, ValueError), ({"when": object()}, TypeError)],
)
def test_the_one_walk_refuses_what_plain_refuses(record: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        plain_audit(record)
